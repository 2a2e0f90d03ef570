"""Each diagnosis rule on synthetic metric series: it shows on the series that has the problem and not
on a healthy one; the watcher writes one event when a problem starts and one when it clears."""

from __future__ import annotations

import math

import pytest

from engines.results.check_result import CheckError
from engines.core.run_settings import split_run_settings
from engines.diagnostics import CODES
from engines.diagnostics.advice import ADVICE
from engines.diagnostics.reading import active_diagnoses
from engines.diagnostics.rules import RULES, Context
from engines.diagnostics.thresholds import thresholds
from engines.diagnostics.watcher import Diagnoser
from engines.runs.rundir import RunDir

T = thresholds(None)


def healthy(n: int = 60) -> list[dict]:
    """A run that learns: reward climbs with spread, KL small, completions end before the limit."""
    return [
        {
            "step": s,
            "loss": 0.01,
            "grad_norm": 0.5,
            "reward": 0.1 + 0.8 * s / n,
            "reward_std": 0.3,
            "frac_reward_zero_std": 0.1,
            "completions/clipped_ratio": 0.1,
            "kl": 0.01 * s,
            "rewards/a/mean": 0.5 + s / 1000,
            "rewards/a/std": 0.2,
            "rewards/b/mean": 0.3,
            "rewards/b/std": 0.1,
            "memory/peak_gb": 4.0 + (s % 2) * 0.01,
            "memory/limit_gb": 80.0,
            "tools/call_frequency": 1.2,
            "tools/failure_frequency": 0.0,
        }
        for s in range(1, n + 1)
    ]


def found(rows, evals=(), ctx=None, limits=T):
    ctx = ctx or Context(best_reward=max((r.get("reward") or 0) for r in rows), total_steps=1000)
    return {code for code, rule in RULES.items() if rule(rows, list(evals), limits, ctx) is not None}


def with_(rows, **changes):
    return [{**r, **{k: (v(r["step"]) if callable(v) else v) for k, v in changes.items()}} for r in rows]


def test_every_code_of_the_issue_has_a_rule_and_advice():
    assert (
        set(RULES)
        == set(CODES)
        == {
            "reward_constant",
            "no_reward_spread",
            "reward_flat",
            "reward_saturated",
            "completions_truncated",
            "kl_high",
            "loss_not_finite",
            "eval_diverges",
            "reward_term_constant",
            "memory_rising",
            "tools_unused",
        }
    )


def test_a_healthy_run_has_no_diagnosis():
    assert found(healthy()) == set()


@pytest.mark.parametrize(
    "code, changes",
    [
        ("no_reward_spread", {"frac_reward_zero_std": 1.0, "reward": 0.3}),
        ("completions_truncated", {"completions/clipped_ratio": 0.9}),
        ("kl_high", {"kl": lambda s: 1.0 + s / 10}),
        ("loss_not_finite", {"loss": None}),
        ("reward_term_constant", {"rewards/b/std": 0.0}),
        ("memory_rising", {"memory/peak_gb": lambda s: 4.0 + s}),
        ("tools_unused", {"tools/call_frequency": 0.0}),
        ("tools_unused", {"tools/failure_frequency": 0.8}),
    ],
)
def test_each_problem_shows_its_code(code, changes):
    assert code in found(with_(healthy(), **changes))


def test_a_flat_reward_is_reward_flat_and_one_without_spread_is_no_spread_not_saturated():
    flat = with_(healthy(120), reward=lambda s: 0.4 + 0.001 * math.sin(s))
    assert "reward_flat" in found(flat, ctx=Context(best_reward=1.0))  # a completion once scored 1.0
    # each group's completions score alike, the prompts apart (rewards/<term>/std is the batch's spread)
    no_spread = with_(healthy(), reward=0.5, reward_std=0.0, frac_reward_zero_std=1.0)
    assert found(no_spread) == {"no_reward_spread"}  # not saturated: it never climbed to its maximum


def constant_reward(terms: dict[str, float], n: int = 60) -> list[dict]:
    """A reward whose every term gives every completion of every prompt one value, at every step."""
    rows = [{k: v for k, v in r.items() if not k.startswith("rewards/")} for r in healthy(n)]
    per_term = {f"rewards/{t}/{k}": (v if k == "mean" else 0.0) for t, v in terms.items() for k in ("mean", "std")}
    return with_(rows, reward=sum(terms.values()), reward_std=0.0, frac_reward_zero_std=1.0, **per_term)


@pytest.mark.parametrize("terms", [{"same": 0.5}, {"same": 0.5, "zero": 0.0}])
def test_a_constant_reward_is_named_as_such_and_advises_no_setting(terms):
    """Issue 42 item 6: more generations cannot spread a constant, so a reward that gives every completion of
    every prompt one value is reward_constant (naming its terms), neither no_reward_spread (which advised
    num_generations) nor reward_term_constant (which is about one term of a mix that varies)."""
    rows = constant_reward(terms)
    assert found(rows) == {"reward_constant"}
    assert RULES["reward_constant"](rows, [], T, Context()) == {"reward": 0.5, "terms": terms}
    assert ADVICE["reward_constant"].setting is None and "num_generations" not in ADVICE["reward_constant"].title


def test_a_reward_constant_for_a_while_then_varying_is_no_longer_constant():
    rows = constant_reward({"same": 0.5})
    varied = with_(rows, **{"rewards/same/std": lambda s: 0.2 if s == 59 else 0.0})
    assert "reward_constant" not in found(varied) and "no_reward_spread" in found(varied)
    moving = with_(rows, **{"rewards/same/mean": lambda s: 0.5 + (s == 60) * 0.1})
    assert "reward_constant" not in found(moving)
    assert "reward_constant" in found(rows, limits=thresholds({"zero_spread_steps": 60}))
    assert "reward_constant" not in found(varied, limits=thresholds({"zero_spread_steps": 60}))


def test_a_reward_that_climbed_to_its_maximum_is_saturated_not_flat():
    rows = with_(healthy(), reward=lambda s: min(1.0, s / 20), frac_reward_zero_std=lambda s: 1.0 if s >= 20 else 0.2)
    codes = found(rows)
    assert "reward_saturated" in codes and "reward_flat" not in codes


def test_eval_diverges_needs_the_held_out_reward_down_while_the_train_reward_rises():
    evals = [{"step": s, "eval/reward": v} for s, v in ((10, 0.6), (20, 0.5), (30, 0.4))]
    assert "eval_diverges" in found(healthy(), evals)
    rising = [{"step": s, "eval/reward": v} for s, v in ((10, 0.4), (20, 0.5), (30, 0.4))]
    assert "eval_diverges" not in found(healthy(), rising)


def test_memory_rising_predicts_the_step_it_runs_out_and_ignores_a_far_one():
    rows = with_(healthy(), **{"memory/peak_gb": lambda s: 4.0 + s})
    evidence = RULES["memory_rising"](rows, [], T, Context(total_steps=1000))
    assert evidence["out_of_memory_at_step"] == 60 + 16  # 64 GiB at step 60, +1 GiB/step to 80 GiB
    slow = with_(healthy(), **{"memory/peak_gb": lambda s: 4.0 + s * 1e-3})
    assert RULES["memory_rising"](slow, [], T, Context(total_steps=1000)) is None


def test_thresholds_come_from_the_config_and_unknown_keys_are_refused():
    rows = with_(healthy(), frac_reward_zero_std=0.8, reward=0.3)
    assert "no_reward_spread" in found(rows)
    assert "no_reward_spread" not in found(rows, limits=thresholds({"zero_spread_fraction": 0.9}))
    with pytest.raises(CheckError, match="kl_bund.*did you mean"):
        split_run_settings({"max_steps": 3, "diagnostics": {"kl_bund": 2}})
    assert split_run_settings({"max_steps": 3, "diagnostics": {"kl_bound": 2}}) == (
        {"diagnostics": {"kl_bound": 2}},
        {"max_steps": 3},
    )


def test_the_watcher_writes_one_event_at_start_and_one_at_clear(tmp_path):
    run = RunDir.create(tmp_path, "fake")
    run.write_spec({"config": {"max_completion_length": 8}})
    lines: list[str] = []
    d = Diagnoser(run, log=lines.append)
    rows = with_(healthy(20), reward=0.3)
    for r in rows[:10]:
        run.append_metrics(r["step"], {**r, "frac_reward_zero_std": 1.0})
    assert [e["code"] for e in d.poll()] == ["no_reward_spread"]
    for r in rows[10:15]:
        run.append_metrics(r["step"], {**r, "frac_reward_zero_std": 1.0})
    assert d.poll() == []  # still active: no second event
    for r in rows[15:]:
        run.append_metrics(r["step"], r)
    assert [(e["code"], e["state"]) for e in d.poll()] == [("no_reward_spread", "cleared")]
    events = [e for e in run.read_jsonl("events.jsonl") if e.get("type") == "diagnosis"]
    assert [(e["state"], e["step"]) for e in events] == [("active", 10), ("cleared", 20)]
    assert "num_generations" in events[0]["advice"] and events[0]["evidence"]["zero_spread_groups"]
    assert active_diagnoses(events[:1]) == events[:1] and active_diagnoses(events) == []
    assert any(line.startswith("diagnosis no_reward_spread since step 10") for line in lines)


def test_a_short_answer_task_is_not_truncated_and_a_learned_plateau_is_not_flat():
    cut = with_(healthy(), **{"completions/clipped_ratio": 1.0})
    assert "completions_truncated" in found(cut, ctx=Context(best_reward=1.0, max_completion_length=256))
    assert "completions_truncated" not in found(cut, ctx=Context(best_reward=1.0, max_completion_length=2))
    plateau = with_(healthy(120), reward=lambda s: 0.9 + 0.001 * math.sin(s))
    assert "reward_flat" not in found(plateau, ctx=Context(best_reward=1.0))
    assert "reward_flat" in found(with_(plateau, reward=lambda s: 0.3), ctx=Context(best_reward=1.0))


def test_a_bad_diagnostics_mapping_that_reached_a_run_falls_back_to_the_defaults(tmp_path):
    """An engine whose own config check let a misspelt key through must not fail its run over it."""
    from engines.diagnostics.watcher import run_thresholds

    assert run_thresholds({"config": {"diagnostics": {"kl_bound": 3}}}).kl_bound == 3
    assert run_thresholds({"config": {"diagnostics": {"kl_bund": 3}}}) == thresholds(None)


def test_groups_without_spread_because_the_model_solves_them_are_not_no_reward_spread():
    """The letters demo's last steps: reward 0.97, 75 % of the groups all correct."""
    solved = with_(healthy(), reward=lambda s: min(0.97, 0.1 + s / 40), frac_reward_zero_std=0.8)
    assert "no_reward_spread" not in found(solved, ctx=Context(best_reward=1.0))
    stuck = with_(healthy(), reward=lambda s: 0.1, frac_reward_zero_std=0.8)
    assert "no_reward_spread" in found(stuck, ctx=Context(best_reward=1.0))


def test_kl_high_holds_through_a_dip_and_clears_below_its_bound(tmp_path):
    """Issue 33: kl_high had no hysteresis — it needs the KL rising over kl_steps to start, and cleared at the first
    dip while the KL stayed far over the bound, then started again: an event pair per wobble. Once active it holds
    while the KL is over the bound, and clears when the KL is back under it."""
    run = RunDir.create(tmp_path, "fake")
    run.write_spec({"config": {}})
    d = Diagnoser(run, log=lambda line: None)
    bound = T.kl_bound
    kls = [bound * (1.5 + 0.1 * i) for i in range(T.kl_steps)]  # over the bound and rising
    kls += [bound * 2.0, bound * 1.6, bound * 2.1, bound * 1.7]  # over it, wobbling: no longer rising overall
    kls += [bound * 0.5]  # back under the bound
    events = []
    for step, kl in enumerate(kls, start=1):
        row = {**healthy(step)[-1], "kl": kl}
        run.append_metrics(step, row)
        events += [(e["code"], e["state"], e["step"]) for e in d.poll() if e["code"] == "kl_high"]
    assert events == [("kl_high", "active", T.kl_steps), ("kl_high", "cleared", len(kls))]


def test_a_divergence_between_two_polls_is_said_whatever_the_polls_pace(tmp_path):
    """The trained demo taught a loophole (tests/test_diagnostics_runs.py) trains 40 steps in about 4 s: the held-out
    reward fell at two evaluations (1.0, 0.75, 0.125) and was level at the next two. A watcher that looked only at
    what the run is when it polls saw a divergence only if a poll fell between steps 32 and 36; on CI's machine none
    did. One poll that reads the whole run now says it started at step 32 and cleared at 36."""
    run = RunDir.create(tmp_path, "fake")
    run.write_spec({"config": {}})
    held_out = {24: 1.0, 28: 0.75, 32: 0.125, 36: 0.125, 40: 0.125}
    for step, row in enumerate(healthy(40), start=1):
        run.append_metrics(step, row)  # the train reward rises at every step
        if step in held_out:
            run.append_metrics(step, {"eval/reward": held_out[step]})
    events = Diagnoser(run, log=lambda line: None).poll()
    assert [(e["code"], e["state"], e["step"]) for e in events if e["code"] == "eval_diverges"] == [
        ("eval_diverges", "active", 32),
        ("eval_diverges", "cleared", 36),
    ]
    assert events[0]["evidence"]["held_out_reward"] == [1.0, 0.75, 0.125]
