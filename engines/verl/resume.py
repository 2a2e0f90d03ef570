"""A verl run resumed in its own run directory (engines/core/resume.py readies the run; this is verl's part).

verl resumes with its own trainer (``RayPPOTrainer._load_checkpoint``, verl 0.9): ``trainer.resume_mode:
resume_path`` and ``trainer.resume_from_path: <run>/checkpoints/global_step_<N>`` load the actor's (and a critic's)
sharded model, optimizer and ``extra`` state (the learning-rate scheduler, the RNG states), take the step counter
from the folder's name (the next step is N+1, the epoch N // steps per epoch) and restore the dataloader's
position from the folder's ``data.pt`` (at an epoch's end verl starts the next epoch afresh instead). So:

* :func:`apply_resume` sets those keys on the run's composed config (before verl's ``validate_config``), raises
  ``trainer.total_training_steps`` to a raised ``max_steps`` (and ``trainer.total_epochs`` when the data's epochs
  would end verl's loop before it), and refuses what verl cannot load: a checkpoint gone or cut short, one saved
  by another number of GPU processes (verl's shards are per rank), one trained from another model;
* :func:`set_aside_outputs` moves the dead attempt's verl files the studio mirrors out of the way before verl
  starts again: its file logger's JSONL (verl truncates it when it starts, but the watcher may read it first) and
  its rollout dumps after the checkpoint (they would be taken for the new attempt's).
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

from ..core.resume import ATTEMPTS_DIR
from ..fit.model_folder import shape_mismatch
from ..results.check_result import CheckError
from ..runs.rundir import RunDir
from . import compose as C
from .layout import METRICS_FILE, ROLLOUTS_DIR, VERL_DIR

STEP_DIR_RE = re.compile(r"^global_step_(\d+)$")
SHARD_RE = re.compile(r"^model_world_size_(\d+)_rank_\d+\.pt$")
#: what verl writes into a global_step folder: the actor's shards and Hugging Face config, the dataloader's state last
ACTOR, DATALOADER = "actor", "data.pt"
RESUME_KEYS = ["trainer.resume_from_path", "trainer.resume_mode"]


def resume_step(folder: str | os.PathLike) -> int:
    """The step of a ``global_step_<N>`` folder, as verl reads it."""
    m = STEP_DIR_RE.match(Path(folder).name)
    if m is None:
        raise CheckError(
            "config",
            f"trainer.resume_from_path: '{folder}' is not a global_step_<N> folder (verl takes the step from its name)",
            "resume from one of the run's checkpoints/global_step_<N> folders",
            keys=["trainer.resume_from_path"],
        )
    return int(m.group(1))


def apply_resume(cfg: Any, folder: str | os.PathLike, max_steps: int | None, train_rows: int | None) -> int:
    """Set verl's resume keys on ``cfg`` for ``folder`` (see the module's text); returns the checkpoint's step.
    CheckError naming the keys when verl could not resume from it."""
    folder = Path(folder)
    step = resume_step(folder)
    if not (folder / ACTOR).is_dir() or not (folder / DATALOADER).is_file():
        raise CheckError(
            "config",
            f"trainer.resume_from_path: the checkpoint {folder.name} is "
            + (
                "gone"
                if not folder.exists()
                else f"incomplete (no {ACTOR}/ or no {DATALOADER}: its save was cut short)"
            ),
            "resume from another checkpoint (aworld-train resume <run> --checkpoint global_step_<N>), or train it "
            "again from the start (aworld-train rerun <run>)",
            keys=["trainer.resume_from_path"],
        )
    C.set_value(cfg, "trainer.resume_mode", "resume_path")
    C.set_value(cfg, "trainer.resume_from_path", str(folder))
    if max_steps:
        C.set_value(cfg, "trainer.total_training_steps", int(max_steps))
        per_epoch = (train_rows or 0) // max(1, int(C.select(cfg, "data.train_batch_size") or 1))
        epochs = int(C.select(cfg, "trainer.total_epochs") or 1)
        if per_epoch and per_epoch * epochs < int(max_steps):  # verl's loop runs total_epochs, whatever the steps
            C.set_value(cfg, "trainer.total_epochs", math.ceil(int(max_steps) / per_epoch))
    gpus = int(C.select(cfg, "trainer.n_gpus_per_node") or 1) * int(C.select(cfg, "trainer.nnodes") or 1)
    saved = {int(m.group(1)) for p in (folder / ACTOR).iterdir() if (m := SHARD_RE.match(p.name))}
    if saved and gpus not in saved:
        raise CheckError(
            "config",
            f"{folder.name} was saved by {', '.join(map(str, sorted(saved)))} GPU process(es) "
            f"(its model_world_size_*_rank_*.pt shards) but this run has {gpus} "
            "(trainer.n_gpus_per_node × trainer.nnodes): verl loads its shards only on the same number",
            f"resume on a machine with {min(saved)} GPU(s), or set n_gpus_per_node so the total is {min(saved)}",
            keys=["trainer.n_gpus_per_node", "trainer.nnodes"],
        )
    model = C.select(cfg, "actor_rollout_ref.model.path")
    differ = shape_mismatch(folder / ACTOR / "huggingface" / "config.json", model)
    if differ:
        raise CheckError(
            "config",
            f"{folder.name} was trained from another model than {model} ({differ})",
            "a run resumes with the model it trained; train the other model as a new run",
            keys=["actor_rollout_ref.model.path"],
        )
    return step


def set_aside_outputs(run: RunDir, resumed_at: int, attempt: int) -> None:
    """Before a resumed attempt's verl starts: its last attempt's file-logger JSONL and rollout dumps after
    ``resumed_at`` go to ``attempts/<attempt>/verl/`` (their rows were mirrored already, those after the checkpoint
    set aside by the resume; nothing is deleted)."""
    verl_dir = run.path / VERL_DIR
    where = run.path / ATTEMPTS_DIR / str(attempt) / VERL_DIR
    moves = [verl_dir / METRICS_FILE]
    dumps = verl_dir / ROLLOUTS_DIR
    if dumps.is_dir() and not dumps.is_symlink():
        moves += [p for p in dumps.glob("*.jsonl") if p.stem.isdigit() and int(p.stem) > resumed_at]
    for path in moves:
        if not path.is_file() or path.is_symlink():
            continue
        target = where / path.relative_to(verl_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
