"""Start ``python -m engines <args>`` detached — forked from a preloaded fork server when one is ready, else as a
fresh interpreter.

:class:`Launcher` is held by a long-lived process that starts runs, evaluations or chat models (the studio, a
sweep's driver). It starts :mod:`engines.fork_server` in the background, with the environment user code
may see (:func:`engines.isolation.user_env.user_code_env`); once that has imported torch, Transformers and TRL,
:meth:`Launcher.spawn` sends it the command and gets the child's pid back — the command's first second is its own
work, not imports. Whatever the fork server cannot take (not ready within ``wait_ready_s``, gone, an environment
that differs in a variable read at import time) is started with :func:`spawn_detached`, as before; the child
is the same command either way (its session, log, environment and MCP servers' variables).

``AWORLD_FORK_SERVER=0`` turns the fork server off (every command a fresh interpreter).
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from ..isolation.processes import spawn_detached
from ..isolation.user_env import user_code_env

log = logging.getLogger("aworld.launcher")

#: "0" turns the fork server off
ENABLE_ENV = "AWORLD_FORK_SERVER"
START_TIMEOUT_S = 300.0

#: variables that libraries read when they are imported (thread pools, devices, hub and logging settings): a
#: command whose environment differs from the fork server's in one of them is started fresh instead
IMPORT_TIME_PREFIXES = (
    "OMP_",
    "MKL_",
    "OPENBLAS_",
    "KMP_",
    "GOMP_",
    "CUDA_",
    "NCCL_",
    "NVIDIA_",
    "ROCR_",
    "HIP_",
    "PYTORCH_",
    "TORCH",
    "HF_",
    "HUGGINGFACE_",
    "TRANSFORMERS_",
    "TOKENIZERS_",
    "DATASETS_",
    "ACCELERATE_",
    "TRL_",
    "PYTHON",
    "LD_",
    "MALLOC_",
    "XDG_CACHE_HOME",
    "TMPDIR",
)


def import_time_differences(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """The variables read at import time whose values differ between two environments."""
    names = {n for n in (*a, *b) if n.startswith(IMPORT_TIME_PREFIXES)}
    return sorted(n for n in names if a.get(n) != b.get(n))


@dataclass(frozen=True)
class Spawned:
    pid: int
    #: "forked" (from the preloaded fork server) or "exec" (a fresh interpreter)
    how: str
    #: why it was not forked (None when it was)
    why: str | None = None
    #: the fresh interpreter's Popen ("exec"); a forked one's exit code is the fork server's (Launcher.returncode)
    popen: subprocess.Popen | None = field(default=None, compare=False, repr=False)


def enabled() -> bool:
    return os.environ.get(ENABLE_ENV, "1").strip() not in ("0", "false", "no", "off")


class Launcher:
    def __init__(self, wait_ready_s: float = 60.0):
        self.wait_ready_s = wait_ready_s
        self._proc: subprocess.Popen | None = None
        self._env: dict[str, str] = {}
        self._ready = threading.Event()
        self._settled = threading.Event()  # ready, or failed to start
        self._failed: str | None = "the fork server was not started"
        self._lock = threading.Lock()  # one request at a time on the pipe; starting the server
        self._closed = False
        self._asked = False  # ensure_started was called
        self.info: dict = {}

    # -- the fork server -------------------------------------------------------------------------
    def ensure_started(self) -> "Launcher":
        """Start the fork server unless it was started already (its preload costs seconds of CPU: a starter that
        may never launch anything starts it with its first launch: the studio, as it prepares the run)."""
        if not self._asked:
            self._asked = True
            self.start()
        return self

    def start(self) -> "Launcher":
        """Start the fork server in the background (its preload takes seconds); returns at once."""
        self._asked = True
        if not enabled():
            self._failed = f"{ENABLE_ENV}=0"
            self._settled.set()
            return self
        self._settled.clear()
        self._failed = None
        threading.Thread(target=self._start, name="fork-server-start", daemon=True).start()
        return self

    def _start(self) -> None:
        try:
            self._start_server()
        finally:
            self._settled.set()

    def _start_server(self) -> None:
        with self._lock:
            if self._closed or (self._proc is not None and self._proc.poll() is None):
                return
            self._ready.clear()
            env = user_code_env(allow=())
            env["PYTHONUNBUFFERED"] = "1"
            self._env = env
            try:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "engines.fork_server"],
                    env=env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=None,
                    close_fds=True,
                    bufsize=0,
                    start_new_session=True,  # Ctrl-C in a terminal reaches its starter, which ends it
                )
            except OSError as e:
                self._failed = f"the fork server did not start: {e}"
                return
            hello = self._read_line(START_TIMEOUT_S)
            if not hello or not hello.get("ready"):
                self._failed = (hello or {}).get(
                    "error"
                ) or "the fork server did not start (see this process's console)"
                self._kill()
                return
            self.info = hello
            self._env = dict(hello.get("env") or env)
            if hello.get("preload_error"):
                log.warning("fork server preload: %s", hello["preload_error"])
            log.info("fork server ready (pid %s, preload %.1f s)", hello.get("pid"), hello.get("preload_s", 0))
            self._failed = None
            self._ready.set()

    def _read_line(self, timeout_s: float) -> dict | None:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        buf = b""
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 1)
            if not chunk:
                return None
            buf += chunk
        try:
            return json.loads(buf)
        except ValueError:
            return None

    def ready(self) -> bool:
        return self._ready.is_set() and self._proc is not None and self._proc.poll() is None

    def _kill(self) -> None:
        """End the fork server alone: never its tree, whose processes are the runs it started."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(timeout=10)
        self._ready.clear()

    def close(self) -> None:
        """End the fork server (what it started keeps running)."""
        self._closed = True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                proc.stdin.close()  # its end of input: it exits
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self._kill()

    # -- spawning --------------------------------------------------------------------------------
    def _why_not_forked(self, env: Mapping[str, str], cwd: str | os.PathLike | None) -> str | None:
        if not enabled():
            return f"{ENABLE_ENV}=0"
        self.ensure_started()
        if not self._settled.wait(self.wait_ready_s):
            return f"the fork server was not ready within {self.wait_ready_s:.0f} s"
        if self._failed:
            return self._failed
        if self._proc is None or self._proc.poll() is not None:
            self.start()  # gone: start another for the next command
            return "the fork server had ended"
        differs = import_time_differences(dict(env), self._env)
        if differs:
            return "the command's environment differs in variables read at import time: " + ", ".join(differs)
        return None

    def spawn(
        self,
        args: Sequence[str],
        log_path: str | os.PathLike,
        env: Mapping[str, str],
        server_env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike | None = None,
    ) -> Spawned:
        """``python -m engines <args>`` detached, its output appended to ``log_path``, with exactly ``env`` (and
        ``server_env`` for its MCP servers)."""
        why = self._why_not_forked(env, cwd)
        if why is None:
            with self._lock:
                reply = self._request(
                    {
                        "argv": list(args),
                        "log": str(Path(log_path).resolve()),
                        "env": dict(env),
                        "server_env": dict(server_env or {}),
                        "cwd": str(Path(cwd or os.getcwd()).resolve()),
                    }
                )
            if reply and reply.get("pid"):
                return Spawned(int(reply["pid"]), "forked")
            why = (reply or {}).get("error") or "the fork server did not answer"
            log.warning("fork server: %s; starting a fresh interpreter", why)
        proc = spawn_detached(
            [sys.executable, "-m", "engines", *args], log_path, env=dict(env), cwd=cwd, server_env=server_env
        )
        return Spawned(proc.pid, "exec", why, popen=proc)

    def returncode(self, pid: int) -> int | None:
        """How a command this launcher forked ended (``Popen.returncode``'s value), or None: it runs, or the fork
        server that reaped it is gone (then nobody can say)."""
        with self._lock:
            reply = self._request({"returncode": int(pid)})
        return (reply or {}).get("returncode")

    def _request(self, request: dict) -> dict | None:
        proc = self._proc
        if proc is None or proc.poll() is not None or proc.stdin is None:
            return None
        try:
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()
        except OSError:
            return None
        return self._read_line(30.0)
