"""The file ms-swift or verl imports by path from a run directory — a copy of this module, written by :mod:`.install`
as ``<run>/swift/aworld_plugin.py``, ``<run>/verl/reward_bridge.py``, ``function_tools.py`` or ``mcp_tools.py``.

It needs only the standard library. Beside it lie ``aworld_engines/`` (a snapshot of the engine-neutral packages of
``engines/``, :mod:`engines.core.snapshot`) and a JSON file of the copy's own name (``reward_bridge.json``) holding
which program of :mod:`engines.plugins` to start and its parameters. The copy imports the snapshot under a package
name of its own — so neither this repository nor another run's snapshot is ever needed or mixed in — starts the
program, and takes the names the program gives as its own (verl looks ``compute_score`` up in this module).

Imported as :mod:`engines.plugins.entry` (no JSON file beside it) it starts nothing.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import sys
from typing import Any

SNAPSHOT_DIR = "aworld_engines"


def params_path(path: str) -> str:
    """The JSON file beside a copy: its own name with ``.json``."""
    return os.path.splitext(os.path.abspath(path))[0] + ".json"


def snapshot_package(folder: str) -> str:
    """The snapshot in ``folder`` imported as a package of its own name (one per folder); returns the name."""
    snapshot = os.path.join(folder, SNAPSHOT_DIR)
    name = "_aworld_engines_" + hashlib.sha1(snapshot.encode()).hexdigest()[:12]
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(snapshot, "__init__.py"), submodule_search_locations=[snapshot]
        )
        package = importlib.util.module_from_spec(spec)
        sys.modules[name] = package
        spec.loader.exec_module(package)
    return name


def start(path: str) -> dict[str, Any]:
    """The program the JSON beside ``path`` names, started with its parameters; returns the names it exports."""
    with open(params_path(path), encoding="utf-8") as f:
        params = json.load(f)
    folder = os.path.dirname(os.path.abspath(path))
    program = importlib.import_module(f"{snapshot_package(folder)}.plugins.{params['program']}")
    return program.start(folder, params)


if os.path.isfile(params_path(__file__)):
    globals().update(start(__file__))
