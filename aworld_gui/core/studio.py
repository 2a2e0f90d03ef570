"""The studio's core, independent of Gradio: checks (through the worker), launch, stop, status,
runs listing, clone/export/delete, and a watchdog that enforces stop timeouts.

The UI tabs and the named API endpoints both call into one :class:`Studio`.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psutil

from engines.results.check_result import MODULES
from engines.cli import shell_command
from engines.isolation.processes import reap_detached
from engines.runs.launcher import Launcher
from engines.runs.rundir import QUEUED, RUNNING, STOPPING, RunDir, atomic_write_text
from engines.isolation.user_env import referenced_names, server_names, user_code_envs
from engines.files.yaml_input import try_load_yaml
from engines.runs.lifecycle import (
    Slot,
    delete_run,
    effective_status,
    kill_run,
    list_run_dirs,
    spawn_run,
    stop_run,
)

from . import evaluations, exports
from . import inputs as inp
from . import run_watch
from .chat_client import ChatService
from .probes import Probes
from .chat_transcripts import ChatTranscripts
from .check_report import failed_report
from .run_clone import clone_inputs
from ..rendering.i18n import _
from .run_rows import run_row
from .run_cache import CACHE, RunCache, RunState
from ..worker.check_worker import CheckWorker, WorkerError
from .upload_secrets import mask_text

log = logging.getLogger("aworld.studio")
MAX_RUN_ID = 200
RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,%d}" % (MAX_RUN_ID - 1))
MODULE_TITLES = {
    "agent": _("Agent"),
    "dataset": _("Datasets"),
    "reward": _("Reward"),
    "config": _("Config"),
    "engine": _("Engine"),
}


def _stamp(paths: list[str]) -> tuple:
    """The files' modification times (None: missing), to tell when they changed."""
    out = []
    for path in paths:
        try:
            out.append(os.stat(path).st_mtime_ns)
        except OSError:
            out.append(None)
    return tuple(out)


class Studio:
    def __init__(
        self,
        runs_dir: str | os.PathLike,
        worker: CheckWorker | None = None,
        cache: RunCache | None = None,
        stop_timeout_s: float = 30.0,
        check_timeout_s: float = 60.0,
        launch_timeout_s: float = 180.0,
    ):
        self.runs_dir = Path(runs_dir).resolve()
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.worker = worker or CheckWorker(default_timeout_s=check_timeout_s)
        self.cache = cache or CACHE
        self.stop_timeout_s = stop_timeout_s
        self.check_timeout_s = check_timeout_s
        self.launch_timeout_s = launch_timeout_s
        self._catalog: dict[str, Any] | None = None
        self._watched: list[str] = []  # the files the engines' availability depends on
        self._catalog_stamp: tuple = ()
        self._catalog_lock = threading.Lock()
        self._reward_files: dict[str, list[dict]] = {}
        self._spawned: set[int] = set()
        self._client_checks: dict[str, str] = {}  # client (a page's session) -> its running check
        self._checks_lock = threading.Lock()
        self._watchdog: threading.Thread | None = None
        self._stop = threading.Event()
        # runs, evaluations and chat models are forked from a preloaded process (engines.runs.launcher): Launch to
        # the first step is the run's own work, not imports. It starts with the studio's first launch, evaluation or
        # chat (its preload, seconds of CPU, overlaps that one's preparation; a studio that never launches never pays)
        self.launcher = Launcher()
        self.chat = ChatService(self.runs_dir, launcher=self.launcher)  # the chat model's process (one at a time)
        self.probes = Probes(self)  # the probes of the Setup's pages and of the client API, one store of reports
        self.chat_transcripts = ChatTranscripts()  # each run's conversation in Chat (a reload shows it again)

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        self.worker.start()  # warms up in the background
        if self._watchdog is None:
            self._watchdog = threading.Thread(target=self._watch, name="studio-watchdog", daemon=True)
            self._watchdog.start()

    def close(self) -> None:
        self._stop.set()
        self.chat.stop()  # before the fork server that started it (which says how it ended)
        self.launcher.close()
        self.worker.close()

    def _watch(self) -> None:
        """Every second: kill runs whose stop request is older than the timeout; reap children. Every
        ``run_watch.LIVENESS_S``: every run's liveness (:meth:`note_lost_runs`)."""
        ticks = 0
        while not self._stop.wait(1.0):
            ticks += 1
            try:
                self.enforce_stop_timeouts()
                self._reap()
                if ticks % run_watch.LIVENESS_S == 0:
                    self.note_lost_runs()
            except Exception:  # noqa: BLE001 - the watchdog must survive anything
                log.exception("watchdog")

    def note_lost_runs(self) -> list[str]:
        """The runs whose process died without a final status, recorded as ended (core/run_watch.py)."""
        return run_watch.note_lost_runs(self.runs_dir, self.cache)

    def enforce_stop_timeouts(self) -> list[str]:
        return run_watch.enforce_stop_timeouts(self.runs_dir, self.stop_timeout_s)

    def _reap(self) -> None:
        reap_detached()  # the chat model, an engine's setup, an evaluation: never left <defunct>
        for pid in list(self._spawned):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self._spawned.discard(pid)

    # -- catalog -------------------------------------------------------------------------------
    def catalog(self, refresh: bool = False) -> dict[str, Any]:
        """Engines (availability, reason, config schema) and built-in rewards, from the worker. Read again
        whenever a file an engine's availability depends on has changed since (an environment set up, from
        the studio or a terminal): every view of an engine's availability comes from this one answer, and
        it is never older than those files."""
        with self._catalog_lock:
            if self._catalog is not None and not refresh and self._catalog_stamp == _stamp(self._watched):
                return self._catalog
            before = _stamp(self._watched)  # taken before the read: a change during it reads again next time
            try:
                catalog = self.worker.call("catalog", timeout_s=self.check_timeout_s)
            except WorkerError as e:
                self._catalog = None
                return {
                    "engines": [
                        {
                            "name": inp.DEMO_ENGINE,
                            "available": False,
                            "reason": f"engine probe failed: {e}",
                            "fields": [],
                            "defaults": {},
                            "description": "",
                        }
                    ],
                    "rewards": {},
                    "error": str(e),
                }
            watched = sorted({f for e in catalog.get("engines", []) for f in e.get("watch") or []})
            self._catalog_stamp = before if watched == self._watched else _stamp(watched)
            self._catalog, self._watched = catalog, watched
            return self._catalog

    def engine_info(self, name: str) -> dict[str, Any] | None:
        return next((e for e in self.catalog()["engines"] if e["name"] == name), None)

    def reward_functions(self, path: str) -> list[dict]:
        """Functions of a reward file (imported in the worker, never here); cached by path+mtime."""
        key = f"{path}:{os.path.getmtime(path) if os.path.exists(path) else 0}"
        if key not in self._reward_files:
            self._reward_files[key] = self.worker.call("reward_functions", path=path, timeout_s=15)
        return self._reward_files[key]

    # -- checks --------------------------------------------------------------------------------
    def check(self, inputs: inp.SetupInputs, client: str | None = None) -> dict[str, Any]:
        """Every module's result (by module), the Setup previews, and ``ok`` (no module in error).
        Never raises: a worker failure becomes an error on the module being checked. ``client`` (a
        page's session): a newer check from the same client cancels this one (``cancelled`` True)."""
        t0 = time.perf_counter()
        check_id = uuid.uuid4().hex[:12]
        if client:
            with self._checks_lock:
                previous = self._client_checks.get(client)
                self._client_checks[client] = check_id
            if previous:
                self.worker.cancel(previous, "a newer check from the same page replaced it")
        try:
            report = self.worker.call(
                "check",
                inputs={**inputs.to_dict(), "runs_dir": str(self.runs_dir)},
                timeout_s=self.check_timeout_s,
                call_id=check_id,
                pass_env=referenced_names(inputs.agent, inputs.rewards, inputs.config_text),
                pass_server_env=server_names(inputs.agent, inputs.rewards, inputs.config_text),
            )
        except WorkerError as e:
            report = failed_report(e)
        finally:
            if client:
                with self._checks_lock:
                    if self._client_checks.get(client) == check_id:
                        del self._client_checks[client]
        results = report.setdefault("results", {})
        for m, problem in (inputs.problems or {}).items():  # an upload that could not be used
            results[m] = {"module": m, "status": "error", "message": problem, "details": {}, "warnings": []}
        for m in MODULES:
            results.setdefault(
                m, {"module": m, "status": "error", "message": "not checked", "details": {}, "warnings": []}
            )
        report["ok"] = not report.get("cancelled") and all(results[m]["status"] != "error" for m in MODULES)
        report["wall_s"] = round(time.perf_counter() - t0, 3)
        report["check_id"] = check_id
        return report

    # -- launch --------------------------------------------------------------------------------
    def launch(self, inputs: inp.SetupInputs) -> dict[str, Any]:
        """Prepare the run dir in the worker (checks again, writes run.yaml, state queued), then
        start ``python -m engines run <dir>`` detached. A busy machine queues the run."""
        if inputs.problems:
            module, problem = next(iter(inputs.problems.items()))
            return {"ok": False, "error": problem, "module": module}
        self.launcher.ensure_started()  # preloads while the worker prepares the run
        try:
            res = self.worker.call(
                "prepare",
                inputs=inputs.to_dict(),
                runs_dir=str(self.runs_dir),
                timeout_s=self.launch_timeout_s,
                pass_env=referenced_names(inputs.agent, inputs.rewards, inputs.config_text),
                pass_server_env=server_names(inputs.agent, inputs.rewards, inputs.config_text),
            )
        except WorkerError as e:
            return {"ok": False, "error": f"launch preparation failed: {e}", "module": None}
        if not res.get("ok"):
            return {"ok": False, "error": res.get("error"), "module": res.get("module")}
        run_dir = res["run_dir"]
        busy = self.machine_busy()
        pid = spawn_run(run_dir, launcher=self.launcher)
        self._spawned.add(pid)
        state = self.cache.refresh(run_dir, force=True)
        return {
            "ok": True,
            "run_id": res["run_id"],
            "run_dir": run_dir,
            "pid": pid,
            "state": state.state,
            "queued": busy,
            "message": (
                f"{res['run_id']} is queued: the machine is busy with another run"
                if busy
                else f"{res['run_id']} launched"
            ),
        }

    def resumable(self, run_id: str) -> bool:
        """Whether the run resumes from its latest checkpoint as it is (engines/core/resume.py: stopped or failed, or
        ended early, with a complete checkpoint before its end, on an engine that resumes)."""
        from engines.core.resume import resumable

        return resumable(self.run_path(run_id))

    def resume(self, run_id: str, checkpoint: str | None = None) -> dict[str, Any]:
        """Continue a stopped, failed or finished run from ``checkpoint`` (its latest by default) in its own run
        directory: readied by the worker (engines/core/resume.py), then started as a launch is (queued when the
        machine is busy)."""
        path = self.run_path(run_id)
        self.launcher.ensure_started()
        try:
            res = self.worker.call(
                "resume", run_dir=str(path), checkpoint=checkpoint or "latest", timeout_s=self.launch_timeout_s
            )
        except WorkerError as e:
            return {"ok": False, "error": f"resume failed: {e}"}
        if not res.get("ok"):
            return res
        busy = self.machine_busy()
        pid = spawn_run(path, launcher=self.launcher)
        self._spawned.add(pid)
        self.cache.refresh(path, force=True)
        return {**res, "pid": pid, "queued": busy}

    def machine_busy(self) -> bool:
        return Slot(self.runs_dir).busy()

    # -- runs ----------------------------------------------------------------------------------
    def run_path(self, run_id: str) -> Path:
        """The run dir for an id, refusing anything outside the runs dir."""
        run_id = (run_id or "").strip()
        if not RUN_ID_RE.fullmatch(run_id):
            shown = run_id if len(run_id) <= 60 else run_id[:57] + "..."
            raise ValueError(
                f"'{shown}' is not a run id (letters, digits, '.', '_', '-'; at most {MAX_RUN_ID} characters)"
            )
        p = (self.runs_dir / run_id).resolve()
        if p.parent != self.runs_dir or not RunDir(p).exists():
            raise ValueError(f"no run '{run_id}' under {self.runs_dir}")
        return p

    def run_ids(self) -> list[str]:
        return [r.run_id for r in list_run_dirs(self.runs_dir)]

    def latest_run(self) -> str | None:
        """The run to show when none is named: the one training (running or stopping), else the
        next in the queue (the earliest launched), else the newest."""
        runs = list_run_dirs(self.runs_dir)
        if not runs:
            return None
        statuses = [(r, effective_status(r)) for r in runs]
        training = [r for r, st in statuses if st.get("state") in (RUNNING, STOPPING)]
        if training:
            return training[0].run_id
        queued = sorted(((st.get("launched") or 0, r.run_id) for r, st in statuses if st.get("state") == QUEUED))
        return queued[0][1] if queued else runs[0].run_id

    def training_run(self) -> str | None:
        """The run that is training now (running or stopping), if any."""
        for r in list_run_dirs(self.runs_dir):
            if effective_status(r).get("state") in (RUNNING, STOPPING):
                return r.run_id
        return None

    def state(self, run_id: str) -> RunState:
        return self.cache.refresh(self.run_path(run_id))

    def status(self, run_id: str | None = None) -> dict[str, Any]:
        run_id = run_id or self.latest_run()
        if not run_id:
            return {"error": "no runs yet"}
        st = self.state(run_id)
        pr = st.progress()
        spec = st.read_spec()
        last = {k: st.latest.get(k) for k in ("reward", "loss", "kl", "lr", "eval/reward") if k in st.latest}
        out = {
            "run_id": run_id,
            "run_dir": str(st.run.path),
            "state": pr.state,
            "step": pr.step,
            "total_steps": pr.total,
            "elapsed_s": pr.elapsed_s,
            "eta_s": pr.eta_s,
            "steps_per_s": pr.steps_per_s,
            "engine": spec.get("engine"),
            "last": last,
            "metrics": st.metric_names(),
            "points": {k: st.series[k].count for k in ("reward", "loss") if k in st.series},
            "stop_requested": st.run.stop_requested(),
        }
        fail = st.failure()
        if fail:
            out.update(cause=fail["cause"], error=fail["message"])
        return out

    def stop(self, run_id: str, kill: bool = False) -> dict[str, Any]:
        """Ask an active run to stop (``kill``: now). A run that is not active is left alone: no STOP
        file is written into a finished run; the answer says why (``stop_sent`` False)."""
        path = self.run_path(run_id)
        if not self.cache.refresh(path, force=True).active:
            out = self.status(run_id)
            return dict(out, stop_sent=False, message=f"{run_id} is {out['state']}: there is nothing to stop")
        if kill:
            stop_run(path, reason="studio kill")
            kill_run(path)
        else:
            stop_run(path, reason="studio")
        self.cache.refresh(path, force=True)
        return dict(self.status(run_id), stop_sent=True)

    def list_runs(self) -> list[dict[str, Any]]:
        """The Runs table: one row per run; a run whose files cannot be read lists as unreadable (run_rows.py)."""
        return [run_row(r, self.cache) for r in list_run_dirs(self.runs_dir)]

    def relabel(self, run_id: str, name: str | None = None, note: str | None = None) -> dict[str, str]:
        """Rename a run or change its note (its label.json; the run directory keeps its id)."""
        return RunDir(self.run_path(run_id)).write_label(name, note)

    def delete(self, run_id: str) -> None:
        path = self.run_path(run_id)
        delete_run(path)
        self.cache.forget(path)
        self.chat_transcripts.forget(run_id)

    def spec_text(self, run_id: str) -> str:
        """run.yaml as shown and exported: a secret written literally in it (e.g. a config's env_vars) masked."""
        try:  # a plain file, capped: never a pipe or a link user code put there (RunDir.spec_text)
            return mask_text(RunDir(self.run_path(run_id)).spec_text())[0]
        except (OSError, UnicodeDecodeError) as e:
            return f"# run.yaml cannot be read: {e}\n"

    def config_diff(self, a: str, b: str) -> str:
        if not a or not b:
            return ""
        ta, tb = self.spec_text(a).splitlines(keepends=True), self.spec_text(b).splitlines(keepends=True)
        ta = [line for line in ta if not line.startswith("run_id:")]
        tb = [line for line in tb if not line.startswith("run_id:")]
        diff = "".join(difflib.unified_diff(ta, tb, fromfile=f"{a}/run.yaml", tofile=f"{b}/run.yaml", n=2))
        return diff or "# the two run specs are identical (apart from run_id)"

    def cli_command(self, run_id: str) -> str:
        """The shell command that re-runs this run's exact spec as a new run (no virtualenv needs to
        be active: it names the studio's own interpreter's console script)."""
        path = self.run_path(run_id)
        return (
            f"# re-run {run_id} with its exact spec (agent, data, reward, effective config), as a new run\n"
            f"{shell_command('rerun', str(path))}\n"
        )

    def clone_inputs(self, run_id: str) -> inp.SetupInputs:
        """Setup inputs that reproduce a run (run_clone.py; its agent is written back to a YAML file)."""
        spec = try_load_yaml(self.spec_text(run_id), default={}) or {}  # secrets masked
        info = self.engine_info(spec.get("engine") or inp.DEMO_ENGINE) or {}
        return clone_inputs(spec, self.runs_dir / inp.UPLOADS / f"clone-{run_id}" / "agent.yaml", info)

    def checkpoints(self, run_id: str) -> list[str]:
        return [p.name for p in RunDir(self.run_path(run_id)).checkpoints()]

    def checkpoints_unreachable(self, run_id: str) -> str | None:
        """``host:path`` of a cluster run's checkpoints this machine does not see (RunDir.checkpoints_unreachable)."""
        return RunDir(self.run_path(run_id)).checkpoints_unreachable()

    def best_checkpoint(self, run_id: str) -> str | None:
        """The name of the run's best checkpoint (status.json ``best_checkpoint``) while it is on disk."""
        run = RunDir(self.run_path(run_id))
        best = run.read_status().get("best_checkpoint")
        name = best.get("name") if isinstance(best, dict) else None  # the run's own file: any type
        return name if isinstance(name, str) and name and (run.checkpoints_source / name).is_dir() else None

    def checkpoint_choices(self, run_id: str) -> list[tuple[str, str]]:
        """The run's checkpoints as (shown, name), the best one marked."""
        best = self.best_checkpoint(run_id)
        return [(f"{c} · {_('best')}" if c == best else c, c) for c in self.checkpoints(run_id)]

    def checkpoint_zip(self, run_id: str, name: str) -> str:
        return exports.checkpoint_zip(self.runs_dir, self.run_path(run_id), name)

    def export_spec(self, run_id: str) -> str:
        text = self.spec_text(run_id)  # .exports is served: never a literal secret in it
        out_dir = self.runs_dir / ".exports"
        out_dir.mkdir(exist_ok=True)
        out = out_dir / f"{run_id}.run.yaml"
        atomic_write_text(out, text, durable=False)  # never through a link user code planted at that name
        return str(out)

    # -- evaluation, chat, export ----------------------------------------------------------------
    def model_choices(self, run_id: str) -> list[tuple[str, str]]:
        """What can be evaluated or chatted with for a run, as (shown, value): its agent's base model, its best
        checkpoint, its own checkpoints newest first (value ``checkpoint-N``, the newest marked latest), then each
        other run under the runs dir, newest run first, by its best and latest checkpoints, shown ``<run name or id>
        / checkpoint-N`` with the value ``<run_id>/checkpoint-N`` (what engines.inference.checkpoints.resolve takes;
        a checkpoint of another architecture is a clear check error there). Every checkpoint of every run made ~30
        boxes (issue 42): another run's others are a pick of that run away."""
        own = self.checkpoints(run_id)
        best = self.best_checkpoint(run_id)
        out = [(str(_("base")), "base"), *([(f"{_('best')} ({best})", "best")] if best else [])]
        out += [(f"{c} · {_('latest')}" if c == own[-1] else c, c) for c in reversed(own)]
        for r in list_run_dirs(self.runs_dir):
            theirs = [c.name for c in r.checkpoints()]
            if r.run_id == run_id or not theirs:
                continue
            shown, top = r.read_label()["name"] or r.run_id, self.best_checkpoint(r.run_id)
            for c in dict.fromkeys([top, theirs[-1]] if top else [theirs[-1]]):
                marks = " · ".join(str(m) for m, on in ((_("best"), c == top), (_("latest"), c == theirs[-1])) if on)
                out.append((f"{shown} / {c} · {marks}", f"{r.run_id}/{c}"))
        return out

    def launch_eval(
        self,
        run_id: str,
        models: list[str],
        dataset: str | None = None,
        rewards: list | None = None,
        samples: int = 1,
        temperature: float = 0.0,
        max_samples: int | None = None,
    ) -> dict[str, Any]:
        """Check and prepare the evaluation in the worker (it loads the dataset and reward), then start
        ``aworld-train eval --dir <eval_dir>`` detached, as a launch does for training."""
        path = self.run_path(run_id)
        if not models:
            return {"ok": False, "error": "pick at least one model to evaluate (the base model or a checkpoint)"}
        self.launcher.ensure_started()  # preloads while the worker prepares the evaluation
        try:
            res = self.worker.call(
                "prepare_eval",
                run_dir=str(path),
                checkpoints=list(models),
                dataset=dataset,
                rewards=rewards,
                samples=samples,
                temperature=temperature,
                max_samples=max_samples,
                timeout_s=self.launch_timeout_s,
            )
        except WorkerError as e:
            return {"ok": False, "error": f"the evaluation could not be prepared: {e}"}
        if not res.get("ok"):
            return res
        eval_dir = res["eval_dir"]
        env, servers = user_code_envs(Path(eval_dir) / "eval.yaml", path / "run.yaml", extra={"PYTHONUNBUFFERED": "1"})
        pid = self.launcher.spawn(["eval", "--dir", eval_dir], Path(eval_dir) / "eval.log", env, server_env=servers).pid
        self._spawned.add(pid)
        try:
            RunDir(eval_dir).write_status(
                pid=pid, pid_create_time=psutil.Process(pid).create_time(), launched=time.time()
            )
        except psutil.NoSuchProcess:  # over already: its status says how it ended
            pass
        return {"ok": True, "eval_dir": eval_dir, "eval_id": res["eval_id"], "pid": pid}

    def evaluations(self, run_id: str) -> list[dict[str, Any]]:
        """A run's evaluations, newest first (evaluations.py: its own, and other runs' that scored its checkpoints)."""
        return evaluations.evaluations(self.runs_dir, self.run_path, run_id)

    def eval_path(self, run_id: str, eval_id: str) -> Path:
        return evaluations.eval_path(self.run_path, run_id, eval_id)

    def export_model(self, run_id: str, checkpoint: str, timeout_s: float = 900.0) -> str:
        """The checkpoint as a Hugging Face model folder, zipped for download (exports.py)."""
        return exports.export_model(self.runs_dir, self.run_path(run_id), checkpoint, timeout_s)

    # -- uploads -------------------------------------------------------------------------------
    def store_upload(self, tmp_path: str) -> str:
        return inp.store_upload(tmp_path, self.runs_dir)
