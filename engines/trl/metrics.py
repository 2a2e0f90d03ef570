"""TRL log keys → the run directory's canonical metric names (originals are kept too)."""

from __future__ import annotations

from typing import Any

from ..runs.rundir import TRAINER_LOG_KEYS, canonical_row

#: TRL's log key → the run directory's canonical name
CANONICAL = TRAINER_LOG_KEYS
DROP = {"epoch", "total_flos"}


def canonical_metrics(logs: dict[str, Any]) -> dict[str, Any]:
    return canonical_row(logs, CANONICAL)


def memory_metrics(device: Any) -> dict[str, float]:
    """``memory/peak_gb`` (the step's peak: CUDA's allocator peak since the last log, else this process's
    resident memory) and ``memory/limit_gb`` (the GPU's or the machine's memory), for the memory_rising
    diagnosis."""
    gib = float(2**30)
    try:
        import torch

        if getattr(device, "type", str(device)) == "cuda" and torch.cuda.is_available():
            peak = torch.cuda.max_memory_allocated(device) / gib
            torch.cuda.reset_peak_memory_stats(device)
            return {
                "memory/peak_gb": peak,
                "memory/limit_gb": torch.cuda.get_device_properties(device).total_memory / gib,
            }
        import psutil

        return {
            "memory/peak_gb": psutil.Process().memory_info().rss / gib,
            "memory/limit_gb": psutil.virtual_memory().total / gib,
        }
    except Exception:  # noqa: BLE001 - a missing reading is no reason to stop logging
        return {}
