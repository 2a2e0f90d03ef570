"""TRL log keys → the run directory's canonical metric names (originals are kept too)."""
from __future__ import annotations

from typing import Any

CANONICAL = {
    "loss": "loss",
    "reward": "reward",
    "reward_std": "reward_std",
    "kl": "kl",
    "learning_rate": "lr",
    "completions/mean_length": "completion_length",
    "step_time": "step_time",
    "entropy": "entropy",
    "grad_norm": "grad_norm",
}
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
            out["rewards/" + key[len("rewards/"):-len("/mean")]] = value
    return out
