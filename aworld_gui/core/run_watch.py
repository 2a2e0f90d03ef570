"""What the studio's watchdog does for the runs folder, whichever page is open: every second, kill the runs whose
stop request is older than the stop timeout; every :data:`LIVENESS_S` seconds, record the runs whose process died
without a final status (a killed run read "running" in Runs for minutes, until someone opened it in the Monitor)."""

from __future__ import annotations

import logging
from pathlib import Path

from engines.runs.lifecycle import effective_status, enforce_stop_timeout, list_run_dirs
from engines.runs.rundir import ACTIVE_STATES, STOP_FILE, RunDir

from .run_cache import RunCache

log = logging.getLogger("aworld.studio")
#: how often (seconds) the watchdog looks at every run's liveness
LIVENESS_S = 5


def note_lost_runs(runs_dir: Path, cache: RunCache) -> list[str]:
    """The ids of the runs whose status says they are active and whose process is gone, recorded as ended through the
    run cache (the one writer of what the studio knows of a run's status)."""
    lost = []
    for run in list_run_dirs(runs_dir):
        status = run.read_status()
        if status.get("state") in ACTIVE_STATES and status.get("pid"):
            if cache.get(run.path).refresh_status_only().get("state") not in ACTIVE_STATES:
                lost.append(run.run_id)
    return lost


def enforce_stop_timeouts(runs_dir: Path, stop_timeout_s: float) -> list[str]:
    """The ids of the runs killed because they had not stopped ``stop_timeout_s`` after their stop request."""
    killed = []
    for p in runs_dir.iterdir() if runs_dir.is_dir() else []:
        if not (p / STOP_FILE).exists():
            continue
        if effective_status(RunDir(p)).get("state") not in ACTIVE_STATES:
            continue
        if enforce_stop_timeout(p, stop_timeout_s):
            killed.append(p.name)
            log.warning("run %s did not stop within %.0f s: killed", p.name, stop_timeout_s)
    return killed
