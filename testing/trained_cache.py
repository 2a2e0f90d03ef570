"""A trained test run kept between sessions of one checkout (the ``trained_letters`` fixture's cache).

The key is a digest of everything that makes the run: the module arguments, the files under ``assets/`` they
use (the demo's agent, data, reward, config and model), the product code (``engines/``), the versions of the
libraries that train, and this checkout's path (the run's ``run.yaml`` names the assets by absolute path). A
hit is copied into the session's temporary runs folder, so tests that write into the run (evaluations,
exports) never change the cache. Where: ``$AWORLD_TEST_CACHE`` or ``~/.cache/aworld-trainer/test-runs``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from importlib import metadata
from pathlib import Path
from typing import Any

LIBRARIES = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "tokenizers")
CACHE_ENV = "AWORLD_TEST_CACHE"


def _cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "aworld-trainer" / "test-runs")


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "-"


class TrainedRunCache:
    def __init__(self, root: Path, modules: dict[str, Any]):
        self.root = Path(root)
        h = hashlib.sha256()
        h.update(json.dumps(modules, sort_keys=True, default=str).encode())
        h.update(str(self.root.resolve()).encode())
        h.update(json.dumps({n: _version(n) for n in LIBRARIES}, sort_keys=True).encode())
        for folder in ("assets", "engines"):
            for path in sorted((self.root / folder).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyi"):
                    h.update(path.relative_to(self.root).as_posix().encode())
                    h.update(path.read_bytes())
        self.key = h.hexdigest()[:24]
        self.folder = _cache_root() / self.key

    def restore(self, runs: Path) -> Path | None:
        """The cached run copied under ``runs``, or None when there is none for this key."""
        marker = self.folder / "complete.json"
        if not marker.is_file():
            return None
        run_id = json.loads(marker.read_text(encoding="utf-8"))["run_id"]
        dest = Path(runs) / run_id
        shutil.copytree(self.folder / run_id, dest)
        return dest

    def store(self, run_dir: Path, seconds: float) -> None:
        """Keep a finished run (written whole, then marked complete, so a killed session leaves no half entry)."""
        run_dir = Path(run_dir)
        tmp = self.folder.with_name(self.folder.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(run_dir, tmp / run_dir.name)
        (tmp / "complete.json").write_text(
            json.dumps({"run_id": run_dir.name, "train_seconds": round(seconds, 1)}), encoding="utf-8"
        )
        shutil.rmtree(self.folder, ignore_errors=True)
        tmp.rename(self.folder)
