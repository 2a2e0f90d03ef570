"""The trl engine writes whole GRPO prompt groups to samples.jsonl (engines/runs/sample_groups.py): a real
tiny run on CPU, a mix of two reward terms (one graded, so groups have spread), checked against TRL's formula:
advantage = (total - group mean) / (group std + 1e-4) under ``scale_rewards: group`` (TRL's default), and
total - group mean under ``none``."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

import pytest

from engines import AgentTrainer
from engines.runs.sample_groups import logged_group_steps, step_groups, summary_of, zero_spread

ROOT = Path(__file__).resolve().parent.parent
LETTER = str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward"
GRADED = "def graded(completions, **kw):\n    return [len(str(c)) % 7 / 7.0 for c in completions]\n"
G, PROMPTS, GROUPS = 4, 3, 2  # num_generations, prompts_per_step, samples_per_step (groups written per step)


def run_groups(tmp_path, scale_rewards: str):
    graded = tmp_path / "graded.py"
    graded.write_text(GRADED)
    config = {
        "max_steps": 2,
        "learning_rate": 1e-3,
        "prompts_per_step": PROMPTS,
        "num_generations": G,
        "save_steps": 100,
        "eval_steps": 0,
        "samples_per_step": GROUPS,
        "temperature": 1.5,
        "scale_rewards": scale_rewards,
    }
    trainer = AgentTrainer(
        agent=str(ROOT / "assets/agents/letters_agent.yaml"),
        train_dataset=str(ROOT / "assets/datasets/letters_train.jsonl"),
        reward_func=[{"ref": LETTER, "weight": 1.0}, {"ref": f"{graded}:graded", "weight": 0.5}],
        config=config,
        run_path=str(tmp_path / "runs"),
        train_engine_name="trl",
    )
    assert trainer.train() == "finished"
    run = trainer.train_processor.run
    return run, run.read_jsonl("samples.jsonl"), run.read_jsonl("metrics.jsonl")


@pytest.mark.parametrize("scale_rewards", ["group", "none"])
def test_each_logged_step_has_whole_groups_with_trl_advantages(tmp_path, scale_rewards):
    run, samples, metrics = run_groups(tmp_path, scale_rewards)
    assert logged_group_steps(run.file("samples.jsonl")) == [1, 2]
    by_step = defaultdict(list)
    for s in samples:
        by_step[s["step"]].append(s)
    for step, rows in by_step.items():
        assert len(rows) == GROUPS * G, f"step {step}: {len(rows)} rows, not {GROUPS} whole groups of {G}"
        groups = step_groups(run.file("samples.jsonl"), step)
        assert [[r["group"] for r in g] for g in groups] == [[0] * G, [1] * G]
        for g in groups:
            assert len({str(r["prompt"]) for r in g}) == 1, "a group is one prompt's completions"
            totals = [r["reward"] for r in g]
            for r in g:
                assert set(r["rewards"]) == {"letter_reward", "graded"} and r["group_size"] == G
                assert r["reward"] == pytest.approx(r["rewards"]["letter_reward"] + 0.5 * r["rewards"]["graded"])
            mean, std = statistics.mean(totals), statistics.stdev(totals)
            want = [(t - mean) / (std + 1e-4) if scale_rewards == "group" else t - mean for t in totals]
            assert [r["advantage"] for r in g] == pytest.approx(want, abs=1e-4), (step, totals)
            assert sum(r["advantage"] for r in g) == pytest.approx(0.0, abs=1e-4)
        summary, from_engine = summary_of(groups)
        assert from_engine and summary["groups"] == PROMPTS and summary["group_size"] == G
        assert len(summary["rewards"]) == PROMPTS * G  # every completion of the step, not only the groups written
        logged = [m for m in metrics if m["step"] == step and "frac_reward_zero_std" in m]
        assert summary["zero_spread"] / summary["groups"] == pytest.approx(logged[0]["frac_reward_zero_std"])
        assert sum(zero_spread(r["reward"] for r in g) for g in groups) <= summary["zero_spread"]
    assert any(
        not zero_spread(r["reward"] for r in g)
        for step in by_step
        for g in step_groups(run.file("samples.jsonl"), step)
    )
