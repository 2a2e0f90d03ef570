"""An isolated call's processes (engines.isolation.sandbox): found, killed to the last, and how many it may have
at once, kept by its supervisor.

``RLIMIT_NPROC`` cannot say it for root (the kernel never applies it to uid 0) and a pids cgroup is not
writable in most containers, so the supervisor counts the call's descendants itself, through
``/proc/<pid>/task/<tid>/children``, every :data:`WATCH_S` (:func:`watch`). Over the limit it freezes the
call's worker, kills every other descendant (those that left with ``setsid()`` included: they were
re-parented to the supervisor, a subreaper) and raises :class:`TooManyProcesses` in the worker through
SIGUSR1 (:func:`raise_in_worker`), so the module being checked gets that error, naming the count and the
limit, while the other modules are checked as usual. User code that swallows it and goes on forking is
killed outright the :data:`MAX_VIOLATIONS`-th time. What the supervisor found reaches the worker and the
caller through a small anonymous shared mapping made before the forks (:func:`shared`, :func:`read`).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import signal
import struct
import sys
import time
from contextlib import contextmanager
from typing import Iterable, Iterator

import psutil

DEFAULT_MAX_PROCESSES = 128
#: how many processes one isolated call (all its descendants together) may have at once
MAX_PROCESSES_ENV = "AWORLD_USER_CODE_MAX_PROCESSES"
#: seconds between two counts of a call's processes by its supervisor
WATCH_S = 0.02
#: the call is killed outright the time it goes over the process limit this often (it swallowed the error)
MAX_VIOLATIONS = 3
# shared between the caller, the supervisor and the worker (an anonymous shared mapping made before the
# forks): the processes counted at the last violation, how many violations, 1 once the call was killed for it
_SHM = struct.Struct("<iii")


def shared() -> mmap.mmap:
    """The mapping the caller, the supervisor and the worker share (make it before the forks)."""
    return mmap.mmap(-1, _SHM.size)


def read(shm: mmap.mmap) -> tuple[int, int, int]:
    """(processes counted at the last violation, violations, 1 once the call was killed for them)."""
    return _SHM.unpack_from(shm)


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _kill_all(procs: Iterable[psutil.Process]) -> list[int]:
    killed = []
    for p in procs:
        try:
            p.kill()
            killed.append(p.pid)
        except psutil.Error:
            pass
    return killed


_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """This process adopts its descendants whose parents end (Linux's child subreaper): a daemon that forked twice
    into a session of its own stays below it, where :func:`kill_descendants` finds it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: process groups still catch the usual forks
        pass


@contextmanager
def owning_what_it_starts() -> Iterator[None]:
    """For a process that runs user code to its end (a run, an evaluation): what the code starts and leaves behind
    — a daemon in a session of its own, ignoring SIGTERM, included — is this process's, and is killed when it
    ends (SIGKILL): nothing outlives the run to hold its files or the machine's training slot."""
    become_subreaper()
    try:
        yield
    finally:
        kill_descendants(os.getpid())


def kill_descendants(pid: int, rounds: int = 20) -> list[int]:
    """SIGKILL every descendant of ``pid`` (frozen first, so none forks away), until none is left."""
    killed: list[int] = []
    for _ in range(rounds):
        procs = _descendants(pid)
        if not procs:
            break
        for p in procs:
            try:
                p.suspend()
            except psutil.Error:
                pass
        killed += _kill_all(procs + _descendants(pid))
    return killed


def max_processes() -> int:
    """How many processes an isolated call may have at once: ``$AWORLD_USER_CODE_MAX_PROCESSES``, else 128
    (0: no limit)."""
    try:
        value = int(os.environ.get(MAX_PROCESSES_ENV, "") or DEFAULT_MAX_PROCESSES)
    except ValueError:
        return DEFAULT_MAX_PROCESSES
    return max(0, value)


class TooManyProcesses(RuntimeError):
    """Raised in user code (by its call's supervisor, through SIGUSR1) when the call went over its process
    limit; every process it had started was killed by then."""


def too_many(count: int, limit: int) -> str:
    return (
        f"started {count} processes at once (more than the limit of {limit}, ${MAX_PROCESSES_ENV}); all of them "
        "were killed, including those that left with setsid() — start fewer (a small pool), or raise the limit"
    )


def _live_tree(root: int) -> list[int]:
    """The live (not zombie) descendants of ``root``, through ``/proc/<pid>/task/<tid>/children`` (only the
    call's own tree is read, not all of ``/proc``); psutil where the kernel lacks that file."""
    out: list[int] = []
    todo = [root]
    seen = {root}
    while todo:
        pid = todo.pop()
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        kids: list[int] = []
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    kids += [int(k) for k in f.read().split()]
            except FileNotFoundError:
                if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                    continue
                return [p.pid for p in _descendants(root) if _alive_pid(p.pid)]  # no such file: older kernel
            except (OSError, ValueError):
                continue
        for k in kids:
            if k not in seen:
                seen.add(k)
                todo.append(k)
                if _alive_pid(k):
                    out.append(k)
    return out


def _alive_pid(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_all_but(worker: int, rounds: int = 50) -> int:
    """SIGKILL every live descendant of this process but ``worker`` (stopped by then), each round's frozen
    first so none forks away; returns how many were killed."""
    killed: set[int] = set()
    me = os.getpid()
    for _ in range(rounds):
        procs = [p for p in _live_tree(me) if p != worker]
        if not procs:
            break
        for p in procs:
            _signal(p, signal.SIGSTOP)
        for p in procs:
            _signal(p, signal.SIGKILL)
        killed.update(procs)
        _reap_orphans(worker)
    return len(killed)


_worker_status: int | None = None  # in the supervisor: the worker's wait status once reaped


def _reap_orphans(worker: int) -> bool:
    """Reap what has ended below the supervisor (orphans are re-parented to it); True once ``worker`` has."""
    global _worker_status
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            if _worker_status is None:
                _worker_status = 0
            return True
        if pid == 0:
            return _worker_status is not None
        if pid == worker:
            _worker_status = status


def watch(worker: int, limit: int, shm: mmap.mmap | None) -> int:
    """Wait for ``worker`` to end, reaping orphans; every :data:`WATCH_S` count the call's processes and
    act on a call over ``limit``. Returns the worker's wait status."""
    while not _reap_orphans(worker):
        if limit and shm is not None:
            live = [p for p in _live_tree(os.getpid()) if p != worker]
            if len(live) > limit:
                _signal(worker, signal.SIGSTOP)
                count = max(len(live), _kill_all_but(worker))
                violations = _SHM.unpack_from(shm)[1]
                violations += 1
                hard = violations >= MAX_VIOLATIONS
                _SHM.pack_into(shm, 0, count, violations, int(hard))
                if hard:  # it swallowed TooManyProcesses and went on
                    _signal(worker, signal.SIGKILL)
                else:
                    _signal(worker, signal.SIGUSR1)
                _signal(worker, signal.SIGCONT)
                continue
        time.sleep(WATCH_S)
    assert _worker_status is not None
    return _worker_status


def raise_in_worker(limit: int, shm: mmap.mmap | None) -> None:
    """In the worker, before the user code: the supervisor's SIGUSR1 raises :class:`TooManyProcesses` there."""

    def over_limit(signum, frame) -> None:  # noqa: ARG001 - the supervisor killed what it had started
        while True:  # their zombies (the supervisor reaps those re-parented to it)
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
        most = _SHM.unpack_from(shm)[0] if shm is not None else 0
        raise TooManyProcesses(too_many(most, limit))

    def unraisable(info, default=sys.unraisablehook) -> None:
        # raised where Python cannot raise it (in os.fork's at-fork hooks, where a fork loop mostly is when
        # the signal comes): raised again at the next line that runs in a frame below (the user code's)
        if not isinstance(info.exc_value, TooManyProcesses):
            return default(info)
        message = str(info.exc_value)

        def again(frame, event, arg):  # noqa: ARG001 - a trace function
            if event == "line":
                sys.settrace(None)
                raise TooManyProcesses(message)
            return again

        f = sys._getframe(1)
        while f is not None:
            f.f_trace, f.f_trace_lines = again, True
            f = f.f_back
        sys.settrace(again)

    sys.unraisablehook = unraisable
    signal.signal(signal.SIGUSR1, over_limit)
