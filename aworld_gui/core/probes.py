"""The probe in the studio (issue 44; engines/probe/), independent of Gradio: a page's probe run in the check worker
(the ``probe`` task: the setup checked, its base model sampled in an isolated child, the report stored in
``<runs>/.probes/<key>.json``), what it says it is doing while it runs, Cancel, the reports already made for a setup
(shown again without sampling), and the difficulty filter written beside the uploads.

Nothing here imports the engines' probe: the report is a plain dict, its filter runs in the worker (``probe_filter``:
it reads the training set, which is the worker's to load)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any

from engines.isolation.user_env import referenced_names, server_names
from engines.runs.no_links import open_no_link

from ..worker.check_worker import WorkerError
from . import inputs as inp

#: what the sampling child says it is doing is written here (by the worker's call) and read by the studio
PROGRESS_DIR = Path(".probes") / "progress"
#: the probe's time limit, as the CLI's (engines/probe/run.py): ``$AWORLD_PROBE_TIMEOUT_S``, else this
#: the worker's call gets this much more than the sampling's own limit (the setup's checks before it)
CHECK_MARGIN_S = 60.0
DEFAULT_PROMPTS = 64
#: reports kept in memory by the setup they were made for
KEPT = 32
_DONE = re.compile(r"(\d+) of (\d+) ")


def timeout_s() -> float:
    """The probe's sampling limit (engines/probe/run.py: ``$AWORLD_PROBE_TIMEOUT_S``, else 900 s)."""
    from engines.probe.run import default_timeout_s

    return default_timeout_s()


def _stamp(path: str | None) -> Any:
    if not path:
        return None
    try:
        st = os.stat(path)
        return [st.st_size, st.st_mtime_ns]
    except OSError:
        return None


def setup_key(si: inp.SetupInputs, prompts: int, samples: int | None, seed: int = 0) -> str:
    """The setup a report was made for, as the page shows it (the run's name and note aside), its files' sizes and
    times included: the report shown for it again. The store's own key (engines/probe/store.py: the files' contents,
    the model's files) decides whether a press of Probe samples again."""
    fields = {k: v for k, v in si.to_dict().items() if k not in ("name", "note")}
    files = [si.agent, si.train, *(str(r.get("ref", "")).rpartition(":")[0] for r in si.rewards)]
    text = json.dumps([fields, [_stamp(f) for f in files], prompts, samples, seed], sort_keys=True, default=str)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def fraction(doing: str | None) -> float | None:
    """How far the sampling is, from what it says ("12 of 64 completions sampled and scored"), else None."""
    m = _DONE.match(doing or "")
    return int(m[1]) / int(m[2]) if m and int(m[2]) else None


class ProbeJob:
    """One page's probe: runs in a thread of the studio (the worker does the work); ``done`` once it ended, then
    ``result`` is the worker's answer (``ok``, ``report``, ``reused``; ``error`` when it failed or was cancelled)."""

    def __init__(self, call_id: str, progress_file: Path):
        self.call_id, self.progress_file = call_id, progress_file
        self.started = time.monotonic()
        self.done = threading.Event()
        self.result: dict[str, Any] = {}

    def doing(self) -> str | None:
        """What the probe last said it was doing (the worker's call writes it, in the runs folder user code may write
        too): a plain file's first bytes, read without following a link or waiting — a FIFO put in its place held the
        studio's thread in ``open`` for as long as no one wrote into it."""
        try:  # the runs folder's one reader of a small file: no link, no pipe, never waited on
            with open_no_link(self.progress_file) as f:
                return f.read(300).decode("utf-8", errors="replace").strip() or None
        except OSError:
            return None

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started


class Probes:
    """The studio's probes: one running per page (a newer press cancels the older), the reports by setup."""

    def __init__(self, studio: Any):
        self.studio = studio
        self._running: dict[str, str] = {}  # page -> its probe's call id
        self._lock = threading.Lock()
        self._reports: OrderedDict[str, dict] = OrderedDict()  # setup key -> its report

    def start(
        self, si: inp.SetupInputs, client: str | None, prompts: int = DEFAULT_PROMPTS, samples: int | None = None
    ) -> ProbeJob:
        """Start the probe of ``si`` in the worker (in a thread); returns its job at once."""
        call_id = uuid.uuid4().hex[:12]
        job = ProbeJob(call_id, self.studio.runs_dir / PROGRESS_DIR / f"{call_id}.txt")
        if client:
            with self._lock:
                previous = self._running.get(client)
                self._running[client] = call_id
            if previous:
                self.studio.worker.cancel(previous, "a newer probe from the same page replaced it")
        key = setup_key(si, prompts, samples)
        threading.Thread(target=self._run, args=(job, si, client, prompts, samples, key), daemon=True).start()
        return job

    def _run(self, job: ProbeJob, si: inp.SetupInputs, client, prompts, samples, key: str) -> None:
        limit = timeout_s()
        try:
            res = self.studio.worker.call(
                "probe",
                inputs=si.to_dict(),
                runs_dir=str(self.studio.runs_dir),
                progress_file=str(job.progress_file),
                prompts=int(prompts),
                samples=int(samples) if samples else None,
                limit_s=limit,
                timeout_s=limit + CHECK_MARGIN_S,
                call_id=job.call_id,
                pass_env=referenced_names(si.agent, si.rewards, si.config_text),
                pass_server_env=server_names(si.agent, si.rewards, si.config_text),
            )
        except WorkerError as e:
            res = {"ok": False, "error": str(e), "cancelled": e.kind == "cancelled"}
        finally:
            with self._lock:
                if client and self._running.get(client) == job.call_id:
                    del self._running[client]
            try:
                job.progress_file.unlink()
            except OSError:
                pass
        if res.get("ok"):
            self.remember(key, res["report"])
        job.result = res
        job.done.set()

    def cancel(self, client: str | None) -> bool:
        """End the page's running probe; False when none runs."""
        with self._lock:
            call_id = self._running.get(client or "")
        return bool(call_id) and self.studio.worker.cancel(call_id, "cancelled on the page")

    def remember(self, key: str, report: dict) -> None:
        # what the page shows of it (the samples themselves stay in the stored file)
        self._reports[key] = {k: v for k, v in report.items() if k != "sample_rows"}
        self._reports.move_to_end(key)
        while len(self._reports) > KEPT:
            self._reports.popitem(last=False)

    def shown(self, key: str) -> dict | None:
        """The report made for the setup ``key`` in this studio, else None."""
        return self._reports.get(key)

    def filtered_path(self, report: dict, band: tuple[float, float]) -> Path:
        """Where the filtered training set of ``report`` goes: ``<runs>/.uploads/probe-<key>/<name>.pass-<band>.jsonl``
        (beside the uploads: a run's spec that points at it stays valid)."""
        source = Path((report.get("inputs") or {}).get("dataset", {}).get("source") or "train.jsonl")
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", source.stem)[:80] or "train"
        low, high = (f"{b:g}" for b in band)
        return self.studio.runs_dir / inp.UPLOADS / f"probe-{report['key']}" / f"{name}.pass-{low}-{high}.jsonl"

    def write_filtered(self, report: dict, band: tuple[float, float]) -> dict[str, Any]:
        """The difficulty filter in the worker (``ProbeResult.write_filtered``): what it kept and dropped, by reason."""
        out = self.filtered_path(report, band)
        try:
            return self.studio.worker.call(
                "probe_filter", report_path=report["path"], out=str(out), band=list(band), timeout_s=120
            )
        except WorkerError as e:
            return {"ok": False, "error": str(e)}
