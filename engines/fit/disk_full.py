"""A run whose disk filled up: told apart from other failures, its partial checkpoint removed (the last good one
kept), and said as ``disk full: <path>`` with the free space — never as "killed" or "unknown".

What a full disk looks like from inside a run: an ``OSError`` with ``ENOSPC`` (or ``EDQUOT``) anywhere in the
exception's chain, or — torch's checkpoint writer hides the errno — ``RuntimeError: ... unexpected pos 515456 vs
515344`` while the run's filesystem has (almost) no room left. The run then cannot write its final status either:
:func:`free_room` removes the checkpoint it was writing (a folder without the ``trainer_state.json`` Transformers
writes last) so that the status, the event and the log line fit. A reader that finds a run's process gone without a
final status (engines/runs/lifecycle.py) asks :func:`disk_full_note` whether its disk is full, and says so.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
from pathlib import Path

from ..files.user_files import size_text

logger = logging.getLogger(__name__)

#: a filesystem with less room than this is full (a checkpoint, a status write, a log line no longer fit)
FULL_BELOW_BYTES = 1 << 20
FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
#: what torch's zip writer says when a write came up short (the errno is lost in C++)
SHORT_WRITE_WORDS = ("unexpected pos", "iostream error", "no space left", "file write failed")
#: the file Transformers' Trainer writes last into a checkpoint folder: a folder without it is partial
COMPLETE_MARK = "trainer_state.json"


def disk_room(path: str | os.PathLike) -> tuple[int, int] | None:
    """(free bytes, total bytes) of the filesystem holding ``path`` (its nearest existing parent), or None."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        usage = shutil.disk_usage(p)
    except OSError:
        return None
    return usage.free, usage.total


def is_full(path: str | os.PathLike) -> bool:
    room = disk_room(path)
    return room is not None and room[0] < FULL_BELOW_BYTES


def caused_by_full_disk(e: BaseException | None, run_path: str | os.PathLike) -> bool:
    """Whether ``e`` (itself, its cause or context) is a write that found the disk full."""
    seen, short_write = set(), False
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in FULL_ERRNOS:
            return True
        short_write = short_write or any(w in str(e).lower() for w in SHORT_WRITE_WORDS)
        e = e.__cause__ or e.__context__
    return short_write and is_full(run_path)


def disk_full_note(run_path: str | os.PathLike) -> str:
    """``disk full: <path> (<free> free of <total>)``."""
    room = disk_room(run_path)
    where = f"disk full: {run_path}"
    return f"{where} ({size_text(room[0])} free of {size_text(room[1])})" if room else where


def partial_checkpoints(run_path: str | os.PathLike, last_good: str | None) -> list[Path]:
    """The checkpoint folders a save left unfinished: without :data:`COMPLETE_MARK`, and not the last one the run
    recorded as saved."""
    folder = Path(run_path) / "checkpoints"
    if not folder.is_dir():
        return []
    good = Path(last_good).resolve() if last_good else None
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_dir() and not p.is_symlink() and not (p / COMPLETE_MARK).exists() and p.resolve() != good
    )


def free_room(run_path: str | os.PathLike, last_good: str | None) -> list[str]:
    """Remove the partial checkpoints (they cannot be resumed from, and they hold the room the final status needs);
    the names removed."""
    removed = []
    for p in partial_checkpoints(run_path, last_good):
        try:
            shutil.rmtree(p)
            removed.append(p.name)
        except OSError as e:
            logger.warning("could not remove the partial checkpoint %s: %s", p, e)
    return removed


def full_disk_message(note: str, last_good: str | None, removed: list[str]) -> str:
    """What the failed run says: ``note`` (:func:`disk_full_note`, taken before room was made), what was removed and
    what is kept, what to do."""
    parts = [note]
    if removed:
        parts.append(f"the unfinished {', '.join(removed)} was removed")
    parts.append(
        f"the last good checkpoint is kept: {Path(last_good).name}" if last_good else "no checkpoint was saved"
    )
    parts.append("free space on that disk (or put the runs folder on another), then resume or launch again")
    return "; ".join(parts)
