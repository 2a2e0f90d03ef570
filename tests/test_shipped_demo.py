"""The trained demo the project ships (assets/models/tiny-letters-trained, engines/core/shipped_demo.py): the demo
trained from scratch here learns as the shipped one did (held-out greedy reward from ~0 to ≥ 0.8, no diagnosis) —
the one test of the suite that trains it; every other test that needs a trained demo reads the shipped one
(tests/conftest.py's ``trained_letters``) — and the shipped one installs as a finished run that Evaluate, Chat and
Export read like any other."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from engines import AgentTrainer
from engines.core import shipped_demo
from engines.runs.lifecycle import effective_status, list_run_dirs
from engines.runs.rundir import RunDir


def diagnoses(run) -> list[dict]:
    return [e for e in run.read_jsonl("events.jsonl") if e.get("type") == "diagnosis"]


def held_out(trainer: AgentTrainer) -> tuple[float, float]:
    """(the base model's, the latest checkpoint's) greedy reward on the held-out test set."""
    base = asyncio.run(trainer.inference(checkpoint="base")).metrics["reward"]
    return base, asyncio.run(trainer.inference()).metrics["reward"]


def test_the_demo_learns_from_scratch_as_the_shipped_one_did(tmp_path):
    run = shipped_demo.train(tmp_path / "runs")
    status = run.read_status()
    assert status["state"] == "finished" and status["step"] == shipped_demo.STEPS
    assert [p.name for p in run.checkpoints()] == [f"checkpoint-{shipped_demo.STEPS}"]
    assert diagnoses(run) == []  # the healthy demo: no diagnosis on the way
    trainer = AgentTrainer(run_path=str(run.path.parent), run_dir=run.path, **shipped_demo.modules())
    base, trained = held_out(trainer)
    assert base <= 0.2 and trained >= 0.8, (base, trained)
    # the shipped record is a run of the same code: its last train rewards are where this run's are
    record = [json.loads(line) for line in (shipped_demo.TRAINED / "training" / "metrics.jsonl").open()]
    mine = run.read_jsonl("metrics.jsonl")

    def last_mean(rows):
        rewards = [r["reward"] for r in rows if "reward" in r][-20:]
        return sum(rewards) / len(rewards)

    assert abs(last_mean(record) - last_mean(mine)) <= 0.15, (last_mean(record), last_mean(mine))


def test_the_shipped_demo_installs_as_a_finished_run(tmp_path):
    assert shipped_demo.shipped()
    runs = tmp_path / "runs"
    run = shipped_demo.install(runs)
    again = shipped_demo.install(runs)  # a second install is a second run, never the first one overwritten
    assert run.run_id != again.run_id and [r.run_id for r in list_run_dirs(runs)] == [again.run_id, run.run_id]
    status = effective_status(run)
    assert status["state"] == "finished" and status["step"] == shipped_demo.STEPS and not status.get("pid")
    assert status["last_checkpoint"] == str(run.checkpoints_dir / f"checkpoint-{shipped_demo.STEPS}")
    assert run.read_label()["name"] == shipped_demo.LABEL
    spec = run.read_spec()
    assert spec["run_id"] == run.run_id and spec["engine"] == "trl"
    for path in (spec["agent"]["model"], spec["data"]["train"], spec["data"]["test"], spec["reward"][0]["ref"]):
        assert path.startswith(str(shipped_demo.ASSETS)) and Path(path.split(":")[0]).exists(), path
    assert spec["agent"]["model"] == str(shipped_demo.ASSETS / "models" / "tiny-letters")  # the base: trained from it
    rows = run.read_jsonl("metrics.jsonl")
    assert [r["step"] for r in rows if "reward" in r][-1] == shipped_demo.STEPS
    assert {s["step"] for s in run.read_jsonl("samples.jsonl")} >= {25, shipped_demo.STEPS}
    assert "{run}" not in run.file("events.jsonl").read_text() and diagnoses(run) == []
    # a run like any other: its checkpoint loads and beats the base model on the held-out set
    trainer = AgentTrainer(run_path=str(runs), run_dir=run.path, **shipped_demo.modules())
    base, trained = held_out(trainer)
    assert base <= 0.2 and trained >= 0.8, (base, trained)


def test_the_studio_adds_the_demo_run_to_an_empty_runs_folder_only(tmp_path):
    """What ``aworld-studio`` does as it starts (tests/test_packaging.py starts the installed command and finds it):
    a first start has a trained model for Chat and Evaluate; a folder with runs is left alone, the demo's own too."""
    runs = tmp_path / "runs"
    added = shipped_demo.install_if_empty(runs)
    assert added is not None and added.read_label()["name"] == shipped_demo.LABEL
    assert shipped_demo.install_if_empty(runs) is None  # the next start: it is there, no second one
    shutil.rmtree(added.path)
    mine = RunDir.create(runs, "trl", label="mine")
    mine.write_status(state="finished")
    assert shipped_demo.install_if_empty(runs) is None  # a user's runs and no demo: they deleted it, it stays gone
    assert [r.run_id for r in list_run_dirs(runs)] == [mine.run_id]
