"""Local launch: the verl process in its own session, output to train.log, metrics mirrored, STOP honoured.

The GPU work cannot run here, so two paths are proven separately:
* verl's real ``python -m verl.trainer.main_ppo`` with the saved config: verl validates and accepts it,
  starts Ray, and fails where the GPU stack begins (missing ``transfer_queue``) — recorded as a failure
  with the cause "missing dependency" and the install hint;
* the studio's real run path (``spawn_run`` → ``python -m engines run`` → train()) with ``verl_python``
  pointing at a stand-in for verl's interpreter that runs ``testing.verl_fakes.FAKE_MAIN_PPO``: verl's
  own logger writes the metrics, the watcher mirrors them, the STOP file stops the job.
"""

import os
import stat
import sys
from pathlib import Path

import pandas as pd
import psutil
import pytest

from engines.runs.sample_groups import step_groups

from engines import AgentTrainer
from engines.runs.rundir import RunDir
from engines.runs.lifecycle import effective_status, spawn_run, stop_run
from testing.verl_fakes import write_fake_main_ppo
from testing.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
LETTERS_AGENT = str(ROOT / "assets/agents/letters_agent.yaml")
LETTER_REWARD = f"{ROOT}/assets/rewards/letter_reward.py:letter_reward"


@pytest.fixture()
def data_file(tmp_path):
    rows = [{"prompt": f"Say the letter {c}:", "answer": c} for c in "ABCDEFGH"]
    pd.DataFrame(rows).to_json(tmp_path / "letters.jsonl", orient="records", lines=True)
    return str(tmp_path / "letters.jsonl")


def fake_verl_python(folder: Path) -> str:
    """An executable that takes verl's command line (``-m verl.trainer.main_ppo --config-path ...``) and
    runs the stand-in main_ppo with the same arguments."""
    fake = write_fake_main_ppo(folder)
    exe = folder / "verl-python"
    exe.write_text(f'#!/bin/sh\n[ "$1" = "-m" ] && shift 2\nexec {sys.executable} {fake} "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


def prepare(tmp_path, data_file, config) -> RunDir:
    t = AgentTrainer(
        LETTERS_AGENT, data_file, None, LETTER_REWARD, config, run_path=str(tmp_path / "runs"), train_engine_name="verl"
    )
    p = t.train_processor
    p.write_run_spec()
    p.run.write_status(state="queued", engine="verl")
    return p.run


def test_real_verl_accepts_the_config_and_the_failure_is_classified(tmp_path, data_file, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    config = {
        "batch_size": 4,
        "num_generations": 2,
        # verl's own ray.init settings (an open node): a lighter local Ray for this CPU box
        "ray_kwargs": {"ray_init": {"num_cpus": 1, "include_dashboard": False}},
    }
    t = AgentTrainer(
        LETTERS_AGENT, data_file, None, LETTER_REWARD, config, run_path=str(tmp_path / "runs"), train_engine_name="verl"
    )
    run = t.train_processor.run
    with pytest.raises(Exception, match="transfer_queue"):
        t.train()
    log = run.log_path.read_text()
    assert "[validate_config] All configuration checks passed successfully!" in log  # verl's own check, own process
    assert "No module named 'transfer_queue'" in log
    status = run.read_status()
    assert status["state"] == "failed" and status["cause"] == "missing dependency"
    assert "verl[vllm]" in status["error"]  # the install hint
    events = [e["event"] for e in run.read_jsonl("events.jsonl")]
    assert events[:2] == ["started", "launched"] and events[-1] == "failed"
    assert not psutil.pid_exists(status["verl_pid"]) or psutil.Process(status["verl_pid"]).status() == "zombie"


def test_a_run_process_mirrors_verls_metrics_and_finishes(tmp_path, data_file):
    python = fake_verl_python(tmp_path)
    run = prepare(
        tmp_path,
        data_file,
        {"batch_size": 4, "verl_python": python, "env_vars": {"FAKE_VERL_STEPS": "3", "FAKE_VERL_PAUSE": "0.2"}},
    )
    spawn_run(run.path)
    wait_for(lambda: effective_status(run).get("state") in ("finished", "failed"), timeout=180)
    status = run.read_status()
    assert status["state"] == "finished", (status, run.log_path.read_text()[-3000:])
    rows = run.read_jsonl("metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2, 3]
    assert rows[3]["reward"] == pytest.approx(0.3) and rows[3]["critic/score/mean"] == pytest.approx(0.3)
    assert rows[3]["loss"] == pytest.approx(-0.03) and rows[3]["lr"] == 1e-6 and rows[3]["step_time"] == 0.2
    assert rows[0]["eval/reward"] == pytest.approx(0.1)
    assert status["step"] == 3 and status["total_steps"] == 60 and status["last_reward"] == pytest.approx(0.3)
    samples = run.read_jsonl("samples.jsonl")
    assert {s["step"] for s in samples} == {1, 2, 3}
    for step in (1, 2, 3):  # whole groups, by prompt (verl's dump has no group id): at most samples_per_step (2)
        groups = step_groups(run.file("samples.jsonl"), step)
        assert 1 <= len(groups) <= 2 and all(len({r["prompt"] for r in g}) == 1 for g in groups), groups
        assert sum(map(len, groups)) == sum(s["step"] == step for s in samples)
    assert samples[0]["completion"] == "C" and samples[0]["rewards"] == {"letter_reward": 1.0}
    events = run.read_jsonl("events.jsonl")
    assert any(e["event"] == "checkpoint" and e["step"] == 3 for e in events)
    assert events[-1]["event"] == "finished"
    log = run.log_path.read_text()
    assert "Creating file logger at" in log and "step:3 - critic/score/mean:" in log  # verl's output in train.log


def test_stop_file_stops_the_verl_process_session(tmp_path, data_file):
    python = fake_verl_python(tmp_path)
    run = prepare(
        tmp_path,
        data_file,
        {"batch_size": 4, "verl_python": python, "env_vars": {"FAKE_VERL_STEPS": "500", "FAKE_VERL_PAUSE": "0.3"}},
    )
    spawn_run(run.path)
    wait_for(lambda: len(run.read_jsonl("metrics.jsonl")) >= 2, timeout=180)
    verl_pid = run.read_status()["verl_pid"]
    assert psutil.pid_exists(verl_pid) and os.getsid(verl_pid) == verl_pid  # its own session
    stop_run(run.path)
    wait_for(lambda: effective_status(run).get("state") in ("stopped", "failed"), timeout=60)
    status = run.read_status()
    assert status["state"] == "stopped", status
    wait_for(lambda: not psutil.pid_exists(verl_pid) or psutil.Process(verl_pid).status() == "zombie", timeout=10)
    events = [e["event"] for e in run.read_jsonl("events.jsonl")]
    assert "stop_requested" in events and events[-1] == "stopped"
    assert len(run.read_jsonl("metrics.jsonl")) < 500
