"""A cluster job's run directory, mirrored into the studio's through the job's log.

The job trains in its own copy of the run directory on the cluster (:mod:`engines.cluster.job_main`). What the
engine writes there — metrics, samples, events, progress in status.json — is printed to the job's log as tagged
lines (``@aworld-mirror {...}``); this machine (:mod:`engines.cluster.ray_run`) reads the log through Ray's job
API and appends the same rows to the run directory the studio watches. No shared filesystem is needed, and the
rows arrive as the job writes them.

One writer per value: the job owns the run's progress (rows, step, rewards, checkpoints); this machine owns the
run's life (``state``, the process, how it ended — :data:`LIFE_FIELDS`, :data:`LIFE_EVENTS`), which it derives
from the job's end record (:func:`end_record`).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Callable

from ..runs.rundir import EVENTS_FILE, METRICS_FILE, SAMPLES_FILE, STATUS_FILE, RunDir
from ..runs.json_lines import JsonlTail, dumps_line

TAG = "@aworld-mirror "
ROW_FILES = (METRICS_FILE, SAMPLES_FILE, EVENTS_FILE)
#: status.json fields this machine writes for the run (its process, its state, how it ended): never mirrored
LIFE_FIELDS = frozenset(
    {
        "state",
        "pid",
        "pid_create_time",
        "host",
        "started",
        "ended",
        "launched",
        "heartbeat",
        "run_id",
        "cause",
        "error",
        "engine",
        "lost",
        "fallback_reason",
    }
)
#: events of the run's life, written here by the run's own process: the job's copies are not mirrored
LIFE_EVENTS = frozenset({"started", "finished", "stopped", "failed"})
POLL_S = 0.5


def line(record: dict[str, Any]) -> str:
    """One mirror record as a log line."""
    return TAG + dumps_line(record)


def parse(text: str) -> dict[str, Any] | None:
    """The record a log line carries, or None for the job's other output."""
    at = text.find(TAG)  # Ray may prefix a driver's lines
    if at < 0:
        return None
    try:
        record = json.loads(text[at + len(TAG) :])
    except json.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None


def progress_fields(status: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in status.items() if k not in LIFE_FIELDS and not k.startswith("ray_")}


def end_record(status: dict[str, Any]) -> dict[str, Any]:
    """How the job's run ended, from its status.json: state, cause, error, step."""
    return {k: status.get(k) for k in ("state", "cause", "error", "step")}


# -- the job's side ---------------------------------------------------------------------------------
class JobMirror:
    """Prints what the engine appends to the run directory (and its progress in status.json) as mirror lines;
    :meth:`start` a thread that does it every :data:`POLL_S`, :meth:`close` for the last rows and the end."""

    def __init__(self, run_dir: str | Path, write: Callable[[str], None]):
        self.run = RunDir(run_dir)
        self.write = write
        self.tails = {name: JsonlTail(self.run.file(name)) for name in ROW_FILES}
        self._sent_status: dict[str, Any] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def send(self, record: dict[str, Any]) -> None:
        self.write(line(record))

    def poll(self) -> None:
        with self._lock:
            for name, tail in self.tails.items():
                rows = tail.read_new()
                if name == EVENTS_FILE:
                    rows = [r for r in rows if r.get("event") not in LIFE_EVENTS]
                if rows:
                    self.send({"file": name, "rows": rows})
            status = progress_fields(self.run.read_status())
            changed = {k: v for k, v in status.items() if self._sent_status.get(k) != v}
            if changed:
                self._sent_status.update(changed)
                self.send({"file": STATUS_FILE, "fields": changed})

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(POLL_S):
                self.poll()

        self._thread = threading.Thread(target=loop, name="aworld-mirror", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """The last rows, then how the run ended."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        self.poll()
        self.send({"end": end_record(self.run.read_status())})


# -- this machine's side --------------------------------------------------------------------------
class LocalMirror:
    """Applies mirror records to the studio's run directory."""

    def __init__(self, run: RunDir):
        self.run = run
        self.end: dict[str, Any] | None = None
        self.where: dict[str, Any] | None = None
        self.last_step: int | None = None

    def apply(self, record: dict[str, Any]) -> None:
        if "end" in record:
            self.end = record["end"]
        elif "where" in record:
            self.where = record["where"]
            self.run.write_status(ray_run_dir=f"{self.where.get('host')}:{self.where.get('path')}")
        elif record.get("file") in ROW_FILES:
            rows = [r for r in record.get("rows") or [] if isinstance(r, dict)]
            if record["file"] == EVENTS_FILE:
                rows = [r for r in rows if r.get("event") not in LIFE_EVENTS]
            self.run.append_rows(record["file"], rows)
        elif record.get("file") == STATUS_FILE:
            fields = progress_fields(record.get("fields") or {})
            if fields:
                self.run.write_status(durable=False, **fields)
                if isinstance(fields.get("step"), int):
                    self.last_step = fields["step"]
