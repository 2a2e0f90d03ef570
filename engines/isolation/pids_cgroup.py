"""The kernel's own cap on an isolated call's tasks, where this machine lets us make a pids cgroup.

The supervisor counts the call's processes every 20 ms (:mod:`engines.isolation.process_tree`); a burst of
forks between two counts can pass the limit before it acts. Where the pids controller can be written (cgroup v1's
``/sys/fs/cgroup/pids``, or a delegated cgroup v2 subtree: the process's own cgroup with ``pids`` in its
``cgroup.subtree_control``), the supervisor makes ``aworld-call-<pid>`` there with ``pids.max`` set, the worker
joins it before any user code runs, and every fork past the cap fails in the kernel (``EAGAIN``), whatever
the timing. The controller counts tasks — threads as well as processes — so the cap (:func:`cap_for`) is
:data:`TASKS_PER_PROCESS` times the process limit plus :data:`TASKS_PER_CPU` per CPU: a ceiling for bursts, while
the count stays the limit's exact measure and error. A fork the kernel refuses raises ``BlockingIOError``
(``EAGAIN``) in the user code.
Where no cgroup can be made (most unprivileged containers) :meth:`PidsCgroup.make` returns ``None`` and the count
alone holds the limit. A cgroup left by a supervisor that was SIGKILLed is removed by the next call's (a cgroup
still in use cannot be removed: ``rmdir`` refuses it).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

V1_ROOT = Path("/sys/fs/cgroup/pids")
V2_ROOT = Path("/sys/fs/cgroup")
PREFIX = "aworld-call-"
#: the cgroup caps tasks (threads count), the limit counts processes: this many tasks per process allowed,
#: and this many more per CPU (thread pools — torch's, a tokenizer's — are as wide as the machine)
TASKS_PER_PROCESS = 8
TASKS_PER_CPU = 8


def _own_cgroup() -> Path | None:
    """The pids cgroup directory this process is in: v1's pids hierarchy, else v2's unified one."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    unified = None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(",") and V1_ROOT.is_dir():
            return V1_ROOT / path.lstrip("/")
        if controllers == "":
            unified = V2_ROOT / path.lstrip("/")
    if unified is not None:
        try:
            if "pids" in (unified / "cgroup.subtree_control").read_text().split():
                return unified
        except OSError:
            pass
    return None


def cap_for(limit: int) -> int:
    """The cgroup's ``pids.max`` for a call limited to ``limit`` processes."""
    return TASKS_PER_PROCESS * limit + TASKS_PER_CPU * (os.cpu_count() or 1)


class PidsCgroup:
    """One call's pids cgroup: made by its supervisor, joined by its worker, removed when the call ends."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def make(cls, limit: int) -> "PidsCgroup | None":
        """A new cgroup capped at :func:`cap_for` ``(limit)`` tasks, or ``None`` where none can be made."""
        if limit <= 0:
            return None
        base = _own_cgroup()
        if base is None:
            return None
        _remove_stale(base)
        path = base / f"{PREFIX}{os.getpid()}"
        try:
            path.mkdir()
        except FileExistsError:
            pass
        except OSError:
            return None
        made = cls(path)
        try:
            (path / "pids.max").write_text(str(cap_for(limit)))
        except OSError:
            made.remove()
            return None
        return made

    def join(self) -> bool:
        """Move this process (the worker, before user code) into the cgroup: its forks are counted from now.
        False where it could not (the count alone holds the limit then, as where no cgroup can be made)."""
        try:
            (self.path / "cgroup.procs").write_text(str(os.getpid()))
            return True
        except OSError:
            return False

    def tasks(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def remove(self, wait_s: float = 2.0) -> None:
        """Kill whatever is still in it (nothing, when the supervisor's own sweep ran), wait until the kernel has
        let them go (their parent reaped them), then remove it; one still busy is left for the next call."""
        deadline = time.monotonic() + wait_s
        while True:
            for pid in self.tasks():
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, os.WNOHANG)  # ours (the supervisor is a subreaper): reaped; the call's only
                except OSError:  # ChildProcessError included: someone else's child, its parent reaps it
                    pass
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.01)


def _remove_stale(base: Path) -> None:
    """Cgroups of supervisors that died without removing theirs: their supervisor's pid (in the name) is gone,
    and they are empty (``rmdir`` refuses the rest)."""
    try:
        stale = [p for p in base.iterdir() if p.name.startswith(PREFIX) and p.is_dir()]
    except OSError:
        return
    for p in stale:
        owner = p.name[len(PREFIX) :]
        if owner.isdigit() and Path(f"/proc/{owner}").exists():
            continue  # a live supervisor's (its worker may not have joined yet)
        try:
            p.rmdir()
        except OSError:
            pass
