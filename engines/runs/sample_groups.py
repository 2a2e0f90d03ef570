"""GRPO prompt groups in samples.jsonl: what an engine writes for a step, and how a reader gets them back.

A GRPO step samples ``group_size`` (= ``num_generations``) completions of each prompt and scores each one
against its own group (the advantage). An engine that knows the groups writes whole ones: every completion of
the first ``samples_per_step`` groups of the step, each row with

* ``group``: the group's index in the step's batch (unique within the step), ``group_size``;
* ``rewards`` (each term), ``reward`` (the weighted total) and, where the engine gives it, ``advantage``;

and the first row written for the step also carries ``step_groups``, the whole step's statistics (not only the
groups written): ``{"groups": N, "zero_spread": K, "group_size": G, "rewards": [every completion's total]}``.
A group has zero spread when every completion got the same total (TRL's ``frac_reward_zero_std`` counts them):
its advantages are all 0 and it gives GRPO no gradient.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable

ZERO_STD = 1e-8  # TRL: torch.isclose(std, 0) (atol 1e-8) marks a group without spread
HISTOGRAM_DIGITS = 4  # the step's rewards are kept rounded: a histogram needs no more


def _finite(values: Iterable[Any]) -> list[float]:
    return [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]


def group_std(values: Iterable[Any]) -> float | None:
    """The sample standard deviation of a group's totals (Bessel's correction, as TRL's ``nanstd``); None
    below two values."""
    xs = _finite(values)
    if len(xs) < 2:
        return None
    mean = sum(xs) / len(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


def zero_spread(values: Iterable[Any]) -> bool:
    """Every completion of the group got the same total (a group of one counts as such, as in TRL)."""
    std = group_std(values)
    return std is None or std <= ZERO_STD


def groups_summary(groups: list[list[Any]]) -> dict:
    """The statistics of a step's groups (each its completions' totals)."""
    return {
        "groups": len(groups),
        "zero_spread": sum(1 for g in groups if zero_spread(g)),
        "group_size": max((len(g) for g in groups), default=0),
        "rewards": [round(x, HISTOGRAM_DIGITS) for g in groups for x in _finite(g)],
    }


def step_summary(totals: list[Any], group_size: int) -> dict:
    """The step's statistics over all its whole groups (``totals`` in batch order, ``group_size`` each)."""
    size = max(1, int(group_size))
    return {
        **groups_summary([totals[i : i + size] for i in range(0, len(totals) - size + 1, size)]),
        "group_size": size,
    }


def groups_by_prompt(rows: list[dict], key: str = "prompt") -> list[list[dict]]:
    """Rows grouped by their prompt, in order of first appearance (for an engine whose rows carry no group
    id and may be reordered: two dataset rows with the same prompt text fall into one group)."""
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(json.dumps(row.get(key), sort_keys=True, default=str), []).append(row)
    return list(groups.values())


def grouped_rows(rows: list[dict], group_size: int, limit: int, summary: dict | None = None) -> list[dict]:
    """The rows of the first ``limit`` whole groups (``rows``: one per completion, in batch order), each with
    ``group`` and ``group_size``; the first also carries ``summary`` as ``step_groups``."""
    size = max(1, int(group_size))
    n = min(max(0, limit), len(rows) // size)
    return marked_groups([rows[g * size : (g + 1) * size] for g in range(n)], summary)


def marked_groups(groups: list[list[dict]], summary: dict | None = None) -> list[dict]:
    """The rows of ``groups`` in order, each with ``group`` (its group's index) and ``group_size``; the first
    also carries ``summary`` as ``step_groups``."""
    out = [{**row, "group": g, "group_size": len(rows)} for g, rows in enumerate(groups) for row in rows]
    if out and summary is not None:
        out[0]["step_groups"] = summary
    return out


# -- reading them back --------------------------------------------------------------------------------
def _rows(path: Path) -> Iterable[dict]:
    """samples.jsonl's rows that belong to a group (a line without ``"group"`` is not parsed)."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if '"group"' not in line:
                    continue
                try:
                    row = json.loads(line)
                except ValueError:  # a line being written
                    continue
                if isinstance(row, dict) and isinstance(row.get("group"), int) and isinstance(row.get("step"), int):
                    yield row
    except OSError:
        return


def logged_groups(path: str | Path, step: int | None = None) -> tuple[list[int], list[list[dict]]]:
    """One read of a samples.jsonl: (the steps with groups, in order; the groups of ``step`` — the last such
    step when None —, each its rows in order, by group id)."""
    steps: set[int] = set()
    kept: dict[int, list[dict]] = {}
    kept_step = step
    for row in _rows(Path(path)):
        steps.add(row["step"])
        if step is None and (kept_step is None or row["step"] > kept_step):
            kept_step, kept = row["step"], {}
        if row["step"] == kept_step:
            kept.setdefault(row["group"], []).append(row)
    return sorted(steps), [kept[g] for g in sorted(kept)]


def logged_group_steps(path: str | Path) -> list[int]:
    """The steps with groups in a samples.jsonl, in order."""
    return logged_groups(path)[0]


def step_groups(path: str | Path, step: int) -> list[list[dict]]:
    """The groups logged for ``step``, each its rows in order, by group id."""
    return logged_groups(path, step)[1]


def summary_of(groups: list[list[dict]]) -> tuple[dict, bool]:
    """The step's statistics: the engine's ``step_groups`` when written (True), else computed from the
    groups logged (False)."""
    for rows in groups:
        for row in rows:
            if isinstance(row.get("step_groups"), dict):
                return row["step_groups"], True
    return groups_summary([[r.get("reward") for r in rows] for rows in groups]), False
