"""The stored probe: ``<runs>/.probes/<key>.json``, keyed by everything the probe depends on — the model (its files'
names, sizes and times), the agent, the training set's contents, the reward (its files' contents), the settings it
samples with, the engine, the prompts, samples and seed. A probe of the same inputs reads the stored report instead
of sampling again."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..files.user_files import open_plain_file
from ..runs.rundir import atomic_write_text

PROBES_DIR = ".probes"
#: a stored report larger than this is not read (a genuine one of 512 prompts × 16 samples is a few MB)
STORED_MAX_BYTES = 64 << 20
#: raised when what a report holds changes shape, so older reports are not read as new ones
FORMAT = 1


def file_digest(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _is_file(value: str) -> bool:
    return "\n" not in value and len(value) < 4096 and os.path.isfile(value)


def folder_fingerprint(path: str) -> Any:
    """A model folder's files (names, sizes, modification times), or the name as given (a hub id)."""
    p = Path(path)
    if not p.is_dir():
        return path
    out = []
    for f in sorted(p.rglob("*")):
        if f.is_file():
            st = f.stat()
            out.append([str(f.relative_to(p)), st.st_size, int(st.st_mtime)])
    return out


def _contents(value: Any) -> Any:
    """``value`` with every file it names (a path, ``file.py:fn``) replaced by its contents' digest."""
    if isinstance(value, dict):
        return {k: _contents(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_contents(v) for v in value]
    if isinstance(value, str):
        file, _, attr = value.rpartition(":")
        if file.endswith(".py") and _is_file(file):
            return {"file": Path(file).name, "sha256": file_digest(file), "attr": attr}
        if _is_file(value):
            return {"file": Path(value).name, "sha256": file_digest(value)}
    return value


def dataset_digest(bundle: Any) -> str:
    """The training set's contents: its file's bytes, else its rows as JSON."""
    source = getattr(bundle, "train_source", None)
    if source and os.path.isfile(source):
        return file_digest(source)
    h = hashlib.sha256()
    for i in range(len(bundle.train)):
        h.update(json.dumps(bundle.train[i], sort_keys=True, default=str).encode())
    return h.hexdigest()


def probe_inputs(processor: Any, settings: dict[str, Any], prompts: int, samples: int, seed: int) -> dict[str, Any]:
    """What the key is made of, readable (kept in the report)."""
    agent = dict(processor.agent_spec.to_dict())
    data = processor.data
    return {
        "format": FORMAT,
        "engine": settings["engine"],
        "model": {"path": settings["model"], "files": folder_fingerprint(settings["model"])},
        "agent": _contents(agent),
        "dataset": {
            "sha256": dataset_digest(data),
            "rows": len(data.train),
            "columns": data.columns.to_dict(),
            "source": data.train_source,
        },
        "reward": _contents(processor.spec.get("reward")),
        "settings": {k: v for k, v in settings.items() if k != "generation"},
        "prompts": prompts,
        "samples": samples,
        "seed": seed,
    }


def probe_key(inputs: dict[str, Any]) -> str:
    keyed = {k: v for k, v in inputs.items() if k != "dataset"}
    keyed["dataset"] = {k: v for k, v in inputs["dataset"].items() if k != "source"}  # its contents, wherever it is
    text = json.dumps(keyed, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def probe_path(runs_dir: str | os.PathLike, key: str) -> Path:
    return Path(runs_dir) / PROBES_DIR / f"{key}.json"


def read_stored(runs_dir: str | os.PathLike, key: str) -> dict[str, Any] | None:
    """The stored report of ``key``, or None. The runs folder is user code's to write too: only a plain file of at
    most :data:`STORED_MAX_BYTES` is read (a FIFO is not waited on, a huge file not loaded)."""
    path = probe_path(runs_dir, key)
    try:
        with open_plain_file(path) as (f, st):
            if st.st_size > STORED_MAX_BYTES:
                return None
            report = json.loads(f.read(STORED_MAX_BYTES + 1).decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(report, dict) or report.get("key") != key:
        return None
    # (user code can write the runs folder: the file's own ``path`` is never trusted, it is where it was read from)
    return {**report, "path": str(path)}


def write_stored(runs_dir: str | os.PathLike, report: dict[str, Any]) -> Path:
    path = probe_path(runs_dir, report["key"])
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(report, ensure_ascii=False, indent=1, default=str))
    return path
