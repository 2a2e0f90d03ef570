"""The sweep directory ``<runs>/sweeps/<id>/``: the only channel between a sweep driver and any UI.

- ``sweep.yaml``    the sweep (its search in Optuna's terms) and the base setup its trials start from
- ``study.db``      the Optuna study, in Optuna's own RDB storage (SQLite): trials, params, values, states
- ``summary.json``  ``{trials: [{number, run_id, params, value, state}], best: {number, run_id, params, value}}``,
                    rewritten by the driver (its only writer) as trials start and end
- ``status.json``   the driver's state (queued/running/stopping/stopped/finished/failed), pid, heartbeat
- ``events.jsonl``  started, trial_started, trial_pruned, trial_ended, stop_requested, finished, ...
- ``sweep.log``     the driver's output;  ``STOP``  a stop request (any process may write it)

Each trial is an ordinary run directory under ``<runs>/`` (listed in Runs with every other run); its
status.json carries ``sweep: {id, trial}``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import yaml

from ..runs.rundir import RunDir, atomic_write_text

SWEEPS_DIR = "sweeps"
SWEEP_FILE = "sweep.yaml"
STUDY_FILE = "study.db"
SUMMARY_FILE = "summary.json"
SWEEP_LOG = "sweep.log"
#: trial states as summary.json names them (Optuna's, lower case, and ``interrupted``: re-run on resume)
COMPLETE, PRUNED, FAILED_TRIAL, RUNNING_TRIAL, INTERRUPTED = "complete", "pruned", "failed", "running", "interrupted"


def sweeps_root(runs_dir: str | os.PathLike) -> Path:
    return Path(runs_dir) / SWEEPS_DIR


class SweepDir(RunDir):
    """Reader and writer of one sweep directory (status, events and STOP as a run directory has them)."""

    @classmethod
    def create_sweep(cls, runs_dir: str | os.PathLike, label: str | None = None) -> "SweepDir":
        made = RunDir.create(sweeps_root(runs_dir), "sweep", label=label)
        return cls(made.path)

    @property
    def runs_dir(self) -> Path:
        """Where its trials' run directories go: the runs folder this sweep lives under."""
        return self.path.parent.parent

    @property
    def log_path(self) -> Path:
        return self.path / SWEEP_LOG

    @property
    def storage_url(self) -> str:
        return f"sqlite:///{self.path / STUDY_FILE}"

    @property
    def study_name(self) -> str:
        return self.run_id

    def exists(self) -> bool:
        return (self.path / SWEEP_FILE).exists()

    def write_sweep(self, doc: dict[str, Any]) -> None:
        atomic_write_text(self.path / SWEEP_FILE, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))

    def read_sweep(self) -> dict[str, Any]:
        p = self.path / SWEEP_FILE
        if not p.exists():
            return {}
        return yaml.safe_load(p.read_text(encoding="utf-8")) or {}

    def write_summary(self, summary: dict[str, Any]) -> None:
        atomic_write_text(
            self.path / SUMMARY_FILE,
            json.dumps(dict(summary, updated=time.time()), indent=1, ensure_ascii=False, default=str),
        )

    def read_summary(self) -> dict[str, Any]:
        try:
            return json.loads((self.path / SUMMARY_FILE).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return {"trials": [], "best": None}

    @property
    def name(self) -> str:
        return str((self.read_sweep().get("sweep") or {}).get("name") or self.run_id)

    def clear_stop(self) -> None:
        """A resumed sweep no longer carries the stop request of its last session."""
        try:
            (self.path / "STOP").unlink()
        except FileNotFoundError:
            pass


def list_sweeps(runs_dir: str | os.PathLike) -> list[SweepDir]:
    """Sweep directories under ``<runs>/sweeps/``, newest first."""
    root = sweeps_root(runs_dir)
    if not root.is_dir():
        return []
    return sorted(
        (SweepDir(p) for p in root.iterdir() if (p / SWEEP_FILE).exists()), key=lambda s: s.run_id, reverse=True
    )
