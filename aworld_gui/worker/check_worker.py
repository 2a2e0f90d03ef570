"""The check worker, studio side: a persistent child process that runs every check.

The studio never imports user code (tools, rewards) nor the heavy libraries the checks need
(datasets, transformers). It sends each check to one long-lived child
(:mod:`aworld_gui.worker.zygote`), which has those libraries imported already and runs each call in an
isolated fork with a time limit (:mod:`engines.isolation.sandbox`).

Calls are independent: each request carries an id, the zygote runs several at once and answers
each when it ends, and a reader thread hands every reply to the caller waiting for that id. No
lock is held while a call runs, so a hanging check blocks nobody else; :meth:`CheckWorker.cancel`
ends a call early (the studio cancels a page's previous check when the same page asks again).
If the child itself dies or stops answering, it is killed and started again, and the calls it
was running report a clear error.
"""

from __future__ import annotations

import logging
import os
import select
import subprocess
import sys
import threading
import uuid
from typing import Any, Iterable

from engines.isolation.processes import terminate_tree
from engines.isolation.user_env import named_values, user_code_env

from .zygote import TASK_MODULES_ENV, read_frame, write_frame

log = logging.getLogger("aworld.studio")

DEFAULT_TIMEOUT_S = 60.0
START_TIMEOUT_S = 180.0  # importing datasets/transformers/torch on a cold, busy machine
REPLY_GRACE_S = 10.0  # the zygote enforces the limit; this is for a wedged zygote


#: how often the reply reader looks whether the worker is still alive while no reply comes
DEATH_POLL_S = 0.5


class _WorkerDied(Exception):
    """The worker process went away while a call was sent to it or waiting for its answer."""


class WorkerError(RuntimeError):
    """A worker call failed: ``kind`` is exception | exit | crash | timeout | cancelled | unavailable | bug."""

    def __init__(self, message: str, kind: str = "exception", output: str = "", tb: str = "", stage: str | None = None):
        from engines.env_values.secret_values import mask_url_passwords

        message, output, tb = (mask_url_passwords(x) for x in (message, output, tb))
        super().__init__(message)
        self.kind = kind
        self.output = output
        self.traceback = tb
        #: what the call last reported doing (sandbox.report_progress), e.g. the module being checked
        self.stage = stage


class _Pending:
    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.done = threading.Event()
        self.reply: tuple[bool, Any] | None = None


class CheckWorker:
    def __init__(
        self,
        default_timeout_s: float = DEFAULT_TIMEOUT_S,
        env: dict[str, str] | None = None,
        task_modules: list[str] | None = None,
    ):
        """``env``: extra variables for the worker; ``task_modules``: modules whose ``TASKS`` dict adds
        tasks to :mod:`aworld_gui.worker.check_tasks`'s (the worker's tests register theirs this way)."""
        self.default_timeout_s = default_timeout_s
        self.env = dict(env or {})
        if task_modules:
            self.env[TASK_MODULES_ENV] = ",".join(task_modules)
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()  # starting the child and writing to it (never held during a call)
        self._ready = threading.Event()
        self._pending: dict[str, _Pending] = {}
        self._pending_lock = threading.Lock()
        self.info: dict[str, Any] = {}
        self.restarts = 0
        self._spawned = False
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
        # the child never holds a credential: not the studio's login, not a provider key (a call gets
        # the variables its inputs ask for, sent with the request)
        env = user_code_env(allow=())
        env.update(self.env)
        env["PYTHONUNBUFFERED"] = "1"
        self._ready.clear()
        proc = subprocess.Popen(
            [sys.executable, "-m", "aworld_gui.worker.zygote"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
            close_fds=True,
            bufsize=0,
        )
        self._proc = proc
        hello = self._read_hello(proc, START_TIMEOUT_S)
        if hello is None or not (isinstance(hello, tuple) and hello[0] == "ready"):
            self._kill()
            raise WorkerError("the check worker did not start (see the studio's console)", "unavailable")
        self.info = dict(hello[1])
        if self.info.get("preload_error"):
            log.warning("check worker preload: %s", self.info["preload_error"])
        log.info("check worker ready (pid %s, preload %.1f s)", self.info.get("pid"), self.info.get("preload_s", 0))
        threading.Thread(target=self._read_replies, args=(proc,), name="check-worker-replies", daemon=True).start()
        self._ready.set()

    def _ensure(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            if self._proc is not None:
                log.warning("check worker exited (code %s); restarting", self._proc.returncode)
                self._kill()
            if self._spawned:
                self.restarts += 1  # every start after the first, whoever noticed the worker was gone
            self._spawned = True
            self._spawn()
        assert self._proc is not None
        return self._proc

    @staticmethod
    def _read_hello(proc: subprocess.Popen, timeout_s: float) -> Any:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout.fileno()], [], [], timeout_s)
        if not ready:
            return None
        try:
            return read_frame(proc.stdout)
        except (EOFError, OSError, ValueError):
            return None

    def _read_replies(self, proc: subprocess.Popen) -> None:
        """Hand each reply to the call waiting for it; when the child goes away, fail its calls."""
        assert proc.stdout is not None
        try:
            while True:
                # a call's fork may still hold the pipe after the worker died, so its end is no EOF: look too
                ready, _, _ = select.select([proc.stdout.fileno()], [], [], DEATH_POLL_S)
                if not ready:
                    if proc.poll() is not None:
                        break
                    continue
                call_id, ok, payload = read_frame(proc.stdout)
                with self._pending_lock:
                    pending = self._pending.get(call_id)
                if pending is not None:
                    pending.reply = (ok, payload)
                    pending.done.set()
        except (EOFError, OSError, ValueError, TypeError):
            pass
        code = proc.poll()
        with self._pending_lock:
            orphans = [p for p in self._pending.values() if p.proc is proc and not p.done.is_set()]
        for p in orphans:
            p.reply = (
                False,
                {
                    "error": f"the check worker died (exit code {code}); it restarts with the next check",
                    "kind": "crash",
                    "output": "",
                    "worker_died": True,
                },
            )
            p.done.set()

    def _kill(self, proc: subprocess.Popen | None = None) -> None:
        proc = proc or self._proc
        if proc is self._proc:
            self._proc = None
            self._ready.clear()
        if proc is None:
            return
        try:
            terminate_tree(proc.pid, grace_s=0, group=False)  # the zygote and its calls' forks
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

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait until the worker has preloaded (or ``timeout_s`` passed); True when it is ready."""
        return self._ready.wait(timeout_s) and self.pid is not None

    @property
    def ready(self) -> bool:
        return self._ready.is_set() and self.pid is not None

    @property
    def running(self) -> int:
        """Calls sent and not answered yet."""
        with self._pending_lock:
            return sum(1 for p in self._pending.values() if not p.done.is_set())

    # -- calls ----------------------------------------------------------------------------------
    def call(
        self,
        task: str,
        timeout_s: float | None = None,
        *,
        call_id: str | None = None,
        pass_env: Iterable[str] = (),
        pass_server_env: Iterable[str] = (),
        **kwargs: Any,
    ) -> Any:
        """Run ``tasks.<task>(**kwargs)`` in an isolated fork of the worker; raises :class:`WorkerError`.
        ``call_id`` names the call for :meth:`cancel`; ``pass_env``: names of this process's variables
        the call may see (those its inputs ask for by ``${NAME}``; the studio's own never);
        ``pass_server_env``: those only its MCP servers may see (:mod:`engines.isolation.server_env`: in the
        call's process, never in its environment)."""
        timeout_s = float(timeout_s or self.default_timeout_s)
        call_id = call_id or uuid.uuid4().hex
        env = {n: os.environ[n] for n in pass_env if n in os.environ and n in user_code_env(allow=[n])}
        server = named_values(pass_server_env, os.environ)  # in a studio, what its operator invited
        envs = (env, server)
        try:
            return self._call_once(task, timeout_s, call_id, envs, kwargs)
        except _WorkerDied:
            # the worker itself went away (user code runs in its forks, so never because of this call): the
            # call is sent once more, to the restarted worker
            try:
                return self._call_once(task, timeout_s, call_id, envs, kwargs)
            except _WorkerDied as e:
                raise WorkerError(str(e), "crash") from None

    def _call_once(
        self, task: str, timeout_s: float, call_id: str, envs: tuple[dict, dict], kwargs: dict[str, Any]
    ) -> Any:
        """One call sent to the worker; ``envs``: (the call's environment additions, its servers' variables)."""
        with self._lock:
            self.calls += 1
            try:
                proc = self._ensure()
            except WorkerError:
                raise
            except Exception as e:  # noqa: BLE001
                self._kill()
                raise WorkerError(f"the check worker could not start: {e}", "unavailable")
            pending = _Pending(proc)
            with self._pending_lock:
                self._pending[call_id] = pending
            try:
                assert proc.stdin is not None
                write_frame(proc.stdin, ("call", call_id, task, kwargs, timeout_s, *envs))
            except (BrokenPipeError, OSError):
                with self._pending_lock:
                    self._pending.pop(call_id, None)
                self._kill(proc)
                raise _WorkerDied("the check worker died; it restarts with the next check")
        try:
            if not pending.done.wait(timeout_s + REPLY_GRACE_S):
                with self._lock:
                    if self._proc is proc:
                        self._kill(proc)
                raise WorkerError(
                    f"the check worker did not answer within {timeout_s:g} s; it was restarted", "timeout"
                )
        finally:
            with self._pending_lock:
                self._pending.pop(call_id, None)
        ok, payload = pending.reply  # type: ignore[misc]
        if ok:
            return payload
        if payload.get("worker_died"):
            # its pipe closed before its exit status can be read (poll() may still say "running"): the retry must
            # not write to it, so it is dropped now and the next call starts a fresh one
            with self._lock:
                if self._proc is proc:
                    self._kill(proc)
            raise _WorkerDied(payload["error"])
        raise WorkerError(
            payload.get("error", "unknown error"),
            payload.get("kind", "exception"),
            payload.get("output", ""),
            payload.get("traceback", ""),
            payload.get("stage"),
        )

    def cancel(self, call_id: str, reason: str = "") -> bool:
        """End a running call now (its fork and everything it started are killed); its caller gets a
        :class:`WorkerError` of kind ``cancelled``. False when no such call runs."""
        with self._pending_lock:
            pending = self._pending.get(call_id)
        if pending is None or pending.done.is_set():
            return False
        with self._lock:
            proc = self._proc
            if proc is None or proc is not pending.proc or proc.stdin is None:
                return False
            try:
                write_frame(proc.stdin, ("cancel", call_id, reason))
            except (BrokenPipeError, OSError):
                return False
        return True
