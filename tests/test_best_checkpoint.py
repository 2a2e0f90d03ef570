"""The best checkpoint by the held-out metric and early stopping, on a real tiny trl run whose held-out
reward is scripted: best at step 1, worse after. ``best`` names that checkpoint everywhere; pruning
(save_total_limit) never takes it; two evaluations without improvement end the run as early_stopped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aworld_gui.rendering.i18n import localize
from engines import AgentTrainer
from engines.runs.best_checkpoint import BestTracker, metric_name, tracker_from_config
from engines.results.check_result import CheckError
from engines.inference.checkpoints import resolve
from engines.runs.rundir import RunDir

ROOT = Path(__file__).resolve().parent.parent


def test_the_tracker_follows_improvements_and_counts_patience():
    t = tracker_from_config({"early_stopping_patience": 2})
    assert (t.metric, t.greater_is_better) == ("eval/reward", True)
    assert [t.observe(s, {"eval/reward": v}) for s, v in ((0, 0.1), (1, 0.5), (2, 0.5), (3, 0.4))] == [
        True,
        True,
        False,
        False,
    ]
    assert t.best_step == 1 and t.exhausted
    assert tracker_from_config({"metric_for_best_model": "eval_loss"}).greater_is_better is False  # TRL's name
    assert metric_name("reward") == metric_name("eval_reward") == "eval/reward"
    assert BestTracker().observe(0, {"eval_train/reward": 0.3})  # no test set: the train rows' score


def test_best_checkpoint_is_recorded_kept_from_pruning_and_stops_the_run_early(tmp_path):
    test = tmp_path / "test.jsonl"
    test.write_text("".join(json.dumps({"prompt": f"Say the letter {c}:", "answer": "EVAL"}) + "\n" for c in "ABCD"))
    scripted = tmp_path / "scripted.py"
    scripted.write_text(
        "evals = 0\n"
        "def scripted(completion, answer, **kw):\n"
        "    global evals\n"
        "    if answer != 'EVAL':\n"
        "        return 0.5\n"
        "    evals += 1\n"
        "    return {0: 0.1, 1: 0.9}.get((evals - 1) // 4, 0.2)   # 4 samples per evaluation\n"
    )
    trainer = AgentTrainer(
        agent=str(ROOT / "assets/agents/letters_agent.yaml"),
        train_dataset=str(ROOT / "assets/datasets/letters_train.jsonl"),
        test_dataset=str(test),
        reward_func=f"{scripted}:scripted",
        run_path=str(tmp_path / "runs"),
        train_engine_name="trl",
        config={
            "max_steps": 20,
            "prompts_per_step": 2,
            "num_generations": 4,
            "eval_steps": 1,
            "eval_samples": 4,
            "save_steps": 1,
            "save_total_limit": 2,
            "early_stopping_patience": 2,
            "diagnostics": {"enabled": False},
        },
    )
    assert trainer.train() == "finished"
    run: RunDir = trainer.train_processor.run
    status = run.read_status()
    assert status["cause"] == "early_stopped" and status["step"] == 3 and status["state"] == "finished"
    assert status["best_checkpoint"] == {"name": "checkpoint-1", "step": 1, "metric": "eval/reward", "value": 0.9}
    assert [p.name for p in run.checkpoints()] == ["checkpoint-1", "checkpoint-3"]  # 2 pruned, the best kept
    events = run.read_jsonl("events.jsonl")
    assert [e["name"] for e in events if e["event"] == "best_checkpoint"] == ["checkpoint-1"]
    assert [e["step"] for e in events if e["event"] == "early_stopped"] == [3]
    agent_model = str(ROOT / "assets/models/tiny-letters")
    assert resolve("best", agent_model, run).label == "checkpoint-1"


def test_best_on_a_run_without_one_says_how_to_get_one(tmp_path):
    run = RunDir.create(tmp_path, "fake")
    run.write_status(state="finished")
    with pytest.raises(CheckError, match="has no best checkpoint"):
        resolve("best", str(ROOT / "assets/models/tiny-letters"), run)


def test_the_studio_offers_best_for_evaluate_and_chat_and_marks_it_among_the_checkpoints(tmp_path):
    from aworld_gui.core.run_cache import RunCache
    from aworld_gui.core.studio import Studio

    class NoWorker:
        def start(self):
            pass

    run = RunDir.create(tmp_path, "trl")
    run.write_spec({"engine": "trl"})
    for step in (1, 3):
        (run.checkpoints_dir / f"checkpoint-{step}").mkdir(parents=True)
    studio = Studio(tmp_path, worker=NoWorker(), cache=RunCache())
    run.write_status(state="finished")
    assert [v for _, v in studio.model_choices(run.run_id)] == ["base", "checkpoint-3", "checkpoint-1"]  # newest first
    run.write_status(best_checkpoint={"name": "checkpoint-1", "step": 1, "metric": "eval/reward", "value": 0.9})
    choices = studio.model_choices(run.run_id)
    assert [v for _, v in choices] == ["base", "best", "checkpoint-3", "checkpoint-1"]
    assert "(checkpoint-1)" in choices[1][0] and "latest" in localize(choices[2][0], "en")
    # issue 42: every checkpoint of every run made ~30 boxes. Another run, newer: its best and latest only, first
    other = RunDir.create(tmp_path, "trl")
    other.write_spec({"engine": "trl"})
    for step in (2, 4, 6, 8):
        (other.checkpoints_dir / f"checkpoint-{step}").mkdir(parents=True)
    other.write_status(state="finished", best_checkpoint={"name": "checkpoint-4", "step": 4})
    theirs = [(localize(label, "en"), v) for label, v in studio.model_choices(run.run_id)[4:]]
    assert theirs == [
        (f"{other.run_id} / checkpoint-4 · best", f"{other.run_id}/checkpoint-4"),
        (f"{other.run_id} / checkpoint-8 · latest", f"{other.run_id}/checkpoint-8"),
    ]
    mine = [(localize(label, "en"), v) for label, v in studio.model_choices(other.run_id)]
    assert mine[-2:] == [
        (f"{run.run_id} / checkpoint-1 · best", f"{run.run_id}/checkpoint-1"),
        (f"{run.run_id} / checkpoint-3 · latest", f"{run.run_id}/checkpoint-3"),
    ]
    marked = studio.checkpoint_choices(run.run_id)
    assert [v for _, v in marked] == ["checkpoint-1", "checkpoint-3"] and marked[0][0] != "checkpoint-1"
