"""`python -m engines check` and the checks behind it, on the real trl engine and the shipped demo (no training)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engines.core.modules import Modules
from engines import AgentTrainer, CheckError
from engines.cli import main
from engines.core.checks import check_all
from engines.core.prepare import prepare_run, trainer_from_run_dir

ROOT = Path(__file__).resolve().parent.parent
MODULES = ["agent", "dataset", "reward", "config", "engine"]


def table_rows(out: str) -> dict[str, str]:
    """module -> its table line (status and message)."""
    rows = {}
    for line in out.splitlines():
        parts = line.split(None, 1)
        if parts and parts[0] in MODULES:
            rows[parts[0]] = parts[1]
    return rows


def test_cli_check_on_the_demo_prints_one_table_and_exits_zero(demo, tmp_path):
    env = dict(os.environ)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "engines",
            "check",
            "--agent",
            demo["agent"],
            "--train",
            demo["train"],
            "--test",
            demo["test"],
            "--reward",
            demo["reward"],
            "--engine",
            "trl",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["module", "status", "message"]
    rows = table_rows(proc.stdout)
    assert list(rows) == MODULES
    assert all(row.startswith("OK") for row in rows.values()), proc.stdout
    assert "'letters-agent' on tiny-letters" in rows["agent"]
    assert "train 24 rows, test 16 rows; prompt='prompt' (text), answer='answer'" in rows["dataset"]
    assert "letter_reward×1; dry run on 3 row(s): reference → 1.00" in rows["reward"]
    assert "max_completion_length=2" in rows["config"]  # from the agent's max_tokens
    assert not list(tmp_path.iterdir())  # a check leaves no run directory behind


def test_agent_trainer_checks_the_demo_with_the_trl_engine(demo, tmp_path):
    trainer = AgentTrainer(
        agent=demo["agent"],
        train_dataset=demo["train"],
        test_dataset=demo["test"],
        reward_func=demo["reward"],
        config={"max_steps": 3, "num_generations": 4},
        run_path=str(tmp_path / "runs"),
        train_engine_name="trl",
    )
    p = trainer.train_processor
    assert p.initialized and p.engine_name == "trl"
    cfg = trainer.config  # the engine's effective config
    assert (cfg["max_steps"], cfg["num_generations"], cfg["max_completion_length"], cfg["mode"]) == (3, 4, 2, "grpo")
    assert cfg["learning_rate"] == p.get_default_config()["learning_rate"]
    results = {r.module: r for r in trainer.check_results}
    assert list(results) == ["agent", "dataset", "reward", "config"]
    assert "Reply with one capital letter." in results["dataset"].details["rendered_prompt"]
    assert results["reward"].details["dry_run"][0]["reference"]["total"] == 1.0
    assert results["config"].warnings == [
        "fewer than 8 generations per prompt: groups often have zero reward spread (no gradient)"
    ]


def test_cli_check_reports_every_module_and_exits_nonzero(tmp_path, demo, capsys):
    agent = tmp_path / "agent.yaml"
    agent.write_text("name: broken\nmodel: [oops\n")
    data = tmp_path / "train.csv"
    data.write_text("text,label\nhello,1\n")
    rewards = tmp_path / "r.py"
    rewards.write_text("def boom(completion, answer, **kwargs):\n    raise RuntimeError('reward exploded')\n")
    config = tmp_path / "cfg.yaml"
    config.write_text("max_step: 10\n")
    rc = main(
        [
            "check",
            "--agent",
            str(agent),
            "--train",
            str(data),
            "--reward",
            f"{rewards}:boom",
            "--config",
            str(config),
            "--engine",
            "trl",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 1
    rows = table_rows(out)
    assert list(rows) == MODULES
    assert rows["agent"].startswith("ERROR") and "agent file 'agent.yaml' is not valid YAML" in rows["agent"]
    assert "line 3" in rows["agent"] and "fix the YAML at the line named" in rows["agent"]
    assert rows["dataset"].startswith("ERROR") and "no prompt column found (columns: text, label)" in rows["dataset"]
    # the dataset did not load, so the reward is loaded but not dry-run yet
    assert rows["reward"].startswith("WARN") and "boom" in rows["reward"]
    assert rows["config"].startswith("ERROR") and 'did you mean "max_steps"' in rows["config"]
    assert rows["engine"].startswith("OK")


def test_a_reward_that_raises_is_an_error_row_not_a_crash(demo, tmp_path, capsys):
    rewards = tmp_path / "r.py"
    rewards.write_text("def boom(completion, answer, **kwargs):\n    raise RuntimeError('reward exploded')\n")
    rc = main(
        [
            "check",
            "--agent",
            demo["agent"],
            "--train",
            demo["train"],
            "--reward",
            f"{rewards}:boom",
            "--reward",
            "exact_match@0.5",
            "--engine",
            "trl",
            "--json",
        ]
    )
    results = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert [r["module"] for r in results] == MODULES
    reward = results[2]
    assert reward["status"] == "error"
    assert (
        "reward function 'boom' raised RuntimeError: reward exploded (dry run on line 1 of letters_train.jsonl"
        in reward["message"]
    )
    assert "fix the function so it handles this input" in reward["message"]


def test_column_mapping_from_the_cli(tmp_path, demo, capsys):
    data = tmp_path / "train.tsv"
    # four rows: one optimizer step of the demo config takes four prompts
    data.write_text("instruction\tgold\n" + "".join(f"Say the letter {c}:\t{c}\n" for c in "ABCD"))
    rc = main(
        [
            "check",
            "--agent",
            demo["agent"],
            "--train",
            str(data),
            "--columns",
            "prompt=instruction,answer=gold",
            "--reward",
            "exact_match",
            "--engine",
            "trl",
            "--json",
        ]
    )
    results = json.loads(capsys.readouterr().out)
    assert rc == 0, results
    assert results[1]["details"]["columns"] == {"prompt": "instruction", "answer": "gold"}


def test_unknown_engine_from_the_cli(demo, capsys):
    rc = main(["check", "--agent", demo["agent"], "--train", demo["train"], "--engine", "tlr"])
    rows = table_rows(capsys.readouterr().out)
    assert rc == 1
    assert rows["engine"].startswith("ERROR") and "unknown training engine 'tlr'" in rows["engine"]
    assert 'did you mean "trl"' in rows["engine"] and "registered engines:" in rows["engine"]
    assert all(rows[m] == "ERROR   not checked: unknown engine" for m in MODULES[:4])


def test_check_all_reports_an_empty_dataset_file(tmp_path, demo):
    (tmp_path / "empty.jsonl").write_text("")
    results = check_all(
        Modules(demo["agent"], str(tmp_path / "empty.jsonl"), None, demo["reward"], None, train_engine_name="trl")
    )
    dataset = results[1]
    assert dataset.status == "error"
    assert dataset.message == "train file 'empty.jsonl' is empty — add rows with a prompt column"


def test_prepare_run_writes_a_spec_a_run_process_can_rebuild(tmp_path, demo):
    runs = tmp_path / "runs"
    run = prepare_run(
        Modules(
            demo["agent"],
            demo["train"],
            demo["test"],
            [{"ref": demo["reward"], "weight": 1.0}],
            {"max_steps": 2},
            train_engine_name="trl",
        ),
        runs_dir=str(runs),
    )
    spec = yaml.safe_load(run.file("run.yaml").read_text())
    assert spec["engine"] == "trl" and spec["config"]["max_steps"] == 2
    assert spec["data"]["train"] == demo["train"]
    assert run.read_status()["state"] == "queued"
    again = trainer_from_run_dir(run.path)
    assert again.train_processor.initialized and again.config == spec["config"]

    with pytest.raises(CheckError, match="unknown config key 'max_stepz'"):
        prepare_run(
            Modules(demo["agent"], demo["train"], None, demo["reward"], {"max_stepz": 2}, train_engine_name="trl"),
            runs_dir=str(runs),
        )
    assert [p.name for p in runs.iterdir()] == [run.path.name]  # the failed run's folder is removed


def test_checks_are_data(tmp_path, demo):
    from engines.core.registry import get_processor_class
    from engines.results.check_result import CheckResult, format_table

    p = get_processor_class("trl")(str(tmp_path / "runs"))
    p.check_agent(demo["agent"])
    (tmp_path / "none.csv").write_text("")
    with pytest.raises(CheckError) as err:
        p.check_dataset(str(tmp_path / "none.csv"))
    assert [(r.module, r.status) for r in p.check_results] == [("agent", "ok"), ("dataset", "error")]
    assert p.check_results[-1] == err.value.result
    assert err.value.module == "dataset" and err.value.hint == "add rows with a prompt column"

    warn = CheckResult("reward", "warning", "exact_match×1", details={"x": 1}, warnings=["w1", "w2"])
    assert CheckResult.from_dict(json.loads(json.dumps(warn.to_dict()))) == warn
    assert warn.ok and not err.value.result.ok
    table = format_table(p.check_results + [warn]).splitlines()
    assert table[0].split() == ["module", "status", "message"]
    assert table[2].split()[:2] == ["agent", "OK"]
    assert table[3].split()[:2] == ["dataset", "ERROR"]
    assert table[4].split()[:2] == ["reward", "WARN"]
    assert table[5].strip() == "! w1" and table[6].strip() == "! w2"


def test_check_all_never_raises_even_when_the_engine_cannot_start(clean_registry, demo):
    from engines import TrainerProcessor

    class Broken(TrainerProcessor):
        def __init__(self, run_path):
            raise RuntimeError("GPU driver missing")

        def train(self): ...
        def check_agent(self, agent): ...
        def check_dataset(self, dataset=None, test_dataset=None): ...
        def check_reward(self, reward_func=None): ...
        def check_config(self, config=None): ...

    AgentTrainer.register_processor("broken", Broken)
    results = check_all(Modules(demo["agent"], demo["train"], train_engine_name="broken"))
    assert [(r.module, r.status) for r in results] == [(m, "error") for m in MODULES]
    assert results[-1].message == "engine 'broken' failed to start: RuntimeError: GPU driver missing"
