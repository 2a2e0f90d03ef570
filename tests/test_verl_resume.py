"""verl resume (issue 45), as far as a machine without a GPU shows it: a resumed verl run's config is verl's own
``ppo_trainer`` composed through Hydra with ``trainer.resume_mode: resume_path`` and ``trainer.resume_from_path`` at
its ``global_step_<N>`` folder, and passes verl's ``validate_config``; ``--max-steps`` raises verl's end (and its
epochs when they would end its loop first); what verl could not load is refused with what to do; and the studio's
whole run path (prepare_resume → ``aworld-train resume`` → the run process → the verl job → the watcher) continues a
killed run in its own directory, with a stand-in for verl's trainer that resumes as verl's ``_load_checkpoint`` does
(the step from the folder's name, validation at that step) — the GPU work itself is docs/VERL.md's recipe."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from engines import AgentTrainer
from engines.core.prepare import trainer_from_run_dir
from engines.core.resume import prepare_resume
from engines.results.check_result import CheckError
from engines.runs.lifecycle import effective_status, spawn_run
from engines.runs.rundir import RunDir
from testing.verl_fakes import write_fake_main_ppo
from testing.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
LETTERS_AGENT = str(ROOT / "assets/agents/letters_agent.yaml")
MODEL = ROOT / "assets/models/tiny-letters"
LETTER_REWARD = f"{ROOT}/assets/rewards/letter_reward.py:letter_reward"


@pytest.fixture()
def data_file(tmp_path):
    rows = [{"prompt": f"Say the letter {c}:", "answer": c} for c in "ABCDEFGH"]
    pd.DataFrame(rows).to_json(tmp_path / "letters.jsonl", orient="records", lines=True)
    return str(tmp_path / "letters.jsonl")


def prepared(tmp_path, data_file, config) -> RunDir:
    p = AgentTrainer(
        LETTERS_AGENT, data_file, None, LETTER_REWARD, config, run_path=str(tmp_path / "runs"), train_engine_name="verl"
    ).train_processor
    p.write_run_spec()
    p.run.write_status(state="queued", engine="verl")
    return p.run


def verl_checkpoint(run: RunDir, step: int, world_size: int = 1, model: Path = MODEL, data: bool = True) -> Path:
    """A global_step folder laid out as verl's _save_checkpoint writes it (data.pt last)."""
    folder = run.checkpoints_dir / f"global_step_{step}"
    (folder / "actor" / "huggingface").mkdir(parents=True)
    for rank in range(world_size):
        (folder / "actor" / f"model_world_size_{world_size}_rank_{rank}.pt").write_bytes(b"shard")
    shutil.copy(model / "config.json", folder / "actor" / "huggingface" / "config.json")
    if data:
        (folder / "data.pt").write_bytes(b"dataloader state")
    return folder


def verls_checks(cfg) -> None:
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Disabled critic as algorithm.adv_estimator != gae"
        validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))


def test_a_resumed_verl_run_trains_from_its_global_step_folder_with_verls_own_resume_keys(tmp_path, data_file):
    """A failed verl run with checkpoints at steps 2 and 4 resumes from the latest: run.yaml's config is unchanged,
    the run's process composes verl's ppo_trainer with resume_path at global_step_4 and verl's validate_config
    passes; --max-steps raises trainer.total_training_steps, and trainer.total_epochs where 2 epochs of 2 steps would
    end verl's loop at step 4."""
    run = prepared(tmp_path, data_file, {"batch_size": 4, "num_generations": 2, "epochs": 2, "save_freq": 2})
    config_before = run.read_spec()["config"]
    for step in (2, 4):
        verl_checkpoint(run, step)
    run.write_status(state="failed", cause="killed", total_steps=4, step=4)
    with pytest.raises(CheckError, match=r"global_step_4 is at step 4, the run's max_steps \(4\): there is nothing"):
        prepare_resume(run.path)
    resumed = prepare_resume(run.path, checkpoint="global_step_2")
    assert resumed == {"run_id": run.run_id, "checkpoint": "global_step_2", "step": 2, "attempt": 2, "max_steps": 4}
    p = trainer_from_run_dir(run.path).train_processor
    cfg = OmegaConf.load(p.config_path)
    verls_checks(cfg)
    assert cfg.trainer.resume_mode == "resume_path"
    assert cfg.trainer.resume_from_path == str(run.checkpoints_dir / "global_step_2")
    assert cfg.trainer.default_local_dir == str(run.checkpoints_dir) and cfg.trainer.total_epochs == 2
    assert p.resumed_at == 2 and p.total_steps == 4 and run.read_spec()["config"] == config_before
    result = next(r for r in p.check_results if r.module == "config")
    assert "resumes from global_step_2 (step 2)" in result.message

    run.write_status(state="finished", step=4)
    assert prepare_resume(run.path, max_steps=7)["step"] == 4  # the latest, trained further
    p = trainer_from_run_dir(run.path).train_processor
    cfg = OmegaConf.load(p.config_path)
    verls_checks(cfg)
    assert cfg.trainer.resume_from_path == str(run.checkpoints_dir / "global_step_4")
    assert cfg.trainer.total_training_steps == 7 and cfg.trainer.total_epochs == 4  # 8 rows // 4 = 2 steps an epoch
    assert p.total_steps == 7 and run.read_spec()["config"] == config_before
    assert run.read_spec()["resume"] == {"checkpoint": "global_step_4", "attempt": 3, "max_steps": 7}


def test_what_a_verl_run_cannot_resume_from_is_refused_with_what_to_do(tmp_path, data_file):
    """No checkpoint (verl saves none unless save_freq says), a cut-short one, one of another model, one saved by
    another number of GPUs, one deleted after the resume was asked: each refused by name, nothing trained."""
    run = prepared(tmp_path, data_file, {"batch_size": 4, "num_generations": 2, "total_steps": 6})
    run.write_status(state="failed", total_steps=6)
    with pytest.raises(CheckError, match=r"no complete checkpoint .* save_freq \(trainer.save_freq; verl saves none"):
        prepare_resume(run.path)
    verl_checkpoint(run, 3, data=False)
    with pytest.raises(CheckError, match=r"no complete checkpoint"):
        prepare_resume(run.path)
    verl_checkpoint(run, 2)
    with pytest.raises(CheckError, match=r"global_step_3 of run .* is incomplete \(no data.pt: its save was cut"):
        prepare_resume(run.path, checkpoint="global_step_3")
    with pytest.raises(CheckError, match=r"--max-steps 2 is not past global_step_2's step 2"):
        prepare_resume(run.path, max_steps=2)

    spec = run.read_spec()
    run.write_spec({**spec, "agent": {**spec["agent"], "model": str(ROOT / "assets/models/tiny-calc")}})
    with pytest.raises(CheckError, match=r"global_step_2 was trained from another model .*num_hidden_layers 2 → 3"):
        prepare_resume(run.path)
    run.write_spec(spec)
    assert run.read_status()["state"] == "failed" and "resume" not in run.read_spec()  # nothing changed

    prepare_resume(run.path)
    shutil.rmtree(run.checkpoints_dir / "global_step_2")  # deleted between the resume and its run
    with pytest.raises(CheckError, match=r"global_step_2, the checkpoint run .* resumes from, is gone \(deleted"):
        trainer_from_run_dir(run.path)
    with pytest.raises(CheckError, match=r"trainer.resume_from_path: the checkpoint global_step_2 is gone") as err:
        AgentTrainer(  # verl's own key at a folder that is not there: the same refusal from verl's side
            LETTERS_AGENT,
            run.read_spec()["data"]["train"],
            None,
            LETTER_REWARD,
            {**run.read_spec()["config"], "resume_from_checkpoint": str(run.checkpoints_dir / "global_step_2")},
            run_path=str(tmp_path / "other"),
            train_engine_name="verl",
        )
    assert err.value.result.details["keys"] == ["trainer.resume_from_path"]

    verl_checkpoint(run, 2, world_size=8)
    with pytest.raises(CheckError, match=r"saved by 8 GPU process\(es\) .* but this run has 1") as err:
        trainer_from_run_dir(run.path)
    assert err.value.result.details["keys"] == ["trainer.n_gpus_per_node", "trainer.nnodes"]


def fake_verl_python(folder: Path) -> str:
    fake = write_fake_main_ppo(folder)
    exe = folder / "verl-python"
    exe.write_text(f'#!/bin/sh\n[ "$1" = "-m" ] && shift 2\nexec {sys.executable} {fake} "$@"\n')
    exe.chmod(0o755)
    return str(exe)


def test_a_killed_verl_run_resumes_in_its_own_directory_and_trains_further(tmp_path, data_file):
    """The real run path with a stand-in for verl's trainer (verl's logger and checkpoint layout, its resume rule):
    killed after step 5 (checkpoints at 2 and 4), `aworld-train resume` continues from global_step_4 in the same run:
    steps 0-6 once each in metrics.jsonl, the dead attempt's step 5 and verl's own files set aside; then
    AgentTrainer.resume(max_steps=8) trains it further."""
    config = {
        "batch_size": 4,
        "num_generations": 2,
        "total_steps": 6,
        "save_freq": 2,
        "verl_python": fake_verl_python(tmp_path),
        "env_vars": {"FAKE_VERL_PAUSE": "0.1", "FAKE_VERL_DIE_AT": "5"},
    }
    run = prepared(tmp_path, data_file, config)
    spawn_run(run.path)
    wait_for(lambda: effective_status(run).get("state") in ("finished", "failed"), timeout=180)
    assert run.read_status()["state"] == "failed", run.log_path.read_text()[-3000:]
    assert [r["step"] for r in run.read_jsonl("metrics.jsonl")] == [0, 1, 2, 3, 4, 5]

    done = subprocess.run(
        [sys.executable, "-m", "engines", "resume", str(run.path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    status = run.read_status()
    assert status["state"] == "finished" and status["step"] == 6 and status["attempt"] == 2
    assert status["resumed_from"] == "global_step_4"
    rows = run.read_jsonl("metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4, 5, 6]  # the resumed attempt's validation at 4: train.log's
    assert [r["reward"] for r in rows if "reward" in r] == pytest.approx([0.1 * s for s in range(1, 7)])
    assert [r["step"] for r in run.read_jsonl(Path("attempts/1/metrics.jsonl"))] == [5]
    aside = run.path / "attempts/1/verl"
    assert [json.loads(line)["step"] for line in (aside / "verl_metrics.jsonl").read_text().splitlines()] == [
        0,
        1,
        2,
        3,
        4,
        5,
    ]
    assert sorted(p.name for p in (aside / "rollouts").iterdir()) == ["5.jsonl"]
    assert sorted({s["step"] for s in run.read_jsonl("samples.jsonl")}) == [1, 2, 3, 4, 5, 6]
    assert len(run.read_jsonl("samples.jsonl")) == 6 * 3  # one group of 3 a step: none twice
    assert f"Resuming from {run.checkpoints_dir / 'global_step_4'}" in run.log_path.read_text()
    checkpoints = [e["step"] for e in run.read_jsonl("events.jsonl") if e["event"] == "checkpoint"]
    assert checkpoints == [2, 4, 6]  # each once, over both attempts

    assert AgentTrainer.resume(run.path, max_steps=8) == "finished"
    status = run.read_status()
    assert status["step"] == 8 and status["attempt"] == 3 and status["total_steps"] == 8
    assert [r["step"] for r in run.read_jsonl("metrics.jsonl")] == list(range(9))
    assert OmegaConf.load(run.path / "verl/verl_config.yaml").trainer.total_training_steps == 8
