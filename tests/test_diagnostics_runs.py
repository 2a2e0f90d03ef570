"""The diagnoses inside real runs: a tiny trl run whose reward gives every completion the same score
gets ``reward_constant`` (ms-swift's run of tests/test_swift_engine.py gets ``no_reward_spread`` from a reward
that scores each prompt's completions alike and the prompts apart); one with a constant term in its mix and completions cut at their length gets
``reward_term_constant`` and ``completions_truncated``; a policy that cannot move gets ``reward_flat``; a reward the
model masters in a few steps gets ``reward_saturated``; the demo with a low KL bound gets ``kl_high``; the trained demo taught a reward with a loophole gets
``eval_diverges``; a run whose loss turns NaN is stopped with that cause; the healthy demo run gets none."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from engines.core.modules import Modules
from engines import AgentTrainer
from engines.diagnostics import CODES
from engines.runs.rundir import FAILED, STOPPED
from engines.core.standard import StandardProcessor

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "assets/agents/letters_agent.yaml"
TRAIN = ROOT / "assets/datasets/letters_train.jsonl"
TEST = ROOT / "assets/datasets/letters_test.jsonl"
LETTER_REWARD = f"{ROOT / 'assets/rewards/letter_reward.py'}:letter_reward"


def diagnoses(run) -> list[dict]:
    return [e for e in run.read_jsonl("events.jsonl") if e.get("type") == "diagnosis"]


def test_a_reward_with_one_score_for_all_gives_reward_constant_within_5_steps(tmp_path, capsys):
    """Issue 42 item 6: the reward itself is constant, named as such, and no setting is advised (num_generations,
    which no_reward_spread advised here before, cannot spread a constant)."""
    same = tmp_path / "same_reward.py"
    same.write_text("def same(completion, answer, **kw):\n    return 0.5\n")
    trainer = AgentTrainer(
        agent=str(ROOT / "assets/agents/letters_agent.yaml"),
        train_dataset=str(ROOT / "assets/datasets/letters_train.jsonl"),
        reward_func=f"{same}:same",
        run_path=str(tmp_path / "runs"),
        train_engine_name="trl",
        config={
            "max_steps": 5,
            "prompts_per_step": 2,
            "num_generations": 4,
            "save_steps": 100,
            "eval_steps": 0,
            "diagnostics": {"poll_seconds": 0.2},
        },
    )
    assert trainer.train() == "finished"
    run = trainer.train_processor.run
    codes = {e["code"] for e in diagnoses(run)}
    assert "no_reward_spread" not in codes and "reward_term_constant" not in codes, codes
    found = [e for e in diagnoses(run) if e["code"] == "reward_constant"]
    assert found and found[0]["state"] == "active" and found[0]["step"] <= 5
    assert found[0]["evidence"] == {"reward": 0.5, "terms": {"same": 0.5}}  # TRL's rewards/same/mean|std
    assert found[0]["setting"] is None and "num_generations" not in found[0]["title"]
    assert len([e for e in found if e["state"] == "active"]) == 1  # written once, not per step
    assert "diagnosis reward_constant since step" in capsys.readouterr().out  # the train log's line


def test_a_mix_with_a_constant_term_and_completions_cut_at_their_length_are_said_in_a_real_run(tmp_path):
    """Two codes until now shown on synthetic series only, in one real trl run: a mix whose second term gives every
    completion 0.5 (reward_term_constant names that term) and completions cut at max_completion_length (the demo's
    random-init model rarely ends one within 16 tokens: completions_truncated)."""
    same = tmp_path / "same_reward.py"
    same.write_text("def same(completion, answer, **kw):\n    return 0.5\n")
    trainer = AgentTrainer(
        agent=str(ROOT / "assets/agents/letters_agent.yaml"),
        train_dataset=str(ROOT / "assets/datasets/letters_train.jsonl"),
        reward_func=[str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward", f"{same}:same"],
        run_path=str(tmp_path / "runs"),
        train_engine_name="trl",
        config={
            "max_steps": 8,  # completions_truncated needs 3 logged steps in a row, reward_term_constant 5
            "prompts_per_step": 2,
            "num_generations": 4,
            "max_completion_length": 16,
            "save_steps": 100,
            "eval_steps": 0,
            "diagnostics": {"poll_seconds": 0.2},
        },
    )
    assert trainer.train() == "finished"
    run = trainer.train_processor.run
    active = {e["code"]: e for e in diagnoses(run) if e["state"] == "active"}
    assert {"reward_term_constant", "completions_truncated"} <= set(active), {c: e["step"] for c, e in active.items()}
    assert active["reward_term_constant"]["evidence"] == {"terms": {"same": 0.5}}
    truncated = active["completions_truncated"]["evidence"]
    assert truncated["max_completion_length"] == 16 and min(truncated["truncated_share"]) >= 0.5


def _active(run) -> dict[str, dict]:
    return {e["code"]: e for e in diagnoses(run) if e["state"] == "active"}


def _trained_run(tmp_path, config: dict, reward: str = LETTER_REWARD, **modules):
    """A finished trl run of the letters agent on its training set (unless ``modules`` say otherwise)."""
    modules = {"agent": str(AGENT), "train_dataset": str(TRAIN), **modules}
    trainer = AgentTrainer(
        reward_func=reward, run_path=str(tmp_path / "runs"), train_engine_name="trl", config=config, **modules
    )
    assert trainer.train() == "finished"
    return trainer.train_processor.run


def test_a_policy_that_cannot_move_gives_reward_flat(tmp_path):
    """learning_rate 0 (a frozen policy): the letters reward sits near 0.05 for 110 steps while a sampled completion
    once scored 1.0 (its maximum so far), the default thresholds (a window of 100 logged steps)."""
    run = _trained_run(tmp_path, {"max_steps": 110, "learning_rate": 0.0, "eval_steps": 0, "save_steps": 1000})
    active = _active(run)
    assert "reward_flat" in active and "reward_saturated" not in active, sorted(active)
    flat = active["reward_flat"]
    assert flat["step"] >= 100 and flat["setting"] == "learning_rate"
    evidence = flat["evidence"]
    assert abs(evidence["reward_last"] - evidence["reward_first"]) < evidence["min_change"] == 0.02
    assert evidence["reward_last"] < 0.2  # far under its maximum: not a run that learned and sits still


def test_the_demo_drifting_past_a_low_kl_bound_gives_kl_high(tmp_path):
    """The demo's own config (its KL to the random-init reference climbs past 1 as it learns) with ``kl_bound:
    0.5`` instead of the demo's 8: the KL stays over the bound and keeps rising."""
    import yaml

    config = yaml.safe_load((ROOT / "assets/configs/letters_grpo.yaml").read_text(encoding="utf-8"))
    config.update(max_steps=60, eval_steps=0, save_steps=1000, diagnostics={"kl_bound": 0.5})
    active = _active(_trained_run(tmp_path, config))
    assert "kl_high" in active, sorted(active)
    evidence = active["kl_high"]["evidence"]
    assert evidence["bound"] == 0.5 and min(evidence["kl"]) > 0.5 and evidence["kl"][-1] > evidence["kl"][0]
    assert active["kl_high"]["setting"] == "beta"


def test_a_reward_the_model_masters_gives_reward_saturated(tmp_path):
    """A reward for any capital letter, which the tiny model learns in about 20 steps; then every completion of
    every group scores 1.0: nothing left to learn from this data."""
    capital = tmp_path / "capital.py"
    capital.write_text("def capital(completion, **kw):\n    return 1.0 if completion.lstrip()[:1].isupper() else 0.0\n")
    config = {"max_steps": 60, "learning_rate": 0.01, "beta": 0.0, "eval_steps": 0, "save_steps": 1000}
    run = _trained_run(tmp_path, config, reward=f"{capital}:capital")
    active = _active(run)
    assert "reward_saturated" in active and "reward_flat" not in active, sorted(active)
    saturated = active["reward_saturated"]["evidence"]
    assert saturated["reward"] == saturated["maximum"] == 1.0
    rewards = [r["reward"] for r in run.read_jsonl("metrics.jsonl") if "reward" in r]
    assert rewards[0] < 0.6  # it climbed there: a reward constant from the start is no_reward_spread's case


def test_a_reward_with_a_loophole_gives_eval_diverges(trained_letters, tmp_path):
    """Reward hacking, for real: the trained demo (it says the requested letter) is trained on with a reward that
    pays any "A" on the training rows; the held-out rows are scored as the task means. The train reward rises as
    the model learns to say "A" to everything, the held-out reward falls at each evaluation."""
    checkpoint = trained_letters.train_processor.run.checkpoints_dir / "checkpoint-300"
    agent = tmp_path / "agent.yaml"
    agent.write_text(AGENT.read_text(encoding="utf-8").replace("../models/tiny-letters", str(checkpoint)))
    train = tmp_path / "train.jsonl"
    rows = [json.loads(line) for line in TRAIN.read_text(encoding="utf-8").splitlines()]
    train.write_text("".join(json.dumps({**r, "split": "train"}) + "\n" for r in rows), encoding="utf-8")
    loophole = tmp_path / "loophole.py"
    loophole.write_text(
        "def loophole(completion, answer, split='test', **kw):\n"
        "    first = completion.lstrip()[:1]\n"
        "    return float(first == 'A') if split == 'train' else float(first == answer)\n"
    )
    config = {"max_steps": 40, "learning_rate": 1e-3, "beta": 0.0, "eval_steps": 4, "eval_samples": 16}
    # a poll every 10 s on a 4 s run: the watcher reads it whole at the end, when the held-out reward is level
    # again (it diverged between steps 28 and 32) — the divergence is said from the evaluations as they came
    config["diagnostics"] = {"poll_seconds": 10}
    run = _trained_run(
        tmp_path, config, f"{loophole}:loophole", agent=str(agent), train_dataset=str(train), test_dataset=str(TEST)
    )
    held_out = [r["eval/reward"] for r in run.read_jsonl("metrics.jsonl") if "eval/reward" in r]
    assert held_out[0] >= 0.8 and held_out[-1] <= 0.5, held_out  # the task got worse
    active = _active(run)
    assert "eval_diverges" in active, sorted(active)
    evidence = active["eval_diverges"]["evidence"]
    falls = evidence["held_out_reward"]
    assert len(falls) == 3 and falls[0] > falls[1] > falls[2]
    assert evidence["train_reward"][0] < evidence["train_reward"][1]


def test_a_reward_that_keeps_memory_gives_memory_rising_with_the_step_it_would_run_out(tmp_path):
    """A reward that keeps a scratch buffer per completion (a leak): the run's resident memory grows every step;
    sized to this machine's memory so that it would run out in about 400 steps (within the 1000-step horizon and
    before the run's 1000th). Stopped as soon as the diagnosis shows: about 1 GiB kept on a 24 GiB machine."""
    import psutil

    from engines.runs.lifecycle import spawn_run
    from engines.core.prepare import prepare_run
    from engines.runs.rundir import TERMINAL_STATES
    from testing.waiting import wait_for

    per_step_mb = int(psutil.virtual_memory().total / 2**20 / 400)
    leak = tmp_path / "leak.py"
    leak.write_text(
        "KEPT = []\n"
        "def leak(completion, answer, **kw):\n"
        f"    KEPT.append(b'x' * ({per_step_mb} * 2**20 // 16))  # 16 completions a step, each buffer kept\n"
        "    return float(completion.lstrip()[:1] == answer)\n"
    )
    config = {"max_steps": 1000, "prompts_per_step": 2, "num_generations": 8, "eval_steps": 0, "save_steps": 10**5}
    run = prepare_run(
        Modules(str(AGENT), str(TRAIN), None, f"{leak}:leak", config, train_engine_name="trl"),
        runs_dir=str(tmp_path / "runs"),
    )
    spawn_run(run.path)
    try:
        rising = wait_for(
            lambda: _active(run).get("memory_rising") or run.read_status().get("state") in TERMINAL_STATES,
            timeout=300,
            what="memory_rising in events.jsonl",
        )
    finally:
        run.request_stop("test done")
        wait_for(lambda: run.read_status().get("state") in TERMINAL_STATES, timeout=120, what="the run to stop")
    assert isinstance(rising, dict), run.read_status()
    evidence = rising["evidence"]
    assert evidence["key"] == "memory/peak_gb" and evidence["limit_gib"] > evidence["peak_gib"]
    assert evidence["gib_per_step"] == pytest.approx(per_step_mb / 1024, rel=0.3)
    assert rising["step"] < evidence["out_of_memory_at_step"] <= 1000
    assert rising["setting"] == "max_completion_length", rising
    assert run.read_status()["step"] < 100  # stopped when it showed, not trained on


class NanLoss(StandardProcessor):
    """An engine whose loss turns NaN at step 3 and that honours STOP at a step boundary, as engines do."""

    engine_name = "nan"
    uses_local_slot = False

    def _train(self) -> str:
        for step in range(1, 200):
            self.run.append_metrics(step, {"loss": float("nan") if step >= 3 else 0.1, "reward": 0.2})
            self.run.write_status(step=step)
            if self.run.stop_requested():
                return STOPPED
            time.sleep(0.05)
        return "finished"


def test_a_loss_that_is_not_finite_stops_the_run_with_that_cause(tmp_path):
    p = NanLoss(str(tmp_path / "runs"))
    p.spec = {"config": {"diagnostics": {"poll_seconds": 0.1}}}
    assert p.train() == FAILED
    status = p.run.read_status()
    assert status["state"] == FAILED and status["cause"] == "loss_not_finite"
    assert status["step"] < 100  # stopped, not run to the end
    found = diagnoses(p.run)
    assert [e["code"] for e in found if e["state"] == "active"] == ["loss_not_finite"]
    assert found[0]["evidence"]["loss"] == "nan/inf" and found[0]["step"] >= 3
    failed = [e for e in p.run.read_jsonl("events.jsonl") if e["event"] == "failed"]
    assert failed[-1]["cause"] == "loss_not_finite"


def test_diagnostics_off_in_the_config_writes_none(tmp_path):
    p = NanLoss(str(tmp_path / "runs"))
    p.spec = {"config": {"diagnostics": {"enabled": False}}}
    p.run.request_stop("test")  # the engine stops at its first step boundary
    assert p.train() == STOPPED and diagnoses(p.run) == []


def test_the_healthy_demo_run_has_no_diagnosis(trained_letters):
    run = trained_letters.train_processor.run
    assert set(CODES) and [e["code"] for e in diagnoses(run)] == []
    assert run.read_status()["state"] == "finished"
