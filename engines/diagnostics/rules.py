"""The diagnoses as pure functions of what a run has logged: each rule takes the train rows of
metrics.jsonl (oldest first), the evaluation rows, the :class:`~.thresholds.Thresholds` and a
:class:`Context`, and returns its evidence (a small dict) when the problem shows, else None.

The keys read are the run directory's canonical names plus the keys TRL and ms-swift both log
(``frac_reward_zero_std``, ``completions/clipped_ratio``, ``rewards/<term>/std``, ``tools/*``); an
engine that does not log a key simply never produces the diagnosis that needs it (docs/DIAGNOSTICS.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..runs.rundir import EVAL_REWARD, GRAD_NORM, KL, LOSS, REWARD, REWARD_STD

ZERO_STD, CLIPPED = "frac_reward_zero_std", "completions/clipped_ratio"
TOOL_CALLS, TOOL_FAILURES = "tools/call_frequency", "tools/failure_frequency"
#: peak memory per step and the device's limit, in GiB: our trl engine's keys, then verl's and ms-swift's
MEMORY_KEYS = ("memory/peak_gb", "perf/max_memory_allocated_gb", "memory(GiB)")
MEMORY_LIMIT = "memory/limit_gb"
TINY = 1e-9

Rows = list[dict[str, Any]]
Evidence = Optional[dict[str, Any]]


@dataclass
class Context:
    """What the rules know besides the metrics: the reward's maximum so far (any completion's),
    the run's last step and the config's completion length."""

    best_reward: float | None = None
    total_steps: int | None = None
    max_completion_length: int | None = None
    memory_limit_gb: float | None = None
    active: frozenset[str] = frozenset()  # the diagnoses active now (a rule may hold one until it has clearly gone)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _last(rows: Rows, key: str, n: int) -> list[tuple[int, float]]:
    """The last ``n`` (step, value) of ``key`` (finite values only); fewer when the run has fewer."""
    out = [(r["step"], v) for r in rows if (v := _num(r.get(key))) is not None and math.isfinite(v)]
    return out[-n:]


def _round(values: list[float]) -> list[float]:
    return [round(v, 4) for v in values]


def _learned(rows: Rows, t, ctx: Context) -> bool:
    """The reward climbed to near its maximum (within ``flat_below_max``): groups without spread are then
    groups the model solves, which is reward_saturated's business, not a missing signal."""
    top = t.reward_max if t.reward_max is not None else ctx.best_reward
    rewards = [v for _, v in _last(rows, REWARD, len(rows))]
    if top is None or not rewards:
        return False
    near = top - t.flat_below_max * max(abs(top), 1.0)
    return rewards[-1] >= near and min(rewards) < near


def _terms(rows: Rows) -> list[str]:
    """The reward's terms the newest row logs (``rewards/<term>/std``: each term's spread over the whole batch,
    every prompt's completions together, as TRL and ms-swift log it)."""
    return sorted(
        {
            k[len("rewards/") : -len("/std")]
            for r in rows[-1:]
            for k in r
            if k.startswith("rewards/") and k.endswith("/std")
        }
    )


def _constant_terms(rows: Rows, n: int) -> dict[str, float]:
    """{term: value} of each term that gave every sample of the batch one value, the same at each of the last
    ``n`` logged steps."""
    constant = {}
    for term in _terms(rows):
        stds = _last(rows, f"rewards/{term}/std", n)
        means = _last(rows, f"rewards/{term}/mean", n)
        if (
            len(stds) == len(means) == n
            and all(v <= TINY for _, v in stds)
            and max(v for _, v in means) - min(v for _, v in means) <= TINY
        ):
            constant[term] = round(means[-1][1], 4)
    return constant


def reward_constant(rows: Rows, evals: Rows, t, ctx: Context) -> Evidence:
    """Every term of the reward (the one term, or each of a mix) gave every completion of every prompt the same
    value over ``zero_spread_steps`` logged steps: the reward itself is a constant, which no number of generations
    or temperature can spread (no_reward_spread yields to it)."""
    terms = _terms(rows)
    constant = _constant_terms(rows, t.zero_spread_steps)
    if not terms or set(constant) != set(terms):
        return None
    reward = _last(rows, REWARD, 1)
    return {"reward": round(reward[-1][1], 4) if reward else None, "terms": constant}


def no_reward_spread(rows: Rows, evals: Rows, t, ctx: Context) -> Evidence:
    if _learned(rows, t, ctx) or reward_constant(rows, evals, t, ctx):
        return None
    tail = _last(rows, ZERO_STD, t.zero_spread_steps)
    if len(tail) == t.zero_spread_steps and all(v >= t.zero_spread_fraction for _, v in tail):
        return {"zero_spread_groups": _round([v for _, v in tail]), "steps": [s for s, _ in tail]}
    if not any(ZERO_STD in r for r in rows):  # an engine without the per-group share: the batch's spread
        tail = _last(rows, REWARD_STD, t.zero_spread_steps)
        if len(tail) == t.zero_spread_steps and all(v <= TINY for _, v in tail):
            return {"reward_std": [v for _, v in tail], "steps": [s for s, _ in tail]}
    return None


def _near_max(value: float, top: float, margin: float) -> bool:
    return value >= top - margin * max(abs(top), 1.0)


def reward_saturated(rows: Rows, evals: Rows, t, ctx: Context) -> Evidence:
    top = t.reward_max if t.reward_max is not None else ctx.best_reward
    tail = _last(rows, REWARD, t.saturated_steps)
    if top is None or len(tail) < t.saturated_steps or not all(_near_max(v, top, t.saturated_margin) for _, v in tail):
        return None
    spread = _last(rows, ZERO_STD, t.saturated_steps)
    if spread and not all(v >= t.zero_spread_fraction for _, v in spread):
        return None  # some groups still score differently: there is something left to learn
    if all(_near_max(v, top, t.saturated_margin) for _, v in _last(rows, REWARD, len(rows))):
        return None  # never below the maximum: a constant reward (no_reward_spread says so), not a climb
    return {"reward": round(tail[-1][1], 4), "maximum": round(top, 4), "since_step": tail[0][0]}


def reward_flat(rows: Rows, evals: Rows, t, ctx: Context) -> Evidence:
    tail = _last(rows, REWARD, t.flat_window)
    if len(tail) < t.flat_window:
        return None
    third = max(1, len(tail) // 3)
    first = sum(v for _, v in tail[:third]) / third
    last = sum(v for _, v in tail[-third:]) / third
    if abs(last - first) >= t.flat_min_change or reward_saturated(rows, evals, t, ctx):
        return None
    top = t.reward_max if t.reward_max is not None else ctx.best_reward
    if top is not None and last > top - t.flat_below_max * max(abs(top), 1.0):
        return None  # near the maximum: it has learned (reward_saturated covers sitting at it)
    return {
        "reward_first": round(first, 4),
        "reward_last": round(last, 4),
        "from_step": tail[0][0],
        "to_step": tail[-1][0],
        "min_change": t.flat_min_change,
    }


def completions_truncated(rows: Rows, evals: Rows, t, ctx: Context) -> Evidence:
    if ctx.max_completion_length is not None and ctx.max_completion_length < t.truncated_min_length:
        return None
    tail = _last(rows, CLIPPED, t.truncated_steps)
    if len(tail) == t.truncated_steps and all(v >= t.truncated_fraction for _, v in tail):
        return {"truncated_share": _round([v for _, v in tail]), "max_completion_length": ctx.max_completion_length}
    return None


def kl_high(rows: Rows, evals: Rows, t, ctx: Context) -> Evidence:
    """Starts when the KL stays over the bound and rises over ``kl_steps`` logged steps; once active it holds while
    the latest KL is over the bound (a KL that levels off high is no better), so it does not flap with each dip."""
    tail = _last(rows, KL, t.kl_steps)
    if "kl_high" in ctx.active and tail and tail[-1][1] > t.kl_bound:
        return {"kl": _round([v for _, v in tail]), "bound": t.kl_bound}
    if len(tail) == t.kl_steps and all(v > t.kl_bound for _, v in tail) and tail[-1][1] > tail[0][1]:
        return {"kl": _round([v for _, v in tail]), "bound": t.kl_bound}
    return None


def loss_not_finite(rows: Rows, evals: Rows, t, ctx: Context) -> Evidence:
    """The newest row's loss or grad norm is NaN/inf (written as null: JSON has neither)."""
    for row in reversed(rows):
        keys = [k for k in (LOSS, GRAD_NORM) if k in row]
        if not keys:
            continue
        bad = {k: row[k] for k in keys if (v := _num(row[k])) is None or not math.isfinite(v)}
        return {"step": row["step"], **{k: "nan/inf" for k in bad}} if bad else None
    return None


def _train_reward(rows: Rows, lo: int, hi: int) -> float | None:
    values = [v for s, v in _last(rows, REWARD, len(rows)) if lo < s <= hi]
    return sum(values) / len(values) if values else None


def eval_diverges(rows: Rows, evals: Rows, t, ctx: Context) -> Evidence:
    """The held-out reward fell at each of the last ``diverge_evals`` evaluations while the train
    reward (mean since the evaluation before) rose."""
    held = _last(evals, EVAL_REWARD, t.diverge_evals + 1)
    if len(held) < t.diverge_evals + 1:
        return None
    train = []
    for (s0, v0), (s1, v1) in zip(held, held[1:]):
        now = _train_reward(rows, s0, s1)
        before = _train_reward(rows, s0 - (s1 - s0), s0)
        if now is None or before is None or not (v1 < v0 and now > before):
            return None
        train.append(round(now, 4))
    return {"eval_steps": [s for s, _ in held], "held_out_reward": _round([v for _, v in held]), "train_reward": train}


def reward_term_constant(rows: Rows, evals: Rows, t, ctx: Context) -> Evidence:
    """One term of a mix (two terms or more) gave every sample the same value, step after step (every term
    constant: the whole reward is, and reward_constant says so)."""
    terms = _terms(rows)
    if len(terms) < 2:
        return None
    constant = _constant_terms(rows, t.term_constant_steps)
    if not constant or set(constant) == set(terms):
        return None
    return {"terms": constant}


def _memory(rows: Rows, n: int) -> tuple[str, list[tuple[int, float]]]:
    for key in MEMORY_KEYS:
        tail = _last(rows, key, n)
        if tail:
            return key, tail
    return "", []


def memory_rising(rows: Rows, evals: Rows, t, ctx: Context) -> Evidence:
    """Peak memory grew at most steps of the window and, at its fitted rate, reaches the limit
    within ``memory_horizon_steps`` and before the run's last step."""
    key, tail = _memory(rows, t.memory_window)
    limit = next((v for r in reversed(rows) if (v := _num(r.get(MEMORY_LIMIT)))), None) or ctx.memory_limit_gb
    if len(tail) < t.memory_window or not limit:
        return None
    ups = sum(b > a for (_, a), (_, b) in zip(tail, tail[1:]))
    if ups < t.memory_rising_share * (len(tail) - 1):
        return None
    n = len(tail)
    ms, mv = sum(s for s, _ in tail) / n, sum(v for _, v in tail) / n
    var = sum((s - ms) ** 2 for s, _ in tail)
    slope = sum((s - ms) * (v - mv) for s, v in tail) / var if var else 0.0
    if slope <= 0:
        return None
    step, now = tail[-1]
    out_at = step + math.ceil(max(0.0, limit - now) / slope)
    if out_at - step > t.memory_horizon_steps or (ctx.total_steps and out_at > ctx.total_steps):
        return None
    return {
        "peak_gib": round(now, 3),
        "limit_gib": round(limit, 3),
        "gib_per_step": round(slope, 5),
        "out_of_memory_at_step": out_at,
        "key": key,
    }


def tools_unused(rows: Rows, evals: Rows, t, ctx: Context) -> Evidence:
    calls = _last(rows, TOOL_CALLS, t.tools_steps)
    if len(calls) == t.tools_steps and all(v <= TINY for _, v in calls):
        return {"tool_calls_per_completion": 0.0, "steps": [s for s, _ in calls]}
    failures = _last(rows, TOOL_FAILURES, t.tools_steps)
    if len(failures) == t.tools_steps and all(v >= t.tools_failure_fraction for _, v in failures):
        return {"failing_share": _round([v for _, v in failures]), "steps": [s for s, _ in failures]}
    return None


#: every rule by its code (the order the studio lists active ones in)
RULES: dict[str, Callable[..., Evidence]] = {
    "loss_not_finite": loss_not_finite,
    "reward_constant": reward_constant,
    "no_reward_spread": no_reward_spread,
    "reward_flat": reward_flat,
    "reward_saturated": reward_saturated,
    "completions_truncated": completions_truncated,
    "kl_high": kl_high,
    "eval_diverges": eval_diverges,
    "reward_term_constant": reward_term_constant,
    "memory_rising": memory_rising,
    "tools_unused": tools_unused,
}
