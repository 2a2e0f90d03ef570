"""verl metric names → the studio's canonical metric names (pure functions, no verl import).

verl's ``file`` logger writes one JSON object per logged step to ``VERL_FILE_LOGGER_PATH``::

    {"step": 3, "data": {"actor/pg_loss": 0.12, "critic/score/mean": 0.5, ...}}

and its ``console`` logger prints the same values as ``step:3 - actor/pg_loss:0.12 - ...``
(numpy scalars as ``np.float32(0.5)``; Ray prefixes actor output with ``(TaskRunnerV1 pid=..)``).

:func:`normalize_record` turns one such record into a ``metrics.jsonl`` row: every original key
is kept and the canonical keys the studio plots (``reward``, ``loss``, ``kl``, ``lr``,
``completion_length``, ``step_time``, ...) are added next to them.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable

#: canonical name → verl keys, first present wins
CANONICAL: dict[str, tuple[str, ...]] = {
    "reward": ("critic/score/mean",),
    "reward_max": ("critic/score/max",),
    "reward_min": ("critic/score/min",),
    "loss": ("actor/pg_loss",),
    "kl": ("actor/kl_loss", "actor/reward_kl_penalty"),
    "lr": ("actor/lr",),
    "completion_length": ("response_length/mean",),
    "step_time": ("timing_s/step", "perf/time_per_step"),
    "grad_norm": ("actor/grad_norm",),
    "entropy": ("actor/entropy",),
    "epoch": ("training/epoch",),
    "num_turns": ("num_turns/mean", "training/num_turns/mean"),
    "tool_calls": ("tool_call_counts/mean",),
    "critic_loss": ("critic/vf_loss",),
}

# validation: val-core/<data_source>/<variable>/<metric>  (data_source may itself contain "/")
_VAL_RE = re.compile(r"^val-core/(?P<source>.+)/(?P<var>[^/]+)/(?P<metric>mean@\d+)$")


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    item = getattr(value, "item", None)  # numpy / torch scalars
    if callable(item):
        try:
            return item()
        except (TypeError, ValueError):
            return None
    return None


def canonical_values(data: dict[str, Any]) -> dict[str, Any]:
    """Only the canonical keys derived from one step's verl metrics."""
    out: dict[str, Any] = {}
    for name, sources in CANONICAL.items():
        for src in sources:
            if src in data and data[src] is not None:
                out[name] = data[src]
                break
    # eval/reward (as the TRL engine names it): the mean over data sources of verl's validation
    # reward, val-core/<source>/reward/mean@N ("acc" when a scorer returned a bare number)
    by_var: dict[str, list[float]] = {}
    for key, value in data.items():
        m = _VAL_RE.match(key)
        if m and isinstance(value, (int, float)) and not isinstance(value, bool):
            by_var.setdefault(m.group("var"), []).append(float(value))
    for var in ("reward", "acc", "score"):
        if by_var.get(var):
            out["eval/reward"] = sum(by_var[var]) / len(by_var[var])
            break
    return out


def normalize_record(record: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """``{"step": n, "data": {...}}`` → ``(n, {original keys..., canonical keys...})``.

    Also accepts a flat ``{"step": n, key: value, ...}``. Returns None for anything that is not
    a step record. Original keys are kept verbatim; a canonical key never overwrites one.
    """
    if not isinstance(record, dict) or "step" not in record:
        return None
    try:
        step = int(record["step"])
    except (TypeError, ValueError):
        return None
    data = record.get("data")
    if not isinstance(data, dict):
        data = {k: v for k, v in record.items() if k != "step"}
    values: dict[str, Any] = {}
    for key, value in data.items():
        num = _number(value)
        values[str(key)] = num if num is not None else value
    for key, value in canonical_values(values).items():
        values.setdefault(key, value)
    values.pop("time", None)  # the run dir writes its own timestamp
    return step, values


def normalize_records(records: Iterable[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for rec in records:
        row = normalize_record(rec)
        if row is not None:
            out.append(row)
    return out


# -- console lines ------------------------------------------------------------------------------
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
_RAY_PREFIX_RE = re.compile(r"^\s*\([^)]*pid=\d+[^)]*\)\s*")  # "(TaskRunnerV1 pid=123, ip=...) "
_STEP_RE = re.compile(r"^step:(\d+)(?:\s+-\s+|\s*$)")
_NP_RE = re.compile(r"^(?:np|numpy)\.\w+\((.*)\)$")


def _parse_console_value(text: str) -> Any:
    text = text.strip()
    m = _NP_RE.match(text)
    if m:
        text = m.group(1)
    if text in ("True", "False"):
        return int(text == "True")
    try:
        value = float(text)
    except ValueError:
        return None
    if math.isfinite(value) and value.is_integer() and re.fullmatch(r"-?\d+", text):
        return int(value)
    return value


def clean_log_line(line: str) -> str:
    """A log line without colours and without Ray's ``(Actor pid=...)`` prefix."""
    return _RAY_PREFIX_RE.sub("", _ANSI_RE.sub("", line)).rstrip()


def parse_console_line(line: str) -> dict[str, Any] | None:
    """A verl console-logger line → ``{"step": n, "data": {...}}``, else None."""
    line = clean_log_line(line).lstrip()
    m = _STEP_RE.match(line)
    if not m:
        return None
    data: dict[str, Any] = {}
    for part in line[m.end() :].split(" - "):
        key, sep, raw = part.partition(":")
        if not sep or not key.strip():
            continue
        value = _parse_console_value(raw)
        if value is not None:
            data[key.strip()] = value
    return {"step": int(m.group(1)), "data": data}
