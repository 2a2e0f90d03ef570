"""The closing summary event of a run, with measured figures only.

Trainers close with a summary of their own (transformers' ``train_runtime``, ``train_steps_per_second``,
``train_samples_per_second``, ``total_flos``...). Their rates divide the *planned* steps (``max_steps``) by the
time, so a run stopped early, resumed from a checkpoint or slowed by the machine reported far more steps per
second than it did (1.455 where the run did 0.28). The event keeps what was measured: the steps this process
trained, the seconds it took, their ratio, and the trainer's other figures minus its rates.
"""

from __future__ import annotations

from typing import Any

#: the trainer's rates, computed from the planned step and sample counts rather than from what was done
PLANNED_RATES = ("train_steps_per_second", "train_samples_per_second")


def measured_summary(logs: dict[str, Any], steps: int | None, seconds: float | None) -> dict[str, Any]:
    """The summary event's fields: the trainer's numeric figures without its planned-count rates, plus
    ``steps`` (trained by this process), ``seconds`` and ``steps_per_second`` when they are known."""
    out = {
        k: v
        for k, v in logs.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in PLANNED_RATES
    }
    if steps is not None:
        out["steps"] = int(steps)
    if seconds is not None and seconds > 0:
        out["seconds"] = round(float(seconds), 3)  # to the millisecond: 3 steps can take 0.15 s
        if steps is not None:
            out["steps_per_second"] = round(steps / seconds, 4)
    return out
