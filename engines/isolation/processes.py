"""Process control, written once: start a command detached, end a whole process tree.

* :func:`spawn_detached` — a command in a process session of its own, its stdout and stderr
  appended to a log file (never a pipe that someone must drain), stdin closed. Whoever started it
  can exit or restart without stopping or freezing it.
* :func:`terminate_tree` — SIGTERM, a grace period, then SIGKILL, to a process, its process group,
  every descendant (also those that moved to sessions of their own, e.g. Ray's workers) and, for a
  session leader, whatever is left in its session.
* :func:`free_port` — a TCP port on 127.0.0.1 that is free right now (accelerate's rendezvous, and
  the tests' servers through :mod:`testing`).

Used by the run launcher (:mod:`engines.runs.lifecycle`), the verl jobs, the studio's check worker, the
Ray head helper of the tests, and the benchmarks.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from pathlib import Path
from typing import Mapping, Sequence

import psutil

from . import server_env as server_env_table

_children: list[subprocess.Popen] = []  # started here and not yet reaped (reap_detached)
_children_lock = threading.Lock()


def spawn_detached(
    argv: Sequence[str],
    log_path: str | os.PathLike,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    server_env: Mapping[str, str] | None = None,
) -> subprocess.Popen:
    """Start ``argv`` in a new session, output appended to ``log_path``; returns the Popen. A long-lived
    caller (the studio) calls :func:`reap_detached` now and then, so a child that ended never stays
    ``<defunct>`` whether or not its starter still looks at it (a chat model that exited when idle, an
    environment's setup). ``server_env``: the variables only the child's MCP servers may see, handed over
    beside its environment (:mod:`engines.isolation.server_env`; a ``python -m engines`` child reads them)."""
    handed, fd = server_env_table.handover(server_env or {})
    child_env = None if env is None else dict(env)
    if handed:
        child_env = {**(os.environ if child_env is None else child_env), **handed}
    try:
        with open(Path(log_path), "ab") as log:
            proc = subprocess.Popen(
                list(argv),
                cwd=None if cwd is None else str(cwd),
                env=child_env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                pass_fds=() if fd is None else (fd,),
            )
    finally:
        if fd is not None:
            os.close(fd)
    with _children_lock:
        _children.append(proc)
    return proc


def reap_detached() -> int:
    """Collect the exit status of every :func:`spawn_detached` child that has ended (its Popen keeps the
    return code for whoever asks later); returns how many were reaped."""
    with _children_lock:
        ended = [p for p in _children if p.poll() is not None]
        for p in ended:
            _children.remove(p)
    return len(ended)


def _tree(pid: int) -> list[psutil.Process]:
    """``pid``, its descendants, and — when it leads a session — every process left in that session
    (daemons that were re-parented to init, such as a local Ray head's)."""
    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return []
    procs = {root.pid: root}
    try:
        procs.update((p.pid, p) for p in root.children(recursive=True))
    except psutil.Error:
        pass
    try:
        leads_session = os.getsid(pid) == pid
    except (ProcessLookupError, PermissionError):
        leads_session = False
    if leads_session:
        for p in psutil.process_iter():
            try:
                if p.pid not in procs and os.getsid(p.pid) == pid:
                    procs[p.pid] = p
            except (ProcessLookupError, PermissionError, psutil.Error):
                continue
    return list(procs.values())


def terminate_tree(pid: int, grace_s: float = 5.0, kill_wait_s: float = 5.0, group: bool = True) -> bool:
    """End ``pid`` and all its descendants: SIGTERM, wait up to ``grace_s``, then SIGKILL what is left.
    ``group`` also signals ``pid``'s process group (when ``pid`` leads one, as a detached process
    does). Returns True when something was signalled."""
    procs = _tree(pid)
    pgid = None
    if group:
        try:
            pgid = os.getpgid(pid)
        except (ProcessLookupError, PermissionError):
            pgid = None
        if pgid is not None and pgid != pid:
            pgid = None  # never signal a group that this process merely belongs to (e.g. ours)
    if not procs and pgid is None:
        return False
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, kill_wait_s)):
        if pgid is not None:
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        for p in procs:
            try:
                p.send_signal(sig)
            except psutil.Error:
                pass
        _, procs = psutil.wait_procs(procs, timeout=wait_s)
        if not procs:
            break
    return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (bound by the OS, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
