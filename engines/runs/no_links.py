"""A run's files read on behalf of a page, without following links: user code (a reward, a tool) can find the runs
folder and plant ``train.log -> /some/secret`` or ``checkpoints/checkpoint-1/leak.txt -> /some/secret``; the studio
must not serve the target (docs/SECURITY.md).

* :func:`open_no_link` — open a run's file for reading, refusing a link in its place (``O_NOFOLLOW``);
* :func:`checkpoint_files` — the plain files of a checkpoint folder (what its zip holds), links left out.
"""

from __future__ import annotations

import os
from pathlib import Path

#: what the log view shows for a log that is a link (a run's files are read without following links)
LINK_NOTICE = "(this file is a link: the studio reads no file of a run through a link)"


def open_no_link(path: str | os.PathLike, text: bool = False):
    """Open a run's file for reading without following a link in its place (``O_NOFOLLOW``: ``OSError``). Code that
    can write into the runs folder (a reward, a tool) could put ``train.log -> /some/secret`` there, and the page
    would serve the secret. The run folder itself is no link either (engines.runs.lifecycle.list_run_dirs, the
    studio's run_path)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    return os.fdopen(fd, "r", encoding="utf-8") if text else os.fdopen(fd, "rb")


def checkpoint_files(folder: Path) -> list[Path]:
    """The plain files under a checkpoint folder, for its zip: a link (to a file or a folder) is left out — code
    that can write into the runs folder could plant ``leak.txt -> /some/secret`` in a checkpoint, and the zip would
    carry the secret."""
    out = []
    for root, _, files in os.walk(folder, followlinks=False):  # a linked folder is listed, never descended
        out += [Path(root, f) for f in files if not os.path.islink(os.path.join(root, f))]
    return sorted(out)
