"""The files a run's writer appends to, watched: one deleted, truncated or replaced behind its back is noticed.

The training process is the one writer of ``metrics.jsonl``, ``samples.jsonl`` and ``events.jsonl``.
When someone else deletes one mid-run, the next append recreates it and the rows it held are gone
(a studio restarted later showed 11 steps fewer, and nobody had said so). :class:`AppendWatch` keeps,
per file, its identity (device, inode) and size after this process's last append, and the rows and
steps it appended; :meth:`AppendWatch.lost` tells, before the next append, whether the file is still
the one written and, if not, what was lost — which :class:`engines.runs.rundir.RunDir` writes as a
``warning`` event (code ``metrics_lost``, ``samples_lost``, ``events_lost``) for every reader to show.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class _Written:
    ident: tuple[int, int]  # (st_dev, st_ino) of the file appended to
    size: int  # its size after this process's last append
    before: int  # bytes it held before this process's first append
    rows: int = 0
    first_step: int | None = None
    last_step: int | None = None


class AppendWatch:
    """What this process appended to each file, to notice the file vanishing under it."""

    def __init__(self) -> None:
        self._files: dict[Path, _Written] = {}

    def lost(self, path: Path) -> dict[str, Any] | None:
        """What the file at ``path`` lost since this process's last append to it (None: nothing). The
        watch then starts over with the file as it is."""
        w = self._files.get(path)
        if w is None:
            return None
        try:
            st = os.stat(path)
        except FileNotFoundError:
            how = "deleted"
        else:
            if (st.st_dev, st.st_ino) != w.ident:
                how = "replaced"
            elif st.st_size < w.size:
                how = "truncated"
            else:
                return None
        del self._files[path]
        steps = [w.first_step, w.last_step] if w.first_step is not None else None
        what = f"the {w.rows} row(s) this process had written"
        if steps:
            what += f" (steps {steps[0]}–{steps[1]})" if steps[0] != steps[1] else f" (step {steps[0]})"
        if w.before:
            what += f" and the {w.before:,} bytes written before it started"
        return {
            "message": f"{path.name} was {how} while the run was writing it: {what} are gone from it; "
            "it goes on with the rows written from now on",
            "code": f"{path.stem}_lost",
            "file": path.name,
            "how": how,
            "rows": w.rows,
            "steps": steps,
        }

    def wrote(self, path: Path, fd: int, size_before: int, rows: list[dict]) -> None:
        """Record ``rows`` appended to ``path`` through the open descriptor ``fd`` (which held ``size_before``
        bytes before the append)."""
        st = os.fstat(fd)
        w = self._files.get(path)
        if w is None:
            w = self._files[path] = _Written((st.st_dev, st.st_ino), st.st_size, before=size_before)
        w.ident, w.size = (st.st_dev, st.st_ino), st.st_size
        w.rows += len(rows)
        for row in rows:
            step = row.get("step")
            if isinstance(step, int) and not isinstance(step, bool):
                w.first_step = step if w.first_step is None else w.first_step
                w.last_step = step
