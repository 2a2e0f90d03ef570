"""What the Runs tab offers for download, made under ``<runs>/.exports`` (served by web/file_route_guard.py): a
checkpoint's zip, and a checkpoint exported as a Hugging Face model folder, zipped. User code can write into the runs
folder: both read what they zip by descriptors and write nothing through a link planted there (issue 41)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

from engines.isolation.user_env import user_code_env
from engines.runs.no_links import folder_beneath, zip_plain_files
from engines.runs.rundir import RunDir

EXPORTS = ".exports"


def checkpoint_zip(runs_dir: Path, run_path: Path, name: str) -> str:
    """The run's checkpoint ``name`` zipped (again only when the checkpoint is newer than the zip)."""
    src = RunDir(run_path).checkpoint_named(name)  # no path, no link (the zip takes its target)
    out_dir = runs_dir / EXPORTS
    out_dir.mkdir(exist_ok=True)
    out = out_dir / f"{RunDir(run_path).run_id}-{name}.zip"
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        zip_plain_files(src, out, name)  # what was checked is what is read; written never through a link
    return str(out)


def export_model(runs_dir: Path, run_path: Path, checkpoint: str, timeout_s: float = 900.0) -> str:
    """The checkpoint as a Hugging Face model folder (LoRA merged), zipped for download. The export runs in a child
    process (it loads the model; the studio never imports torch), into a folder made here under a name nobody knows
    beforehand, then zipped by descriptors: a link planted at ``.exports/<run>-<checkpoint>-hf`` had the export
    write the model into (and the zip take) whatever folder it pointed to (issue 41, fifth probe)."""
    run = RunDir(run_path)
    run.checkpoint_named(checkpoint)  # by name: a path would export any folder, write outside .exports
    name = f"{run.run_id}-{checkpoint}-hf"
    exports = folder_beneath(runs_dir, EXPORTS)
    work = f".{name}.{uuid.uuid4().hex}"
    try:
        os.mkdir(work, 0o700, dir_fd=exports)
    finally:
        os.close(exports)
    out = runs_dir / EXPORTS / work / name
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "engines",
                "export",
                "--run",
                str(run.path),
                "--checkpoint",
                checkpoint,
                "--out",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=user_code_env(),  # it loads files user code wrote: never with the studio's credentials
        )
        if proc.returncode != 0:
            raise ValueError((proc.stderr.strip().splitlines() or ["the export failed"])[-1].removeprefix("error: "))
        archive = runs_dir / EXPORTS / f"{name}.zip"
        zip_plain_files(out, archive, name)
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)
    return str(archive)
