"""TRL log keys → the run directory's canonical metric names (originals are kept too)."""
from __future__ import annotations

from typing import Any

from ..runs.rundir import REWARD_TERM_PREFIX, TRAINER_LOG_KEYS

#: TRL's log key → the run directory's canonical name
CANONICAL = TRAINER_LOG_KEYS
DROP = {"epoch", "total_flos"}


def canonical_metrics(logs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in logs.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        out[key] = value
        if key in CANONICAL:
            out[CANONICAL[key]] = value
        elif key.startswith("rewards/") and key.endswith("/mean"):
            out[REWARD_TERM_PREFIX + key[len("rewards/"):-len("/mean")]] = value
    return out
