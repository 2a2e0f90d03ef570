"""The check worker's child side: ``python -m aworld_gui.zygote``.

A "zygote": it imports the heavy libraries (datasets, transformers, the engines' check code)
once, then serves requests from the studio one at a time. Each request runs in a fresh
``fork()`` of the zygote, so

* user code (tools, reward files) never runs in the studio process, and never leaves state
  behind in the zygote either (every call starts from the same clean, pre-imported state);
* a call that exceeds its time limit is killed (SIGKILL) without losing the warm zygote;
* a crash (segfault, ``os._exit``) in user code is reported as an error for that call;
* nothing a call started outlives it: the zygote is the "child subreaper" of its forks, so a process a
  call started (an MCP server the agent check launched, in a session of its own) comes back to the
  zygote when the call's fork ends, and is ended with it (:func:`engines.processes.terminate_tree`).

Protocol on the inherited stdin/stdout (moved to private fds at start; fd 1 then points at
stderr so a stray ``print`` in user code cannot corrupt it): frames of a 4-byte big-endian
length followed by a pickle. Request ``(task, kwargs, timeout_s)``; reply ``(ok, payload)``
where ``payload`` is the task's result or ``{"error": str, "kind": str, "output": str, "stage": str}``;
``stage`` is the last :func:`report_progress` of the call (e.g. the module being checked).
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import sys
import tempfile
import time
import traceback

_HDR = struct.Struct(">I")
#: comma-separated modules whose ``TASKS`` add to :data:`aworld_gui.check_tasks.TASKS` (tests register theirs)
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


_progress_fd: int | None = None   # in a call's fork: where report_progress writes
PR_SET_CHILD_SUBREAPER = 36       # linux/prctl.h


def become_subreaper() -> bool:
    """Orphans of our descendants are re-parented to us (Linux), so a call's leftovers can be found."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def end_leftovers() -> list[int]:
    """End every process a finished call left behind (between calls the zygote has no other child)."""
    import psutil

    from engines.processes import terminate_tree

    ended = []
    for child in psutil.Process().children():
        ended.append(child.pid)
        terminate_tree(child.pid, grace_s=2.0, kill_wait_s=2.0)
    return ended


def report_progress(stage: str) -> None:
    """Called by a task (in its fork) as it moves on, e.g. to the next module's check: when the call
    then times out or crashes, the studio is told which stage it was in."""
    if _progress_fd is not None:
        try:
            os.write(_progress_fd, (stage.replace("\n", " ") + "\n").encode())
        except OSError:
            pass


def _run_in_fork(task: str, kwargs: dict, timeout_s: float) -> tuple[bool, object]:
    global _progress_fd
    from aworld_gui import check_tasks as tasks

    fn = tasks.TASKS.get(task)
    if fn is None:
        return False, {"error": f"unknown worker task '{task}'", "kind": "bug", "output": ""}
    out_file = tempfile.TemporaryFile()
    r, w = os.pipe()
    pr, pw = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: do the work, write the pickled result, exit without cleanup
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)   # a check is interrupted like any program
            os.close(r)
            os.close(pr)
            _progress_fd = pw
            os.dup2(out_file.fileno(), 1)
            os.dup2(out_file.fileno(), 2)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            try:
                result: tuple[bool, object] = (True, fn(**kwargs))
            except BaseException as e:  # noqa: BLE001 - user code may raise anything
                result = (False, {"error": f"{type(e).__name__}: {e}", "kind": "exception",
                                  "traceback": traceback.format_exc(limit=8), "output": ""})
            try:
                data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as e:  # noqa: BLE001
                data = pickle.dumps((False, {"error": f"result is not picklable: {e}", "kind": "bug",
                                             "output": ""}))
            with os.fdopen(w, "wb") as fw:
                fw.write(data)
        finally:
            os._exit(0)
    os.close(w)
    os.close(pw)
    chunks: list[bytes] = []
    progress = b""
    deadline = time.monotonic() + timeout_s
    timed_out = False
    watching = [r, pr]
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select(watching, [], [], left)
        if pr in ready:
            data = os.read(pr, 65536)
            if data:
                progress = (progress + data)[-4096:]
            else:
                watching.remove(pr)
        if r not in ready:
            continue
        chunk = os.read(r, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    os.close(pr)
    lines = progress.decode("utf-8", errors="replace").splitlines()
    stage = lines[-1] if lines else None
    if timed_out:  # the fork and everything it started (its own children found before they are orphaned)
        from engines.processes import terminate_tree

        terminate_tree(pid, grace_s=2.0, kill_wait_s=2.0)
    try:
        _, code = os.waitpid(pid, 0)
    except ChildProcessError:  # terminate_tree's wait reaped it already
        code = 0
    end_leftovers()
    out_file.seek(0)
    output = out_file.read()[-4000:].decode("utf-8", errors="replace")
    out_file.close()
    if timed_out:
        return False, {"error": f"timed out after {timeout_s:g} s (the call was killed)", "kind": "timeout",
                       "output": output, "stage": stage}
    if not chunks:
        how = (f"killed by signal {os.WTERMSIG(code)}" if os.WIFSIGNALED(code)
               else f"exit code {os.WEXITSTATUS(code)}")
        return False, {"error": f"the check process crashed ({how})", "kind": "crash", "output": output,
                       "stage": stage}
    ok, payload = pickle.loads(b"".join(chunks))
    if not ok and isinstance(payload, dict):
        payload["output"] = output
        payload.setdefault("stage", stage)
    return ok, payload


def main() -> None:
    # run as ``python -m aworld_gui.zygote`` this module is ``__main__``: tasks that import
    # report_progress must reach this copy (its _progress_fd), not a second import of the file
    sys.modules.setdefault("aworld_gui.zygote", sys.modules[__name__])
    # Ctrl-C in the studio's terminal reaches its whole process group: the studio ends this worker
    # itself (it kills it on close; a closed pipe ends it too), so no KeyboardInterrupt traceback here
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # prints (ours or user code's) go to stderr, never into the protocol
    sys.stdout = sys.stderr
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    t0 = time.time()
    import importlib

    from aworld_gui import check_tasks as tasks

    for name in filter(None, os.environ.get(TASK_MODULES_ENV, "").split(",")):
        tasks.TASKS.update(importlib.import_module(name.strip()).TASKS)
    preload_error = tasks.preload()
    become_subreaper()
    try:
        write_frame(proto_out, ("ready", {"pid": os.getpid(), "preload_s": round(time.time() - t0, 2),
                                          "preload_error": preload_error}))
        while True:
            task, kwargs, timeout_s = read_frame(proto_in)
            try:
                reply = _run_in_fork(task, kwargs, float(timeout_s))
            except Exception as e:  # noqa: BLE001 - the zygote must keep serving
                reply = (False, {"error": f"worker error: {type(e).__name__}: {e}", "kind": "bug", "output": ""})
            write_frame(proto_out, reply)
    except (EOFError, BrokenPipeError):   # the studio closed its end (it stopped, even mid-preload)
        return


if __name__ == "__main__":
    main()
