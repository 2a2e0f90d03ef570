"""The run cache: what the studio knows about each run directory, read incrementally.

One :class:`RunState` per run directory lives in a module-level cache shared by every browser
session. A refresh reads only the bytes appended since the last refresh (``JsonlTail`` /
``TextTail``), so its cost grows with the new lines, never with the run's history. Each metric
is kept as a :class:`Series` of at most ``MAX_POINTS`` buckets (consecutive steps averaged
together, bucket width doubling when full), which is what the plots draw.

This module only *reads* run directories; it never imports an engine.
"""

from __future__ import annotations

import io
import math
import os
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Iterable

from engines.runs.no_links import open_no_link
from engines.runs.rundir import (
    ACTIVE_STATES,
    EVENTS_FILE,
    LOG_FILE,
    METRICS_FILE,
    QUEUED,
    RUNNING,
    SAMPLES_FILE,
    RunDir,
)
from engines.runs.json_lines import JsonlTail, TextTail
from engines.diagnostics.reading import fold as fold_diagnoses
from engines.runs.causes import Cause
from engines.runs.lifecycle import effective_status

from ..rendering.progress import Progress

MAX_POINTS = 200  # buckets kept per metric: a curve is drawn with 100–200 points
MIN_REFRESH_S = 0.2  # sessions ticking together share one read
BULK_BYTES = 1 << 20  # a first read bigger than this (reattaching to a long run) is parsed by Arrow
KEEP_SAMPLES = 24  # latest sample trajectories kept
LOG_LINES = 300  # log tail kept
MIN_RATE_SPAN_S = 1.0  # the shortest span of metric rows a live speed is computed over
NON_METRICS = {"step", "time", "epoch_time"}


class Series:
    """A metric's history, downsampled incrementally into at most ``max_points`` buckets.

    Points go into the last bucket until it holds ``width`` points; when there are more than
    ``max_points`` buckets, neighbours are merged pairwise and ``width`` doubles. Adding a point
    is O(1) amortized; memory is O(max_points) whatever the run's length.
    """

    __slots__ = ("max_points", "width", "xs", "ys", "ns", "count", "last_x", "last_y")

    def __init__(self, max_points: int = MAX_POINTS):
        self.max_points = max(2, int(max_points))
        self.width = 1
        self.xs: list[float] = []  # bucket mean step
        self.ys: list[float] = []  # bucket mean value
        self.ns: list[int] = []  # points per bucket
        self.count = 0
        self.last_x: float | None = None
        self.last_y: float | None = None

    def add(self, x: float, y: float) -> None:
        self.count += 1
        self.last_x, self.last_y = x, y
        ns = self.ns
        if ns and ns[-1] < self.width:
            n = ns[-1]
            self.xs[-1] += (x - self.xs[-1]) / (n + 1)
            self.ys[-1] += (y - self.ys[-1]) / (n + 1)
            ns[-1] = n + 1
            return
        self.xs.append(float(x))
        self.ys.append(float(y))
        ns.append(1)
        if len(ns) > self.max_points:
            self._halve()

    def add_many(self, xs, ys) -> None:
        """Vectorized ``add`` of numpy arrays (reattaching to a long run); same buckets as adding
        the points one by one."""
        import numpy as np

        n = len(xs)
        if n == 0:
            return
        if self.count:  # not empty: keep the exact incremental semantics
            for x, y in zip(xs.tolist(), ys.tolist()):
                self.add(x, y)
            return
        width = 1
        while -(-n // width) > self.max_points:
            width *= 2
        starts = np.arange(0, n, width)
        counts = np.diff(np.append(starts, n))
        self.xs = (np.add.reduceat(xs, starts) / counts).tolist()
        self.ys = (np.add.reduceat(ys, starts) / counts).tolist()
        self.ns = counts.tolist()
        self.width = width
        self.count = n
        self.last_x, self.last_y = float(xs[-1]), float(ys[-1])

    def _halve(self) -> None:
        xs, ys, ns = self.xs, self.ys, self.ns
        nx, ny, nn = [], [], []
        for i in range(0, len(ns) - 1, 2):
            n = ns[i] + ns[i + 1]
            nx.append((xs[i] * ns[i] + xs[i + 1] * ns[i + 1]) / n)
            ny.append((ys[i] * ns[i] + ys[i + 1] * ns[i + 1]) / n)
            nn.append(n)
        if len(ns) % 2:
            nx.append(xs[-1])
            ny.append(ys[-1])
            nn.append(ns[-1])
        self.xs, self.ys, self.ns = nx, ny, nn
        self.width *= 2

    def points(self, smoothing: float = 0.0) -> tuple[list[float], list[float]]:
        """(steps, values); ``smoothing`` in [0, 1) applies a debiased EMA (TensorBoard's slider)."""
        if not smoothing or smoothing <= 0:
            return list(self.xs), list(self.ys)
        a = min(float(smoothing), 0.999)
        out, acc, weight = [], 0.0, 0.0
        for y in self.ys:
            acc = acc * a + (1 - a) * y
            weight = weight * a + (1 - a)
            out.append(acc / weight)
        return list(self.xs), out


class RunState:
    """Everything the studio shows about one run, refreshed from new bytes only."""

    def __init__(self, path: str | Path, max_points: int = MAX_POINTS):
        self.run = RunDir(path)
        self.max_points = max_points
        self._lock = threading.Lock()
        self._metrics = JsonlTail(self.run.file(METRICS_FILE))
        self._samples = JsonlTail(self.run.file(SAMPLES_FILE))
        self._events = JsonlTail(self.run.file(EVENTS_FILE))
        self._log = TextTail(self.run.file(LOG_FILE), keep=LOG_LINES)
        self.series: dict[str, Series] = {}
        self.latest: dict[str, Any] = {}  # last value of every key
        self.samples: deque[dict] = deque(maxlen=KEEP_SAMPLES)
        self.events: list[dict] = []
        self.diagnoses: dict[str, dict] = {}  # code → its event, while active (engines/diagnostics)
        self.status: dict[str, Any] = {}
        self.spec: dict[str, Any] | None = None
        self.first_time: float | None = None
        self.last_step = 0
        self.rows = 0
        self._rate: deque[tuple[float, int]] = deque(maxlen=64)
        # change counters the UI compares to skip unchanged outputs
        self.metrics_version = 0
        self.samples_version = 0
        self.log_version = 0
        self.status_version = 0
        self._status_key: tuple | None = None
        self._metrics_gap = False  # metrics.jsonl was replaced: its next rows say whether the history read is kept
        self._refreshed_at = 0.0

    # -- reading ---------------------------------------------------------------------------------
    def refresh(self, force: bool = False) -> "RunState":
        now = time.monotonic()
        if not force and now - self._refreshed_at < MIN_REFRESH_S:
            return self
        with self._lock:
            if not force and now - self._refreshed_at < MIN_REFRESH_S:
                return self
            self._refreshed_at = now
            if self._metrics.offset == 0 and self._bulk_load():
                self.metrics_version += 1
            seen = (self._metrics.replaced, self._samples.replaced, self._events.replaced)
            rows = self._metrics.read_new()
            resumed = self._resumed() if (self._metrics.replaced, self._samples.replaced) != seen[:2] else False
            if self._metrics.replaced != seen[0] and resumed:  # the rows after its checkpoint were set aside
                self._forget_metrics()
                self.metrics_version += 1
            elif self._metrics.replaced != seen[0]:
                self._notice_replaced(
                    METRICS_FILE,
                    f"the {self.rows} step row(s) read before (up to step {self.last_step})",
                    "the charts keep them while the file's new rows go on after them (a studio restart loses "
                    "them: the run's own warning says which steps), and show what the file holds if it starts over",
                )
                self._metrics_gap = self.rows > 0
            if rows and self._metrics_gap:
                self._settle_gap(rows)
            if rows:
                self._ingest(rows)
                self.metrics_version += 1
            samples = self._samples.read_new()
            if self._samples.replaced != seen[1]:
                if not resumed:
                    self._notice_replaced(
                        SAMPLES_FILE,
                        f"the {len(self.samples)} sample(s) shown before",
                        "the samples shown are what the file holds",
                    )
                self.samples.clear()
                self.samples_version += 1
            if samples:
                self.samples.extend(samples)
                self.samples_version += 1
            events = self._events.read_new()
            if self._events.replaced != seen[2]:
                kept = [e for e in self.events if e.get("source") == "studio"]  # the notices, never in the file
                self.events, self.diagnoses = kept, {}
                self._notice_replaced(EVENTS_FILE, "the events read before", "the events shown are what it holds")
            if events:
                self.events.extend(events)
                del self.events[:-500]
                fold_diagnoses(self.diagnoses, events)
                self.status_version += 1
            if self._log.read_new():
                self.log_version += 1
            self._read_status()
        return self

    def _resumed(self) -> bool:
        """Whether the run was resumed since its status was last read: engines/core/resume.py counts the attempt
        before it sets the dead attempt's rows after the checkpoint aside (which replaces the row files)."""
        return (self.run.read_status().get("attempt") or 1) != (self.status.get("attempt") or 1)

    def _read_status(self) -> None:
        """The one writer of ``status`` (and its version), called with ``_lock`` held: reads of it are taken
        one at a time, so the status kept is always the latest read."""
        self.status = effective_status(self.run)
        key = (
            self.status.get("state"),
            self.status.get("step"),
            self.status.get("cause"),
            self.status.get("error"),
            self.status.get("heartbeat"),
        )
        if key != self._status_key:
            self._status_key = key
            self.status_version += 1

    def _notice_replaced(self, name: str, before: str, now: str) -> None:
        """Say, among the run's events, that a file was deleted, truncated or replaced after the studio read
        it. (The run's writer says so in events.jsonl too when it notices; this notice is the studio's own,
        kept in memory: the studio only reads run directories.)"""
        self.events.append(
            {
                "time": time.time(),
                "event": "warning",
                "message": f"{name} was deleted, truncated or replaced while the studio was reading it: "
                f"{before} are no longer in it; {now}",
                "code": f"{Path(name).stem}_replaced",
                "source": "studio",
            }
        )
        self.status_version += 1

    def _settle_gap(self, rows: list[dict]) -> None:
        """The first rows of a metrics.jsonl that was deleted, truncated or replaced after the studio read it: when
        they go on after the last step read (the trainer recreated the file), the points read before are kept — the
        history is not lost on screen; when they start over (another history), the charts show the file alone."""
        first = next((r["step"] for r in rows if isinstance(r.get("step"), (int, float))), None)
        if first is None:
            return
        self._metrics_gap = False
        if first <= self.last_step:
            self._forget_metrics()
            self.metrics_version += 1

    def _forget_metrics(self) -> None:
        """Drop what was built from metrics.jsonl's rows (the file no longer has them)."""
        self.series, self.latest, self.rows, self.last_step, self.first_time = {}, {}, 0, 0, None
        self._rate.clear()

    def _bulk_load(self) -> bool:
        """The whole history of a long run in one vectorized pass (pyarrow + numpy): 100k steps
        load in well under a second instead of many. Falls back to line-by-line on any problem."""
        path = self._metrics.path
        try:
            if os.path.getsize(path) < BULK_BYTES:
                return False
            with open_no_link(path) as f:
                data = f.read()
        except OSError:  # a link in its place too: the rows reader refuses it as well
            return False
        end = data.rfind(b"\n") + 1
        if end <= 0:
            return False
        try:
            import pyarrow.json as pj

            table = pj.read_json(
                io.BytesIO(data[:end]), parse_options=pj.ParseOptions(unexpected_field_behavior="infer")
            )
        except Exception:  # noqa: BLE001 - a corrupt line: the line reader skips it instead
            return False
        self._ingest_table(table)
        self._metrics.offset = end
        return True

    def _ingest_table(self, table) -> None:
        import numpy as np
        import pyarrow as pa

        if "step" not in table.column_names:
            return
        steps = np.asarray(table.column("step").to_numpy(zero_copy_only=False), dtype=float)
        valid = np.isfinite(steps)
        if not valid.any():
            return
        self.rows += int(valid.sum())
        self.last_step = int(steps[valid][-1])
        if "time" in table.column_names:
            times = np.asarray(table.column("time").to_numpy(zero_copy_only=False), dtype=float)
            ok = valid & np.isfinite(times)
            if ok.any():
                self.first_time = self.first_time or float(times[ok][0])
                self._rate.extend(zip(times[ok][-64:].tolist(), steps[ok][-64:].astype(int).tolist()))
        for name in table.column_names:
            if name in NON_METRICS:
                continue
            col = table.column(name)
            t = col.type
            if pa.types.is_boolean(t) or not (pa.types.is_integer(t) or pa.types.is_floating(t)):
                non_null = col.drop_null()
                if len(non_null):
                    self.latest[name] = non_null[-1].as_py()
                continue
            values = np.asarray(col.to_numpy(zero_copy_only=False), dtype=float)
            mask = valid & np.isfinite(values)
            if not mask.any():
                continue
            s = self.series.get(name)
            if s is None:
                s = self.series[name] = Series(self.max_points)
            s.add_many(steps[mask], values[mask])
            self.latest[name] = float(values[mask][-1])

    def refresh_status_only(self) -> dict:
        """status.json only (the Runs table needs no metrics). Read under the lock like a full refresh: it was
        read and written outside it, and a read made before a stream's newer one could land after it and put
        the older status back (with no new ``status_version``, so the Monitor never re-read it)."""
        with self._lock:
            self._read_status()
            return self.status

    def _ingest(self, rows: Iterable[dict]) -> None:
        series = self.series
        latest = self.latest
        for row in rows:
            step = row.get("step")
            if not isinstance(step, (int, float)):
                continue
            self.rows += 1
            t = row.get("time")
            if isinstance(t, (int, float)):
                if self.first_time is None:
                    self.first_time = t
                self._rate.append((t, step))
            self.last_step = int(step)
            for key, value in row.items():
                if key in NON_METRICS:
                    continue
                latest[key] = value
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                    continue
                s = series.get(key)
                if s is None:
                    s = series[key] = Series(self.max_points)
                s.add(step, value)

    def read_spec(self) -> dict:
        if self.spec is None:
            spec = self.run.read_spec()
            if spec:
                self.spec = spec
            return spec
        return self.spec

    # -- views -----------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        return self.status.get("state") or "unknown"

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    def metric_names(self) -> list[str]:
        return sorted(self.series)

    def progress(self) -> Progress:
        st = self.status
        step = max(int(st.get("step") or 0), self.last_step)
        total = st.get("total_steps")
        started = st.get("started")  # this attempt's start (a resume starts the clock again)
        end = st.get("ended") or st.get("finished") or None
        if started and self.state != QUEUED:  # a queued run (a resumed one too) has no clock running yet
            stop_at = (
                end
                if (end and not self.active)
                else (time.time() if self.active else (st.get("heartbeat") or time.time()))
            )
            elapsed = max(0.0, stop_at - float(started))
        else:
            elapsed = None
        rate = None
        summary = None if self.active else self.closing_summary()
        if summary is not None:  # an ended run: what its process measured over the steps it trained
            rate = summary.get("steps_per_second")
        elif len(rows := [(t, s) for t, s in self._rate if not started or t >= float(started)]) >= 2:
            # this attempt's rows only: a resumed run's earlier rows were written before the time it was dead
            (t0, s0), (t1, s1) = rows[0], rows[-1]
            # a rate over less than a second is no measurement: rows written at once (a replayed or imported
            # metrics file) gave a finished 12-step run 10122 steps/s
            if t1 - t0 >= MIN_RATE_SPAN_S and s1 > s0:
                rate = (s1 - s0) / (t1 - t0)
        eta = None
        if total and rate and self.state == RUNNING:
            eta = max(0.0, (int(total) - step) / rate)
        return Progress(self.state, step, int(total) if total else None, elapsed, eta, rate)

    def closing_summary(self) -> dict | None:
        """The last ``summary`` event (engines/runs/run_summary.py: measured figures only), None before one."""
        return next((e for e in reversed(self.events) if e.get("event") == "summary"), None)

    def log_text(self) -> str:
        return self._log.text()

    def failure(self) -> dict | None:
        if self.state != "failed":
            return None
        ev = next((e for e in reversed(self.events) if e.get("event") == "failed"), {})
        return {
            "cause": self.status.get("cause") or ev.get("cause") or Cause.UNKNOWN,
            "message": self.status.get("error") or ev.get("message") or "",
            "lost": bool(self.status.get("lost")),
        }


class RunCache:
    """Run states by resolved path, shared process-wide."""

    def __init__(self, max_points: int = MAX_POINTS):
        self.max_points = max_points
        self._runs: dict[str, RunState] = {}
        self._lock = threading.Lock()

    def get(self, path: str | Path) -> RunState:
        key = str(Path(path).resolve())
        with self._lock:
            st = self._runs.get(key)
            if st is None:
                st = self._runs[key] = RunState(key, self.max_points)
        return st

    def refresh(self, path: str | Path, force: bool = False) -> RunState:
        return self.get(path).refresh(force=force)

    def forget(self, path: str | Path) -> None:
        with self._lock:
            self._runs.pop(str(Path(path).resolve()), None)


CACHE = RunCache()
