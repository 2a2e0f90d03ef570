"""What the probe's samples say, as pure functions of them (plain dicts: ``row``, ``reward``, ``rewards``, ``tokens``,
``truncated``, ``tool_calls``, ``tool_errors``, ``turns``): each prompt's pass rate and mean reward, the groups whose
rewards are all equal now and at larger groups, truncation and lengths, each reward term, tool use."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

HISTOGRAM_BINS = 10
#: the share of completions a length limit may cut
CUT_SHARE = 0.05
ZERO_SPREAD_METHOD = {
    "binary": "each prompt's pass rate p over its k samples, samples taken as independent: P(all n equal) = "
    "p^n + (1-p)^n",
    "resampled": "each prompt's k rewards taken as its distribution (resampling with replacement): P(all n equal) = "
    "the sum over its distinct rewards v of share(v)^n",
}


def by_prompt(samples: list[dict]) -> dict[int, list[dict]]:
    groups: dict[int, list[dict]] = {}
    for s in samples:
        groups.setdefault(int(s["row"]), []).append(s)
    return groups


def _equal(values: list[float]) -> bool:
    return all(math.isclose(v, values[0], rel_tol=1e-9, abs_tol=1e-12) for v in values)


def prompt_stats(samples: list[dict], pass_threshold: float) -> list[dict]:
    """One entry per prompt: its row, its samples' rewards, mean, pass rate (share at or above ``pass_threshold``),
    whether every reward is the same (a group without spread)."""
    out = []
    for row, group in sorted(by_prompt(samples).items()):
        rewards = [float(s["reward"]) for s in group]
        out.append(
            {
                "row": row,
                "rewards": rewards,
                "mean": sum(rewards) / len(rewards),
                "pass_rate": sum(r >= pass_threshold for r in rewards) / len(rewards),
                "all_equal": _equal(rewards),
            }
        )
    return out


def histogram(values: list[float], lo: float, hi: float, bins: int = HISTOGRAM_BINS) -> dict[str, Any]:
    if hi <= lo:
        hi = lo + 1.0
    width = (hi - lo) / bins
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int((v - lo) / width)))] += 1
    return {"edges": [round(lo + i * width, 6) for i in range(bins + 1)], "counts": counts}


def pass_rates(prompts: list[dict], pass_threshold: float) -> dict[str, Any]:
    means = [p["mean"] for p in prompts]
    n = max(1, len(prompts))
    lo = min([0.0, *means])
    hi = max([pass_threshold, *means])
    return {
        "prompts": len(prompts),
        "pass_threshold": pass_threshold,
        "mean_reward": sum(means) / n,
        "histogram": histogram(means, lo, hi),
        "share_mean_at_zero": sum(math.isclose(m, 0.0, abs_tol=1e-12) for m in means) / n,
        "share_pass_rate_zero": sum(p["pass_rate"] == 0 for p in prompts) / n,
        "share_pass_rate_one": sum(p["pass_rate"] == 1 for p in prompts) / n,
    }


def all_equal_probability(rewards: list[float], n: int) -> float:
    """P(``n`` draws from these rewards' empirical distribution are all equal)."""
    counts = Counter(round(r, 9) for r in rewards)
    return sum((c / len(rewards)) ** n for c in counts.values())


def zero_spread(prompts: list[dict], samples: list[dict], k: int, group: int | None = None) -> dict[str, Any]:
    """The share of prompt groups whose rewards are all equal at this group size (observed), and estimated at 2k
    and 4k (and at the config's ``group`` when it is another); which estimate is said in ``method``."""
    values = {round(float(s["reward"]), 9) for s in samples}
    method = "binary" if len(values) <= 2 else "resampled"
    n = max(1, len(prompts))
    estimates = {}
    for size in sorted({2 * k, 4 * k} | ({group} if group and group != k else set())):
        if method == "binary":
            hi = max(values) if values else 1.0
            total = 0.0
            for p in prompts:
                q = sum(math.isclose(r, hi, abs_tol=1e-9) for r in p["rewards"]) / len(p["rewards"])
                total += q**size + (1 - q) ** size
        else:
            total = sum(all_equal_probability(p["rewards"], size) for p in prompts)
        estimates[str(size)] = total / n
    return {
        "group_size": k,
        "observed": sum(p["all_equal"] for p in prompts) / n,
        "estimated": estimates,
        "method": method,
        "how": ZERO_SPREAD_METHOD[method] + "; a prompt all of whose k samples were equal stays so at any n",
    }


def percentile(sorted_values: list[int], q: float) -> int:
    if not sorted_values:
        return 0
    return sorted_values[min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))]


def lengths(samples: list[dict], limit: int) -> dict[str, Any]:
    """Completion lengths in tokens, the share cut at ``limit`` (max_completion_length), and the smallest length
    that would cut fewer than 5 % (None when more than that already reach the limit: not knowable here)."""
    tokens = sorted(int(s["tokens"]) for s in samples)
    n = max(1, len(tokens))
    truncated = sum(bool(s["truncated"]) for s in samples) / n
    cut_below = None
    if truncated < CUT_SHARE:
        allowed = math.floor(CUT_SHARE * len(tokens) - 1e-9) if tokens else 0  # completions it may cut
        cut_below = tokens[len(tokens) - 1 - allowed] if tokens else 0
        cut_below = max(1, min(cut_below, limit))
    return {
        "max_completion_length": limit,
        "truncated_share": truncated,
        "mean": sum(tokens) / n,
        "min": tokens[0] if tokens else 0,
        "p50": percentile(tokens, 0.5),
        "p90": percentile(tokens, 0.9),
        "p95": percentile(tokens, 0.95),
        "max": tokens[-1] if tokens else 0,
        "histogram": histogram([float(t) for t in tokens], 0.0, float(limit)),
        "length_cutting_under_5_percent": cut_below,
    }


def terms(samples: list[dict], names: list[str]) -> dict[str, dict]:
    """Each reward term's mean, standard deviation, range over every sample; ``constant`` when it never varied."""
    out = {}
    for name in names:
        values = [float(v) for s in samples if (v := (s.get("rewards") or {}).get(name)) is not None]
        if not values:
            out[name] = {"samples": 0, "constant": False}
            continue
        mean = sum(values) / len(values)
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        out[name] = {
            "samples": len(values),
            "mean": mean,
            "std": std,
            "min": min(values),
            "max": max(values),
            "constant": _equal(values),
        }
    return out


def tool_use(samples: list[dict], max_turns: int) -> dict[str, Any]:
    n = max(1, len(samples))
    calls = sum(int(s.get("tool_calls") or 0) for s in samples)
    errors = sum(int(s.get("tool_errors") or 0) for s in samples)
    turns = [int(s.get("turns") or 1) for s in samples]
    return {
        "calls_per_rollout": calls / n,
        "rollouts_with_a_call": sum(bool(s.get("tool_calls")) for s in samples) / n,
        "failing_share": errors / calls if calls else 0.0,
        "turns_mean": sum(turns) / n,
        "max_turns": max_turns,
        "share_at_max_turns": sum(t >= max_turns for t in turns) / n,
    }
