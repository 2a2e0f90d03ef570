"""The embedded `trl` engine trains the shipped tiny model for real on CPU and keeps the run-dir contract."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engines.core.modules import Modules
from engines import AgentTrainer, CheckError
from engines.core.prepare import prepare_run, trainer_from_run_dir
from engines.runs.lifecycle import effective_status, process_alive, spawn_run, stop_run
from testing.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
AGENT = str(ROOT / "assets/agents/letters_agent.yaml")
TRAIN = str(ROOT / "assets/datasets/letters_train.jsonl")
TEST = str(ROOT / "assets/datasets/letters_test.jsonl")
REWARD = str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward"
FAST = {
    "max_steps": 4,
    "learning_rate": 1e-3,
    "prompts_per_step": 2,
    "num_generations": 4,
    "save_steps": 2,
    "eval_steps": 2,
    "eval_samples": 4,
}


def make_trainer(tmp_path, **overrides):
    kw = dict(
        agent=AGENT,
        train_dataset=TRAIN,
        test_dataset=TEST,
        reward_func=REWARD,
        config=dict(FAST),
        run_path=str(tmp_path / "runs"),
        train_engine_name="trl",
    )
    kw.update(overrides)
    return AgentTrainer(**kw)


def test_grpo_trains_and_writes_the_run_directory(tmp_path):
    trainer = make_trainer(tmp_path)
    assert trainer.train() == "finished"
    run = trainer.train_processor.run
    status = run.read_status()
    assert status["state"] == "finished" and status["step"] == 4 and status["total_steps"] == 4
    train_rows = [r for r in run.read_jsonl("metrics.jsonl") if "loss" in r]
    assert [r["step"] for r in train_rows] == [1, 2, 3, 4]
    for r in train_rows:  # canonical keys next to TRL's originals
        assert {"loss", "reward", "reward_std", "lr", "completion_length", "step_time", "time"} <= r.keys()
        assert r["rewards/letter_reward"] == r["rewards/letter_reward/mean"]
        assert 0.0 <= r["reward"] <= 1.0
    evals = [r for r in run.read_jsonl("metrics.jsonl") if "eval/reward" in r]
    assert [r["step"] for r in evals] == [0, 2, 4]
    samples = run.read_jsonl("samples.jsonl")
    assert {s["step"] for s in samples} == {1, 2, 3, 4}
    s = samples[0]
    assert s["prompt"][0] == {"role": "system", "content": "Reply with one capital letter."}
    assert s["completion"][0]["role"] == "assistant" and set(s["rewards"]) == {"letter_reward"}
    events = [e["event"] for e in run.read_jsonl("events.jsonl")]
    assert events[0] == "started" and events[-1] == "finished" and "checkpoint" in events
    assert [p.name for p in run.checkpoints()] == ["checkpoint-2", "checkpoint-4"]
    assert (run.checkpoints()[-1] / "model.safetensors").exists()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tb = EventAccumulator(str(run.tensorboard_dir))  # what `tensorboard --logdir` reads
    tb.Reload()
    assert [(e.step, round(e.value, 5)) for e in tb.Scalars("train/reward")] == [
        (r["step"], round(r["reward"], 5)) for r in train_rows
    ]
    assert [e.step for e in tb.Scalars("eval/reward")] == [0, 2, 4] and "train/loss" in tb.Tags()["scalars"]
    spec = run.read_spec()  # run.yaml reproduces the run
    assert spec["engine"] == "trl" and spec["config"]["max_steps"] == 4 and spec["reward"][0]["ref"] == REWARD


def test_sft_mode_trains_on_reference_answers(tmp_path):
    trainer = make_trainer(tmp_path, reward_func=None, config={**FAST, "mode": "sft", "eval_steps": 0})
    assert trainer.train() == "finished"
    rows = [r for r in trainer.train_processor.run.read_jsonl("metrics.jsonl") if "loss" in r]
    assert len(rows) == 4 and all(r["loss"] > 0 for r in rows)


def test_grpo_without_reward_is_a_config_error(tmp_path):
    with pytest.raises(CheckError, match="GRPO needs a reward function"):
        make_trainer(tmp_path, reward_func=None)


def test_missing_prompt_column_fails_before_any_process_starts(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("question_text,answer\nSay A,A\n")
    runs = tmp_path / "runs"
    with pytest.raises(CheckError) as err:
        prepare_run(Modules(AGENT, str(bad), None, REWARD, FAST, "trl"), runs_dir=str(runs))
    assert "no prompt column" in str(err.value) and "question_text" in str(err.value)
    assert not any(runs.iterdir())  # no half-made run dir is left behind


def test_reward_that_raises_mid_run_fails_with_cause(tmp_path):
    flaky = tmp_path / "flaky_reward.py"
    flaky.write_text(
        "calls = 0\n"
        "def flaky(completion, answer, **kw):\n"
        "    global calls\n"
        "    calls += 1\n"
        "    if calls > 20:\n"
        "        raise ZeroDivisionError('the judge went away')\n"
        "    return 1.0 if completion.strip()[:1] == answer else 0.0\n"
    )
    trainer = make_trainer(tmp_path, reward_func=f"{flaky}:flaky")
    with pytest.raises(Exception, match="the judge went away"):
        trainer.train()
    run = trainer.train_processor.run
    status = run.read_status()
    assert status["state"] == "failed" and status["cause"] == "reward error"
    failed = [e for e in run.read_jsonl("events.jsonl") if e["event"] == "failed"][-1]
    assert failed["cause"] == "reward error" and "ZeroDivisionError: the judge went away" in failed["message"]


@pytest.fixture()
def long_run(tmp_path):
    run = prepare_run(
        Modules(AGENT, TRAIN, TEST, REWARD, {**FAST, "max_steps": 5000, "save_steps": 1000, "eval_steps": 0}, "trl"),
        runs_dir=str(tmp_path / "runs"),
    )
    yield run
    st = run.read_status()
    if process_alive(st):
        from engines.runs.lifecycle import kill_run

        kill_run(run.path)


def test_stop_mid_run_checkpoints_and_resume_continues_step_count(long_run, tmp_path):
    spawn_run(long_run.path)
    wait_for(lambda: (long_run.read_status().get("step") or 0) >= 3)
    stop_run(long_run.path)
    status = wait_for(lambda: (s := effective_status(long_run))["state"] in ("stopped", "failed") and s)
    assert status["state"] == "stopped", status
    stopped_at = status["step"]
    assert 3 <= stopped_at < 5000
    ckpt = long_run.checkpoints()[-1]
    assert ckpt.name == f"checkpoint-{stopped_at}"
    events = long_run.read_jsonl("events.jsonl")
    kinds = [e["event"] for e in events]
    after_stop = kinds[kinds.index("stop_requested") + 1 :]
    # the closing evaluation (the test set, after the last step) is compared with the one before training: when the
    # few steps improved the held-out reward, the last checkpoint is the best (how many steps ran before the stop
    # landed depends on the machine's load, so either can happen)
    assert after_stop in (["checkpoint", "summary", "stopped"], ["checkpoint", "summary", "best_checkpoint", "stopped"])
    evals = [r for r in long_run.read_jsonl("metrics.jsonl") if "eval/reward" in r]
    assert [r["step"] for r in evals] == [0, stopped_at]
    improved = evals[-1]["eval/reward"] > evals[0]["eval/reward"]
    assert ("best_checkpoint" in after_stop) == improved, (evals, kinds)
    if improved:
        [best] = [e for e in events if e["event"] == "best_checkpoint"]
        assert best["name"] == ckpt.name and long_run.read_status()["best_checkpoint"]["name"] == ckpt.name
    # the summary says what the run did (TRL's own rate divides the planned 5000 steps by the time)
    [summary] = [e for e in long_run.read_jsonl("events.jsonl") if e["event"] == "summary"]
    assert "train_steps_per_second" not in summary and summary["steps"] == stopped_at
    # seconds are kept to the millisecond: the rate times them gives the steps back within the two roundings
    rate, seconds = summary["steps_per_second"], summary["seconds"]  # rounded to 4 and 3 decimals
    assert abs(rate * seconds - stopped_at) <= rate * 0.0005 + seconds * 0.00005 + 1e-9
    assert "Traceback" not in long_run.log_path.read_text()

    # a later run resumes from that checkpoint and continues the step count
    cfg = {**FAST, "max_steps": stopped_at + 3, "eval_steps": 0, "resume_from_checkpoint": str(ckpt)}
    trainer = make_trainer(tmp_path, config=cfg)
    assert trainer.train() == "finished"
    steps = [r["step"] for r in trainer.train_processor.run.read_jsonl("metrics.jsonl") if "loss" in r]
    assert steps == [stopped_at + 1, stopped_at + 2, stopped_at + 3]


def test_sigterm_is_a_graceful_stop(long_run):
    proc = subprocess.Popen(
        [sys.executable, "-m", "engines", "run", str(long_run.path)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: (long_run.read_status().get("step") or 0) >= 2)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    status = long_run.read_status()
    assert status["state"] == "stopped" and long_run.checkpoints()


def test_run_process_reads_only_run_yaml(tmp_path):
    """A prepared run dir is self-contained: rebuilding from run.yaml gives the same modules."""
    run = prepare_run(
        Modules(
            AGENT, TRAIN, TEST, [{"ref": REWARD, "weight": 0.5}, {"name": "exact_match", "weight": 0.5}], FAST, "trl"
        ),
        runs_dir=str(tmp_path / "runs"),
    )
    spec = yaml.safe_load((run.path / "run.yaml").read_text())
    assert spec["reward"] == [{"ref": REWARD, "weight": 0.5}, {"name": "exact_match", "weight": 0.5}]
    trainer = trainer_from_run_dir(run.path)
    assert trainer.train_processor.run.path == run.path
    assert trainer.train_processor.reward.weights == [0.5, 0.5]
    assert trainer.config == spec["config"]
