"""A run's progress as its header shows it (render.run_header); what the studio knows of the run computes it
(core/run_cache.RunState.progress)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Progress:
    state: str
    step: int
    total: int | None
    elapsed_s: float | None
    eta_s: float | None
    steps_per_s: float | None
