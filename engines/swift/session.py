"""Talk to ms-swift's environment from this one: :class:`SwiftHelper` runs :mod:`.env_helper` in the swift
Python (started on first need, reused by every check of one processor, ended after the last), and
:class:`CheckCache` keeps its answers on disk, so re-checking an unchanged setup — the studio does on every
edit, a run re-checks its spec before training — costs no process at all.

Importing ms-swift takes ~10–20 s on a busy 2-core machine; one helper per check pays it once.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import select
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ..isolation.processes import terminate_tree
from . import environment

HELPER = Path(__file__).resolve().parent / "env_helper.py"
START_TIMEOUT_S = 240.0  # importing torch + ms-swift on a cold, loaded machine
CALL_TIMEOUT_S = 120.0
IDLE_S = 90.0  # a released helper waits this long for the next check before it ends
CACHE_ENV = "AWORLD_SWIFT_CACHE"
CACHE_VERSION = 1  # bump when a task's answer changes shape


class SwiftEnvError(RuntimeError):
    """The swift environment could not answer: ``kind`` is import | timeout | crash | exception | arguments."""

    def __init__(self, message: str, kind: str = "exception", traceback: str | None = None):
        super().__init__(message)
        self.kind = kind
        self.traceback = traceback


def file_digest(path: str | os.PathLike) -> str:
    """Content hash of a file, or of a folder's small text files, its subfolders' included (a model folder's
    config and template; the engines snapshot with its packages)."""
    p = Path(path)
    h = hashlib.sha256()
    if p.is_dir():
        for child in sorted(p.rglob("*")):
            if (
                child.is_file()
                and child.suffix in (".json", ".jinja", ".txt", ".model", ".py", ".tiktoken")
                and "__pycache__" not in child.parts
            ):
                h.update(child.relative_to(p).as_posix().encode())
                h.update(child.read_bytes())
    elif p.is_file():
        h.update(p.read_bytes())
    else:
        h.update(b"<missing>" + str(p).encode())
    return h.hexdigest()


class CheckCache:
    """Answers of the swift environment, one small JSON file per question (keyed by the question and the
    environment's fingerprint). Only answers are kept — failures to answer (timeouts, crashes) never are."""

    def __init__(self, folder: str | os.PathLike | None = None):
        base = (
            folder
            or os.environ.get(CACHE_ENV)
            or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aworld-trainer" / "swift-checks"
        )
        self.folder = Path(base)

    def key(self, task: str, question: Any, python: str) -> str:
        text = json.dumps([CACHE_VERSION, task, environment.fingerprint(python), question], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:40]

    def get(self, key: str) -> dict | None:
        try:
            return json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: str, reply: dict) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(reply, f)
            os.replace(tmp, self.folder / f"{key}.json")
        except OSError:  # a read-only home: checks still work, only slower
            pass


class SwiftHelper:
    """One :mod:`.env_helper` process in the swift Python; its log goes to ``log_path`` (a file)."""

    def __init__(
        self, python: str | None = None, log_path: str | os.PathLike | None = None, cache: CheckCache | None = None
    ):
        self.python = python or environment.swift_python()
        self._given_log = Path(log_path) if log_path else None
        self._started_log: Path | None = None  # where the running helper writes
        self.cache = cache if cache is not None else CheckCache()
        self.proc: subprocess.Popen | None = None
        self.versions: dict[str, Any] | None = None
        self.calls = 0  # answered by the process (not the cache): tests and logs read it
        self._lock = threading.RLock()
        self._idle: threading.Timer | None = None

    @property
    def log_path(self) -> Path:
        """The given file, else one in the temporary folder of the process that starts the helper (a check's own,
        where user code may write: engines.isolation.read_only_files; a fork's helper is not its parent's)."""
        return self._given_log or self._started_log or self._default_log()

    @staticmethod
    def _default_log() -> Path:
        return Path(tempfile.gettempdir()) / f"aworld-swift-helper-{os.getpid()}.log"

    # -- process ---------------------------------------------------------------------------------------
    def _start(self) -> None:
        if not Path(self.python).exists():
            raise SwiftEnvError(
                f"ms-swift's Python {self.python} does not exist — run: {environment.SETUP_COMMAND}", "import"
            )
        self._started_log = self._given_log or self._default_log()  # (where this start's messages are read from)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # PYTHONSAFEPATH: the helper's own folder (engines/swift/*.py) is not put first on the import path,
        # so none of its modules shadows one that ms-swift imports
        env = dict(os.environ, PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false", PYTHONSAFEPATH="1")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [self.python, str(HELPER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=tempfile.gettempdir(),
                env=env,
                start_new_session=True,
            )
        hello = self._read(START_TIMEOUT_S, "start")
        if not hello.get("ok"):
            self._close()
            raise SwiftEnvError(
                f"ms-swift does not import in {self.python}: {hello.get('error')} — run: {environment.SETUP_COMMAND}",
                "import",
                hello.get("traceback"),
            )
        self.versions = hello["result"]

    def _read(self, timeout_s: float, what: str) -> dict:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        buf = b""
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(0.0, left))[0] if left > 0 else []
            if not ready:
                self._close()
                raise SwiftEnvError(
                    f"ms-swift's environment did not answer '{what}' within {timeout_s:.0f} s (see {self.log_path})",
                    "timeout",
                )
            chunk = os.read(fd, 65536)
            if not chunk:
                code = self.proc.wait()
                tail = _tail(self.log_path)
                self._close()
                raise SwiftEnvError(f"ms-swift's environment exited (code {code}) during '{what}': {tail}", "crash")
            buf += chunk
        return json.loads(buf.decode("utf-8"))

    def release(self, idle_s: float = IDLE_S) -> None:
        """Done for now: the process ends after ``idle_s`` unless another check asks something first."""
        with self._lock:
            self._cancel_idle()
            if self.proc is not None:
                self._idle = threading.Timer(idle_s, self.close)
                self._idle.daemon = True
                self._idle.start()

    def _cancel_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def close(self) -> None:
        with self._lock:
            self._cancel_idle()
            self._close()

    def _close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if proc.stdin:
                proc.stdin.close()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            terminate_tree(proc.pid, grace_s=2)
        for stream in (proc.stdout,):
            if stream:
                stream.close()

    def __del__(self) -> None:  # a processor dropped without close(): do not leave the helper behind
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    # -- calls -----------------------------------------------------------------------------------------
    def call(self, task: str, cache_key: Any = None, timeout_s: float = CALL_TIMEOUT_S, **args: Any) -> Any:
        """Ask the swift environment; ``cache_key`` (any JSON value describing the question independently of
        scratch paths) makes the answer reusable. Raises :class:`SwiftEnvError` (``kind`` says why)."""
        key = self.cache.key(task, cache_key, self.python) if cache_key is not None else None
        reply = self.cache.get(key) if key else None
        if reply is None:
            with self._lock:
                self._cancel_idle()
                reply = self._ask(task, args, timeout_s)
            if key:
                self.cache.put(key, reply)
        if not reply.get("ok"):
            raise SwiftEnvError(
                reply.get("error") or "unknown error", reply.get("kind") or "exception", reply.get("traceback")
            )
        return reply["result"]

    def _ask(self, task: str, args: dict, timeout_s: float) -> dict:
        """One request to the process (started if needed); the caller holds the lock."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps({"task": task, "args": args}, default=str) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as e:
            self._close()
            raise SwiftEnvError(f"ms-swift's environment is gone: {e}", "crash")
        reply = self._read(timeout_s, task)
        self.calls += 1
        return reply


_SHARED: dict[str, SwiftHelper] = {}
_SHARED_LOCK = threading.Lock()


def shared_helper(python: str | None = None) -> SwiftHelper:
    """This process's helper for ``python`` (processors checked one after another reuse it: ms-swift is
    imported once). :meth:`SwiftHelper.release` it after a check; :func:`shutdown` before training."""
    python = python or environment.swift_python()
    with _SHARED_LOCK:
        helper = _SHARED.get(python)
        if helper is None:
            helper = _SHARED[python] = SwiftHelper(python)
        return helper


def shutdown() -> None:
    """End every helper of this process now (training is about to need the machine)."""
    with _SHARED_LOCK:
        helpers = list(_SHARED.values())
    for helper in helpers:
        helper.close()


atexit.register(shutdown)


def _tail(path: Path, lines: int = 6) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:])
