"""Cluster mode against a real Ray head started here on 127.0.0.1: the run dir is shipped as the job's
working_dir through Ray's JobSubmissionClient, env vars are passed, status/logs/stop map to the run dir.

The job is the stand-in main_ppo (``testing.verl_fakes``): the same command line, saved config and
verl logger as the real one, without the GPU work that this machine cannot do.
"""

import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from engines import AgentTrainer
from testing.verl_fakes import write_fake_main_ppo

ROOT = Path(__file__).resolve().parent.parent
LETTERS_AGENT = str(ROOT / "assets/agents/letters_agent.yaml")
LETTER_REWARD = f"{ROOT}/assets/rewards/letter_reward.py:letter_reward"


@pytest.fixture(scope="module")
def head(ray_head):
    return ray_head


@pytest.fixture()
def data_file(tmp_path):
    rows = [{"prompt": f"Say the letter {c}:", "answer": c} for c in "ABCDEFGH"]
    pd.DataFrame(rows).to_json(tmp_path / "letters.jsonl", orient="records", lines=True)
    return str(tmp_path / "letters.jsonl")


def cluster_trainer(tmp_path, data_file, head, steps: int, pause: float, monkeypatch) -> AgentTrainer:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    config = {
        "ray_address": head.address,
        "n_gpus_per_node": 1,
        "batch_size": 4,
        "env_vars": {"FAKE_VERL_STEPS": str(steps), "FAKE_VERL_PAUSE": str(pause)},
    }
    t = AgentTrainer(
        LETTERS_AGENT, data_file, None, LETTER_REWARD, config, run_path=str(tmp_path / "runs"), train_engine_name="verl"
    )
    p = t.train_processor
    assert p.cluster_address == head.address and p.uses_local_slot is False
    write_fake_main_ppo(p.verl_dir)  # shipped with the run dir; replaces `-m verl.trainer.main_ppo`
    p.main_entry = ["verl/fake_main_ppo.py"]
    return t


def job_client(head):
    from engines.cluster.ray_jobs import enable_ray_token_auth

    enable_ray_token_auth()
    from ray.job_submission import JobSubmissionClient

    return JobSubmissionClient(head.address)


def test_a_submitted_job_is_tracked_to_completion(tmp_path, data_file, head, monkeypatch):
    t = cluster_trainer(tmp_path, data_file, head, steps=3, pause=0.2, monkeypatch=monkeypatch)
    run = t.train_processor.run
    assert t.train() == "finished", run.log_path.read_text()[-3000:]
    status = run.read_status()
    assert status["state"] == "finished" and status["ray_job_status"] == "SUCCEEDED"
    info = job_client(head).get_job_info(status["ray_job_id"])
    assert info.status == "SUCCEEDED" and info.metadata == {"aworld_run": run.run_id}
    assert info.runtime_env["env_vars"]["FAKE_VERL_STEPS"] == "3"
    assert info.runtime_env["working_dir"].startswith("gcs://")  # the run dir, uploaded
    # the job ran in the shipped copy of the run dir, with the cluster variant of the saved config
    log = run.log_path.read_text()
    assert "fake main_ppo read verl_config_cluster" in log and "Creating file logger at" in log
    rows = run.read_jsonl("metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2, 3]
    assert rows[-1]["reward"] == pytest.approx(0.3) and rows[-1]["loss"] == pytest.approx(-0.03)
    assert {s["step"] for s in run.read_jsonl("samples.jsonl")} == {1, 2, 3}
    events = [e["event"] for e in run.read_jsonl("events.jsonl")]
    assert events[:2] == ["started", "submitted"] and "checkpoint" in events and events[-1] == "finished"


def test_a_second_job_is_stopped_through_the_runs_stop(tmp_path, data_file, head, monkeypatch):
    t = cluster_trainer(tmp_path, data_file, head, steps=1000, pause=0.3, monkeypatch=monkeypatch)
    run = t.train_processor.run
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("value", t.train()), daemon=True)
    thread.start()
    deadline = time.time() + 180
    while time.time() < deadline and len(run.read_jsonl("metrics.jsonl")) < 2:
        time.sleep(0.3)
    assert len(run.read_jsonl("metrics.jsonl")) >= 2, run.log_path.read_text()[-3000:]
    run.request_stop("test")  # what the studio's Stop button writes
    thread.join(90)
    assert outcome.get("value") == "stopped"
    status = run.read_status()
    assert status["state"] == "stopped" and status["ray_job_status"] == "STOPPED"
    assert job_client(head).get_job_status(status["ray_job_id"]).value == "STOPPED"
    events = [e["event"] for e in run.read_jsonl("events.jsonl")]
    assert "stop_requested" in events and events[-1] == "stopped"
