"""A preloaded process that starts detached commands of this CLI by forking: ``python -m engines.fork_server``.

A run process (``python -m engines run <dir>``), an evaluation (``engines eval --dir``) or a chat model spends
its first seconds importing torch, Transformers, TRL and peft — most of the time from Launch to the first step.
This process imports them once; then, for each request, it forks a child that becomes that command, exactly as
:func:`engines.isolation.processes.spawn_detached` would have started it:

* a session of its own (it outlives whoever asked: the studio may close or restart while it trains), stdin
  closed, stdout and stderr appended to the log file the request names;
* the environment the request carries — and nothing else: this process was started with the environment user
  code may see (:func:`engines.isolation.user_env.user_code_env`), never with a credential, and the child's
  environment is replaced whole by the request's; the variables only its MCP servers may see go to its private
  table (:mod:`engines.isolation.server_env`), never into its environment;
* no file descriptor of this process (the protocol pipes);
* ``engines.cli.main(argv)``, then the interpreter's own exit: non-daemon threads joined, ``atexit`` handlers
  run, the exit status of the command.

The launcher (:mod:`engines.runs.launcher`) sends a request here only when the child would import the same
libraries with the same settings as a fresh interpreter: when no variable read at import time (``OMP_*``,
``CUDA_*``, ``HF_*``, ... :data:`engines.runs.launcher.IMPORT_TIME_PREFIXES`) differs between the request's environment and this
process's. Otherwise it starts a fresh interpreter.

This process ends with whoever started it: when its input ends (the starter closed it, or died). Its children
are its own until they end (it reaps them, so none stays ``<defunct>``); if it ends first they are re-parented,
as a detached process always is.

Protocol: on the inherited stdin/stdout (moved to private descriptors at start; descriptor 1 then points at
stderr so a stray ``print`` cannot corrupt it), one JSON object per line. First the hello:
``{"ready": true, "pid": N, "preload_s": S, "preload_error": str|null, "env": {...}}`` (``env``: the environment it
started with, which holds no credential). Requests:
``{"argv": [...], "log": path, "env": {...}, "server_env": {...}, "cwd": path|null}``; each gets one reply,
``{"pid": N}`` or ``{"error": "..."}``. ``{"returncode": N}`` asks how child N ended (this process reaps it, so
nobody else can): ``{"pid": N, "returncode": code}``, the code as ``Popen.returncode`` has it (minus the signal that
killed it), null while it runs (or for a pid that is not one of its last children).
"""

from __future__ import annotations

import atexit
import tempfile
import json
import os
import select
import signal
import sys
import threading
import time
import traceback

from .isolation import forking, server_env
from .isolation.privileges import close_inherited_fds


def preload() -> str | None:
    """Import what a run of the ``trl`` engine, an evaluation or a chat model imports first (the other engines' runs
    train in processes of their own: ms-swift's environment, Ray's workers). Nothing that a fresh ``trl`` run would
    not import: an import may set variables (verl's and Ray's do) that such a run would then see. Returns what
    failed (None: all)."""
    errors = []
    for name in (
        "torch",
        "transformers",
        "datasets",
        "peft",
        "accelerate",
        "trl",
        "engines.cli",
        "engines.core.prepare",
        "engines.core.standard",
        "engines.inference.evaluation",
        "engines.inference.chat_server",
    ):
        try:
            __import__(name)
        except Exception as e:  # noqa: BLE001 - a fresh interpreter would meet the same error, and say it
            errors.append(f"{name}: {type(e).__name__}: {e}")
    try:
        from .trl import TrlProcessor

        TrlProcessor.preload()
        TrlProcessor.preload_training()
    except Exception as e:  # noqa: BLE001 - reported by the engine's own checks
        errors.append(f"engine trl: {type(e).__name__}: {e}")
    from .fit.gpus import cuda_devices

    cuda_devices()  # the GPUs, read in a fork of this process (never CUDA here): every run's checks inherit them
    return "; ".join(errors) or None


_started_with: dict[str, str] = {}  # this process's environment before its preload
_imports_set: dict[str, str | None] = {}  # what the preload's imports changed in it (None: removed)


def as_if_imported(env: dict[str, str]) -> dict[str, str]:
    """``env`` as a fresh interpreter started with it would have it after the same imports: the variables those
    imports set (e.g. torch's ``TORCHINDUCTOR_CACHE_DIR``) set here too, unless ``env`` gave them another value."""
    out = dict(env)
    for name, value in _imports_set.items():
        if out.get(name) == _started_with.get(name):
            if value is None:
                out.pop(name, None)
            else:
                out[name] = value
    return out


def _exit_like_the_interpreter(code: int) -> None:
    """What a Python process does when its main module returns: join the threads that are not daemons, run
    the ``atexit`` handlers, flush the standard streams; then end with ``code``."""
    me = threading.current_thread()
    for t in threading.enumerate():
        if t is not me and not t.daemon:
            t.join()
    try:
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001 - an exit handler's error is printed, as the interpreter does
        traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)


#: temporary folders libraries make when the server imports them, each removed by the process's exit: (module,
#: attribute path). A forked process must not remove its server's (its files are read-only to it besides)
PRELOADED_TEMP_FOLDERS = (
    ("wandb.sdk.data_types._private", "MEDIA_TMP"),
    ("wandb.sdk.artifacts.artifact", "Artifact._TMP_DIR"),
)


def _leave_the_servers_temporary_folders() -> None:
    for module, path in PRELOADED_TEMP_FOLDERS:
        obj = sys.modules.get(module)
        for name in path.split("."):
            obj = getattr(obj, name, None)
        if isinstance(obj, tempfile.TemporaryDirectory):
            atexit.unregister(obj.cleanup)
            obj._finalizer.detach()


def become(request: dict) -> None:
    """In the forked child: become the requested command (never returns)."""
    code = 1
    try:
        os.setsid()
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        close_inherited_fds(set())
        sys.stdout = sys.__stdout__  # descriptor 1, the log now (the server pointed sys.stdout at stderr)
        for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _leave_the_servers_temporary_folders()
        os.environ.clear()
        os.environ.update(as_if_imported(request["env"]))
        server_env.install(request.get("server_env") or {})
        if request.get("cwd"):
            os.chdir(request["cwd"])
        from importlib.util import find_spec

        from engines.cli import main

        sys.argv = [find_spec("engines.__main__").origin, *request["argv"]]  # as `python -m engines` has it

        code = main(list(request["argv"]))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except KeyboardInterrupt:
        code = 130
    except BaseException:  # noqa: BLE001 - what a fresh interpreter prints for an uncaught exception
        traceback.print_exc()
        code = 1
    _exit_like_the_interpreter(int(code or 0))


def cuda_touched() -> str | None:
    """Why a process forked from this one could not use the GPU (None: it could, or there is none): torch
    initialized CUDA here, or a fork of this process tried and failed (an import that asked the driver, as
    ``torch.cuda.is_available()`` does, is enough). The test is a real fork using CUDA (engines/fit/gpus.py)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "CUDA was initialized while preloading"
    from .fit.gpus import fork_cuda_error

    error = fork_cuda_error()
    return f"a fork of the fork server could not use CUDA ({error})" if error else None


#: how many ended children's exit codes are kept for a ``returncode`` request
KEPT_EXIT_CODES = 256


class ForkServer:
    def __init__(self, proto_in, proto_out):
        self.proto_in, self.proto_out = proto_in, proto_out
        self.children: set[int] = set()
        self.exit_codes: dict[int, int | None] = {}  # the last children reaped, oldest first

    def reply(self, obj: dict) -> None:
        self.proto_out.write((json.dumps(obj) + "\n").encode())
        self.proto_out.flush()

    def reap(self) -> None:
        for pid in list(self.children):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, None
            if done:
                self.children.discard(pid)
                self.exit_codes[pid] = None if status is None else os.waitstatus_to_exitcode(status)
                while len(self.exit_codes) > KEPT_EXIT_CODES:
                    del self.exit_codes[next(iter(self.exit_codes))]

    def returncode(self, pid: int) -> None:
        """How a child ended (as ``Popen.returncode``: the exit code, or minus the signal), or None while it runs."""
        self.reap()
        self.reply({"pid": pid, "returncode": self.exit_codes.get(pid)})

    def spawn(self, request: dict) -> None:
        try:
            os.stat(os.path.dirname(os.path.abspath(request["log"])))  # a missing folder: said here, not lost
            pid = forking.fork()
        except (OSError, KeyError, TypeError) as e:
            self.reply({"error": f"{type(e).__name__}: {e}"})
            return
        if pid == 0:
            become(request)  # never returns
        self.children.add(pid)
        self.reply({"pid": pid})

    def serve(self) -> None:
        fd = self.proto_in.fileno()
        buf = b""
        while True:
            ready, _, _ = select.select([fd], [], [], 0.5)
            self.reap()
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return  # whoever started us closed its end
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    request = json.loads(line)
                except ValueError as e:
                    self.reply({"error": f"not a request: {e}"})
                    continue
                if "returncode" in request:
                    self.returncode(int(request["returncode"]))
                else:
                    self.spawn(request)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a terminal: whoever started us ends us
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)  # prints go to stderr, never into the protocol
    sys.stdout = sys.stderr
    _started_with.update(os.environ)
    t0 = time.time()
    error = preload()
    _imports_set.update(
        {n: os.environ.get(n) for n in {*_started_with, *os.environ} if os.environ.get(n) != _started_with.get(n)}
    )
    server = ForkServer(proto_in, proto_out)
    why = cuda_touched()
    if why:  # a forked run could not use the GPU: runs start as fresh interpreters instead
        server.reply({"ready": False, "error": why + ": runs start as fresh interpreters"})
        return
    try:
        server.reply(
            {
                "ready": True,
                "pid": os.getpid(),
                "preload_s": round(time.time() - t0, 2),
                "preload_error": error,
                "env": _started_with,
            }
        )
        server.serve()
    except (BrokenPipeError, OSError):
        pass


if __name__ == "__main__":
    main()
