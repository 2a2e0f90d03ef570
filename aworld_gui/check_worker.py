"""The check worker, studio side: a persistent child process that runs every check.

The studio never imports user code (tools, rewards) nor the heavy libraries the checks need
(datasets, transformers). It sends each check to one long-lived child
(:mod:`aworld_gui.zygote`), which has those libraries imported already and runs each call
in a fresh fork with a time limit. If the child itself dies or stops answering, it is killed
and started again, and the call reports a clear error.

The pipes to the worker are request/response: each request is answered before the next is
sent, so nothing is ever left undrained.
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from typing import Any

from engines.processes import terminate_tree

from .zygote import TASK_MODULES_ENV, read_frame, write_frame

log = logging.getLogger("aworld.studio")

DEFAULT_TIMEOUT_S = 60.0
START_TIMEOUT_S = 180.0      # importing datasets/transformers/torch on a cold, busy machine
REPLY_GRACE_S = 10.0         # the zygote enforces the limit; this is for a wedged zygote


class WorkerError(RuntimeError):
    """A worker call failed: ``kind`` is exception | timeout | crash | unavailable | bug."""

    def __init__(self, message: str, kind: str = "exception", output: str = "", tb: str = "",
                 stage: str | None = None):
        super().__init__(message)
        self.kind = kind
        self.output = output
        self.traceback = tb
        #: what the call last reported doing (zygote.report_progress), e.g. the module being checked
        self.stage = stage


class CheckWorker:
    def __init__(self, default_timeout_s: float = DEFAULT_TIMEOUT_S, env: dict[str, str] | None = None,
                 task_modules: list[str] | None = None):
        """``task_modules``: modules whose ``TASKS`` dict adds tasks to :mod:`aworld_gui.check_tasks`'s
        (the worker's tests register theirs this way)."""
        self.default_timeout_s = default_timeout_s
        self.env = dict(env or {})
        if task_modules:
            self.env[TASK_MODULES_ENV] = ",".join(task_modules)
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self.info: dict[str, Any] = {}
        self.restarts = 0
        self.calls = 0

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, wait: bool = False) -> None:
        """Start the child (in the background unless ``wait``)."""
        if wait:
            with self._lock:
                self._ensure()
            return
        threading.Thread(target=self.start, kwargs={"wait": True}, name="check-worker-start", daemon=True).start()

    def _spawn(self) -> None:
        env = dict(os.environ)
        env.update(self.env)
        env["PYTHONUNBUFFERED"] = "1"
        self._ready.clear()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "aworld_gui.zygote"], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, close_fds=True, bufsize=0)
        hello = self._read(START_TIMEOUT_S)
        if hello is None or not (isinstance(hello, tuple) and hello[0] == "ready"):
            self._kill()
            raise WorkerError("the check worker did not start (see the studio's console)", "unavailable")
        self.info = dict(hello[1])
        if self.info.get("preload_error"):
            log.warning("check worker preload: %s", self.info["preload_error"])
        log.info("check worker ready (pid %s, preload %.1f s)", self.info.get("pid"), self.info.get("preload_s", 0))
        self._ready.set()

    def _ensure(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            if self._proc is not None:
                self.restarts += 1
                log.warning("check worker exited (code %s); restarting", self._proc.returncode)
            self._spawn()

    def _read(self, timeout_s: float) -> Any:
        """One frame from the child, or None when it does not answer in time (or died)."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        import select

        fd = proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], timeout_s)
        if not ready:
            return None
        try:
            return read_frame(proc.stdout)
        except (EOFError, OSError, ValueError):
            return None

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        self._ready.clear()
        if proc is None:
            return
        try:
            terminate_tree(proc.pid, grace_s=0, group=False)   # the zygote and a call's fork, if one runs
            proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            pass
        for f in (proc.stdin, proc.stdout):
            try:
                if f:
                    f.close()
            except OSError:
                pass

    def close(self) -> None:
        with self._lock:
            self._kill()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    @property
    def ready(self) -> bool:
        return self._ready.is_set() and self.pid is not None

    # -- calls ----------------------------------------------------------------------------------
    def call(self, task: str, timeout_s: float | None = None, **kwargs: Any) -> Any:
        """Run ``tasks.<task>(**kwargs)`` in a fork of the worker; raises :class:`WorkerError`."""
        timeout_s = float(timeout_s or self.default_timeout_s)
        with self._lock:
            self.calls += 1
            try:
                self._ensure()
            except WorkerError:
                raise
            except Exception as e:  # noqa: BLE001
                self._kill()
                raise WorkerError(f"the check worker could not start: {e}", "unavailable")
            proc = self._proc
            assert proc is not None and proc.stdin is not None
            try:
                write_frame(proc.stdin, (task, kwargs, timeout_s))
            except (BrokenPipeError, OSError):
                self._kill()
                raise WorkerError("the check worker died; it restarts with the next check", "crash")
            reply = self._read(timeout_s + REPLY_GRACE_S)
            if reply is None:
                self._kill()
                raise WorkerError(f"the check worker did not answer within {timeout_s:g} s; it was restarted",
                                  "timeout")
        ok, payload = reply
        if ok:
            return payload
        raise WorkerError(payload.get("error", "unknown error"), payload.get("kind", "exception"),
                          payload.get("output", ""), payload.get("traceback", ""), payload.get("stage"))
