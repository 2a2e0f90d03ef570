"""The check worker's child side: ``python -m aworld_gui.worker.zygote``.

A "zygote": it imports the heavy libraries (datasets, transformers, the engines' check code)
once, then serves the studio's requests. Each request runs in an
:class:`engines.isolation.sandbox.IsolatedCall` — a fork of the zygote in a session of its own — so

* user code (tools, reward files) never runs in the studio process, and never leaves state
  behind in the zygote either (every call starts from the same clean, pre-imported state);
* several calls run at once, each with its own time limit; a call over its limit, or cancelled
  by the studio (a newer check from the same page), is killed with everything it started,
  without losing the warm zygote;
* a crash (a signal, ``os._exit``) in user code is reported as an error for that call, naming the
  stage it was in (the module being checked).

The zygote is started without credentials in its environment (:mod:`engines.isolation.user_env`); a call
gets the environment user code may see plus the variables its request carries (those its agent
or config asks for by ``${NAME}``).

Protocol on the inherited stdin/stdout (moved to private fds at start; fd 1 then points at
stderr so a stray ``print`` cannot corrupt it): frames of a 4-byte big-endian length and a pickle.
Requests: ``("call", id, task, kwargs, timeout_s, env)`` and ``("cancel", id, reason)``. Replies:
``(id, ok, payload)`` where ``payload`` is the task's result or :meth:`Outcome.failure`'s dict
(``error``, ``kind``, ``stage``, ``output``, ...), in the order the calls end.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import sys
import time

from engines.isolation.sandbox import IsolatedCall
from engines.isolation.user_env import user_code_env

_HDR = struct.Struct(">I")
#: comma-separated modules whose ``TASKS`` add to :data:`aworld_gui.worker.check_tasks.TASKS` (tests register theirs)
TASK_MODULES_ENV = "AWORLD_WORKER_TASK_MODULES"


def read_frame(f) -> object:
    head = _read_exact(f, _HDR.size)
    if head is None:
        raise EOFError
    (n,) = _HDR.unpack(head)
    body = _read_exact(f, n)
    if body is None:
        raise EOFError
    return pickle.loads(body)


def write_frame(f, obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(_HDR.pack(len(data)) + data)
    f.flush()


def _read_exact(f, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = f.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


class Zygote:
    """The serving loop: requests in, one isolated call per request, replies out as calls end."""

    def __init__(self, proto_in, proto_out):
        from aworld_gui.worker import check_tasks as tasks

        self.tasks = tasks.TASKS
        self.writes = tasks.WRITES
        self.proto_in, self.proto_out = proto_in, proto_out
        self.calls: dict[object, IsolatedCall] = {}

    def reply(self, call_id: object, ok: bool, payload: object) -> None:
        write_frame(self.proto_out, (call_id, ok, payload))

    def start(
        self, call_id: object, task: str, kwargs: dict, timeout_s: float, env: dict | None, server_env: dict | None
    ) -> None:
        fn = self.tasks.get(task)
        if fn is None:
            self.reply(call_id, False, {"error": f"unknown worker task '{task}'", "kind": "bug", "output": ""})
            return
        if call_id in self.calls:  # an id reused while its call runs: the old one is superseded
            self.cancel(call_id, "superseded")
        call_env = dict(os.environ)
        call_env.update(env or {})
        writable = self.writes[task](kwargs) if task in self.writes else []
        self.calls[call_id] = IsolatedCall(
            fn, kwargs, timeout_s=timeout_s, env=call_env, server_env=server_env, writable=writable
        )

    def cancel(self, call_id: object, reason: str = "") -> None:
        call = self.calls.get(call_id)
        if call is not None:
            call.stop("cancelled", reason)
            self.finish(call_id)

    def finish(self, call_id: object) -> None:
        call = self.calls.pop(call_id)
        out = call.finish()
        if out.ok:
            self.reply(call_id, True, out.value)
        else:
            self.reply(call_id, False, out.failure())

    def handle_request(self) -> None:
        msg = read_frame(self.proto_in)
        if msg[0] == "call":
            _, call_id, task, kwargs, timeout_s, env, server_env = msg
            try:
                self.start(call_id, task, kwargs, float(timeout_s), env, server_env)
            except Exception as e:  # noqa: BLE001 - the zygote must keep serving (e.g. fork failed)
                self.reply(
                    call_id, False, {"error": f"worker error: {type(e).__name__}: {e}", "kind": "bug", "output": ""}
                )
        elif msg[0] == "cancel":
            self.cancel(msg[1], msg[2] if len(msg) > 2 else "")

    def serve(self) -> None:
        in_fd = self.proto_in.fileno()
        while True:
            fds = [in_fd] + [fd for c in self.calls.values() for fd in c.fds()]
            now = time.monotonic()
            wait = min([c.deadline - now for c in self.calls.values()] + [3600.0])
            # without pidfds a call's exit is noticed by polling
            if any(c._pidfd is None for c in self.calls.values()):
                wait = min(wait, 0.05)
            ready, _, _ = select.select(fds, [], [], max(0.0, wait))
            ready_set = set(ready)
            for call_id, call in list(self.calls.items()):
                if call.pump(ready_set):
                    self.finish(call_id)
            if in_fd in ready_set:
                self.handle_request()


def main() -> None:
    # Ctrl-C in the studio's terminal reaches its whole process group: the studio ends this worker
    # itself (it kills it on close; a closed pipe ends it too), so no KeyboardInterrupt traceback here
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # prints (ours or user code's) go to stderr, never into the protocol
    sys.stdout = sys.stderr
    # whatever started us, no credential stays in this process's environment (calls get theirs per request)
    scrubbed = user_code_env()
    for name in [n for n in os.environ if n not in scrubbed]:
        del os.environ[name]
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    t0 = time.time()
    import importlib

    from aworld_gui.worker import check_tasks as tasks

    for name in filter(None, os.environ.get(TASK_MODULES_ENV, "").split(",")):
        module = importlib.import_module(name.strip())
        tasks.TASKS.update(module.TASKS)
        tasks.WRITES.update(getattr(module, "WRITES", {}))
    preload_error = tasks.preload()
    zygote = Zygote(proto_in, proto_out)
    try:
        write_frame(
            proto_out,
            ("ready", {"pid": os.getpid(), "preload_s": round(time.time() - t0, 2), "preload_error": preload_error}),
        )
        zygote.serve()
    except (EOFError, BrokenPipeError):  # the studio closed its end (it stopped, even mid-preload)
        for call_id in list(zygote.calls):
            call = zygote.calls.pop(call_id)
            call.stop("cancelled", "the studio stopped")
            call.finish()
        return


if __name__ == "__main__":
    main()
