"""The ``--external_plugins`` file of a run: our reward as ms-swift ORMs, and the stop callback.

``<run>/swift/aworld_plugin.py`` is a copy of :mod:`engines.plugins.entry` that ms-swift imports in its own
environment; it starts :mod:`engines.plugins.swift_rewards` from the snapshot of the engine-neutral modules beside
it (``aworld_engines/``) with the parameters of ``aworld_plugin.json`` — never this repository installed there,
never the studio. User reward files are copied into the run dir as well and used when the original path is not
there. No file holds an absolute run-dir path, so the same setup gives the same files (its checks are cached by
their content).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ..plugins.install import install, params_file
from ..plugins.swift_rewards import CALLBACK, ORM_PREFIX, RUN_DIR_ENV, WATCH_PID_ENV

PLUGIN_FILE = "aworld_plugin.py"
REWARD_FILES_DIR = "reward_files"

__all__ = ["CALLBACK", "ORM_PREFIX", "PLUGIN_FILE", "RUN_DIR_ENV", "WATCH_PID_ENV", "params_file", "write_plugin"]


def _relocate(entry: dict[str, Any], folder: Path, i: int) -> dict[str, Any]:
    """A Reward.to_spec() entry with its files copied under ``folder`` and named relative to it."""
    entry = dict(entry)
    if "pickle" in entry:
        src = Path(entry["pickle"])
        dest = folder / REWARD_FILES_DIR / f"{i}_{src.name}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.resolve() != dest.resolve():
            shutil.copyfile(src, dest)
        entry["pickle"] = str(dest.relative_to(folder))
    elif "ref" in entry:
        target, _, attr = entry["ref"].rpartition(":")
        if target.endswith(".py") and Path(target).is_file():
            dest = folder / REWARD_FILES_DIR / f"{i}_{Path(target).name}"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(target, dest)
            entry["copy"] = str(dest.relative_to(folder))
    return entry


def write_plugin(folder: Path, spec: list[dict], names: list[str], columns: list[str]) -> Path:
    """``folder/aworld_plugin.py`` for the reward ``spec`` (Reward.to_spec()) whose terms are ``names``
    (empty lists: the stop callback only, for SFT)."""
    folder.mkdir(parents=True, exist_ok=True)
    items = [_relocate(e, folder, i) for i, e in enumerate(spec)]
    params = {
        "terms": [f"{n}×{e.get('weight', 1.0):g}" for n, e in zip(names, items)],
        "spec": items,
        "names": names,
        "columns": columns,
        "callback": CALLBACK,
    }
    return install(folder, PLUGIN_FILE, "swift_rewards", params, "the ms-swift reward plugin")
