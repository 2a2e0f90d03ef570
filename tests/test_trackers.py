"""Trackers (``report_to``): each is checked for its package and credentials before launch, offline
modes work, keys never reach a run file, and the run records the link to the tracker's run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from engines import AgentTrainer, CheckError
from engines.runs import trackers

ROOT = Path(__file__).resolve().parent.parent
AGENT = str(ROOT / "assets/agents/letters_agent.yaml")
TRAIN = str(ROOT / "assets/datasets/letters_train.jsonl")
REWARD = str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward"
FAST = {"max_steps": 2, "prompts_per_step": 2, "num_generations": 4, "save_steps": 2, "learning_rate": 1e-3}
SECRET = "wandb-key-0123456789abcdef0123456789abcdef01"


def make(tmp_path, **config):
    return AgentTrainer(
        AGENT, TRAIN, None, REWARD, {**FAST, **config}, run_path=str(tmp_path / "runs"), train_engine_name="trl"
    )


@pytest.mark.parametrize("name", ["mlflow", "swanlab"])
def test_a_tracker_without_its_package_is_a_clear_check_error(tmp_path, name):
    assert importlib.util.find_spec(name) is None  # not installed in this project's environment
    with pytest.raises(CheckError) as err:
        make(tmp_path, report_to=["tensorboard", name])
    msg = str(err.value)
    assert f"`report_to` names {name}, but the {name} package is not installed" in msg
    assert f"pip install {name}" in msg


def test_unknown_or_all_trackers_are_refused():
    with pytest.raises(
        CheckError,
        match="`report_to` names 'wandbb', which this engine does not support \\(did you mean \"wandb\"\\?\\)",
    ):
        trackers.normalize("wandbb")
    with pytest.raises(CheckError, match="`report_to: all` would start every tracker"):
        trackers.normalize("all")
    assert trackers.normalize("none") == [] and trackers.normalize(["tensorboard", "wandb"]) == ["tensorboard", "wandb"]
    assert trackers.library_report_to(["tensorboard"]) == "none"  # our own event files, not TRL's callback


def test_wandb_online_without_credentials_is_a_check_error(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc from `wandb login`
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    with pytest.raises(CheckError) as err:
        make(tmp_path, report_to="wandb")
    assert "wandb has no credentials: WANDB_API_KEY is not set and `wandb login` was not run" in str(err.value)
    assert "tracker_mode: offline" in str(err.value)
    monkeypatch.setenv("WANDB_API_KEY", SECRET)  # a key in the environment is enough for the check
    assert trackers.check(["wandb"], "online") == []


def test_wandb_offline_run_records_its_link_and_never_writes_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", SECRET)
    monkeypatch.setenv("WANDB_SILENT", "true")
    trainer = make(tmp_path, report_to=["tensorboard", "wandb"], tracker_mode="offline", tracker_project="demo")
    assert trainer.train() == "finished"
    run = trainer.train_processor.run
    link = run.read_status()["trackers"]["wandb"]
    assert link.startswith(f"offline run in {run.path / 'trackers' / 'wandb'}") and "wandb sync" in link
    assert any(e.get("tracker") == "wandb" for e in run.read_jsonl("events.jsonl") if e["event"] == "tracker")
    offline = list((run.path / "trackers" / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(offline) == 1 and offline[0].stat().st_size > 0  # wandb logged the run locally
    assert trainer.train_processor.trainer.args.report_to == ["wandb"]  # TensorBoard files stay ours
    assert list(run.tensorboard_dir.iterdir())
    for f in run.path.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    import wandb

    assert wandb.run is None  # the engine ended the tracker's run with the training
    import os

    assert "WANDB_DIR" not in os.environ and "WANDB_MODE" not in os.environ  # this process's environment restored
    # resumed (issue 45): the second attempt logs into the same wandb run — the run directory's id, in both
    assert run.read_status()["tracker_ids"] == {"wandb": trackers.wandb_run_id(run.path)}
    assert AgentTrainer.resume(run.path, max_steps=4) == "finished"
    offline = sorted((run.path / "trackers" / "wandb").glob("offline-run-*"))
    assert len(offline) == 2 and all(p.name.endswith("-" + trackers.wandb_run_id(run.path)) for p in offline)
    assert run.read_status()["step"] == 4 and wandb.run is None and "WANDB_RUN_ID" not in os.environ


def test_a_resumed_attempt_reattaches_to_the_tracker_runs_of_the_first(tmp_path, monkeypatch):
    """mlflow (not installed here: its environment, which Hugging Face's callback reads) and wandb's id."""
    monkeypatch.delenv("WANDB_RUN_ID", raising=False)
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    run_dir = tmp_path / "20261129-101010-trl-ab12-my run:1"
    env = trackers.environment(["wandb", "mlflow"], run_dir, ids={"mlflow": "0123abcd"}, env={})
    assert env["MLFLOW_RUN_ID"] == "0123abcd" and env["WANDB_RESUME"] == "allow"
    assert env["WANDB_RUN_ID"] == "20261129-101010-trl-ab12-my-run-1"
    first = trackers.environment(["wandb", "mlflow"], run_dir, env={})
    assert "MLFLOW_RUN_ID" not in first and first["WANDB_RUN_ID"] == env["WANDB_RUN_ID"]
    own = trackers.environment(
        ["wandb", "mlflow"], run_dir, ids={"mlflow": "x"}, env={"WANDB_RUN_ID": "mine", "MLFLOW_RUN_ID": "m"}
    )
    assert own["WANDB_RUN_ID"] == "mine" and "MLFLOW_RUN_ID" not in own  # the user's own choice stands
