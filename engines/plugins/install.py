"""A program of :mod:`engines.plugins` installed in a run directory's folder for another interpreter to import by
path: the engines snapshot, a copy of :mod:`.entry` under the file name the engine expects, and the program's
parameters beside it as JSON (no code is generated: the copied file is this package's own ``entry.py``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from . import snapshot
from . import entry


def install(folder: Path, file_name: str, program: str, params: dict[str, Any], purpose: str) -> Path:
    """``folder/file_name`` (a copy of entry.py) that starts ``engines.plugins.<program>`` with ``params``; the
    snapshot of the engines beside it says ``purpose``. The same program and parameters give the same files in
    any folder (checks are cached by their content): ``params`` hold no absolute path of the run."""
    folder = Path(folder)
    snapshot.snapshot_engines(folder, purpose)
    path = folder / file_name
    shutil.copyfile(entry.__file__, path)
    Path(entry.params_path(str(path))).write_text(
        json.dumps({"program": program, **params}, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return path


def params_file(path: Path) -> Path:
    """The JSON file of an installed program's copy."""
    return Path(entry.params_path(str(path)))
