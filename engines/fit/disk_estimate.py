"""The disk a run's checkpoints take, estimated before launch from the model's parameter counts, against the free
space where the run will write: a run that would fill its disk is told at its check, not found out when a
checkpoint save fails halfway (engines/fit/disk_full.py says that one).

A checkpoint of Transformers' Trainer holds the trained weights (every weight at its load precision, or only the
LoRA adapters in fp32), the optimizer's states for the trainable part (AdamW: two per parameter), and small files
(tokenizer, config, RNG and scheduler states, trainer_state.json). On the letters demo (84,096 fp32 parameters):
339 KB of weights + 695 KB of optimizer states + 35 KB, estimated at 1,077 KB against 1,069 KB written.
"""

from __future__ import annotations

import math
import os

from ..files.user_files import size_text
from .disk_full import disk_room
from .memory_estimate import optimizer_bytes

#: tokenizer, config, RNG and scheduler states, trainer_state.json, training_args.bin
SMALL_FILES_BYTES = 64 * 1024
#: room asked beyond the checkpoints: logs, metrics, samples, the events and the status grow too
MARGIN = 1.1


def checkpoint_bytes(total: int, trainable: int, adapters: int, weight_bytes: float, optimizer: str) -> int:
    """Bytes of one checkpoint."""
    lora = adapters > 0
    weights = adapters * 4 if lora else total * weight_bytes
    states = trainable * optimizer_bytes(optimizer, 4.0 if lora else weight_bytes)
    return int(weights + states + SMALL_FILES_BYTES)


def checkpoints_at_once(max_steps: int, save_steps: int, save_total_limit: int) -> int:
    """How many checkpoints the run's folder holds at its fullest: those ``save_total_limit`` keeps, plus the one
    being written before the oldest is removed — never more than the run saves (every ``save_steps`` and at the end)."""
    saves = math.ceil(max_steps / max(1, save_steps))
    return max(1, min(save_total_limit + 1, saves))


def disk_warning(per_checkpoint: int, at_once: int, runs_dir: str | os.PathLike) -> str | None:
    """A warning when the disk of ``runs_dir`` has less room than the run's checkpoints (with a margin), else None."""
    need = int(per_checkpoint * at_once * MARGIN)
    room = disk_room(runs_dir)
    if room is None or room[0] >= need:
        return None
    return (
        f"disk: the runs folder's disk has {size_text(room[0])} free; this run's checkpoints need ≈ {size_text(need)} "
        f"({at_once} at once, ≈ {size_text(per_checkpoint)} each) — free space there, lower save_total_limit, "
        "train LoRA adapters (use_peft), or put the runs folder on another disk"
    )
