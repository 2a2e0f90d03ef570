"""A copy of the engine-neutral modules for code that runs in another Python environment.

The verl reward bridge, the tool files and the ms-swift reward plugin are copies of :mod:`.entry` that another
interpreter (verl's, or ms-swift's own virtualenv) imports by path. They start their program from a snapshot of
``engines/`` copied next to them, imported under a package name of its own, so this repository never needs to be
installed there. The snapshot holds every sub-package except the engines' own folders (their imports are relative,
so the tree copies as it is) and a package ``__init__`` that imports nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .entry import SNAPSHOT_DIR

ENGINES_DIR = Path(__file__).resolve().parents[1]
#: engine folders (and what else is not engine-neutral) are left out of a snapshot
ENGINE_PACKAGES = frozenset({"trl", "verl", "swift"})


def snapshot_packages() -> list[str]:
    """The sub-packages of ``engines/`` a snapshot copies."""
    return sorted(
        p.name for p in ENGINES_DIR.iterdir() if (p / "__init__.py").is_file() and p.name not in ENGINE_PACKAGES
    )


def snapshot_engines(folder: Path, purpose: str) -> Path:
    """Copy the engine-neutral packages into ``folder/aworld_engines`` (its ``__init__`` says ``purpose``)."""
    dest = Path(folder) / SNAPSHOT_DIR
    dest.mkdir(parents=True, exist_ok=True)
    for package in snapshot_packages():
        shutil.copytree(
            ENGINES_DIR / package,
            dest / package,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyi"),
        )
    (dest / "__init__.py").write_text(f'"""Snapshot of the engine-neutral modules of engines/ for {purpose}."""\n')
    return dest
