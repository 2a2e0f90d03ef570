"""Run processes: start detached, queue for the machine, see if alive, stop, list.

A run process is ``python -m engines run <run_dir>`` in its own process session, its output
going to ``train.log`` — never to a pipe the launcher must drain — so the launcher (the
studio) can close or restart without stopping or freezing training. Local runs take the
machine's training slot (an ``flock`` on ``<runs>/.slot.lock``) for their lifetime; a run
launched while the slot is held waits in state ``queued``, first come first served.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import socket
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from ..isolation.processes import spawn_detached, terminate_tree
from ..fit import disk_full
from .causes import Cause
from .launcher import Launcher, Spawned
from .no_links import read_no_link
from .rundir import (
    ACTIVE_STATES,
    FAILED,
    FALLBACK_DIR,
    QUEUED,
    RUNNING,
    STATUS_FILE,
    STOPPED,
    STOPPING,
    RunDir,
)
from ..isolation.user_env import user_code_envs

SLOT_LOCK = ".slot.lock"
HEARTBEAT_TIMEOUT_S = 120.0


# -- liveness -------------------------------------------------------------------------------
LOST_ERROR = "the training process is gone without a final status (killed, or the machine restarted)"


def process_alive(status: dict) -> bool:
    """Whether the process status.json names is alive. A process on another host (a shared
    filesystem) cannot be seen from here and counts as alive."""
    pid = status.get("pid")
    if not pid:
        return False
    host = status.get("host")
    if host and host != socket.gethostname():
        return True
    try:
        p = psutil.Process(int(pid))
        if p.status() == psutil.STATUS_ZOMBIE:
            return False
        created = status.get("pid_create_time")
        return created is None or abs(p.create_time() - float(created)) < 1.0
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError, TypeError, OverflowError):
        return False  # gone, or a pid of no type a pid has (user code in the run can write its status.json)


def _lost(status: dict) -> bool:
    return status.get("state") in ACTIVE_STATES and bool(status.get("pid")) and not process_alive(status)


def effective_status(run: RunDir) -> dict:
    """status.json, with a run whose process died without saying so (SIGKILL, a machine restart)
    recorded as ended: the first reader that sees the dead pid writes it to status.json, with one
    event, under the run directory's lock (so it happens once)."""
    status = run.read_status()
    if not _lost(status):
        return status
    # a process that died on a full disk could not write why: its disk says it
    full = disk_full.is_full(run.path)
    cause, error = (
        (Cause.DISK_FULL, f"{LOST_ERROR}; {disk_full.disk_full_note(run.path)}") if full else (None, LOST_ERROR)
    )
    try:
        # it ended at its last sign of life, not when a reader noticed: elapsed time and speed stop there
        return record_killed(run, error, only_if=_lost, ended=status.get("heartbeat"), cause=cause, lost=True)
    except OSError:  # a read-only (or full) run directory: report it, even if it cannot be recorded
        return dict(
            status,
            state=FAILED,
            cause=status.get("cause") or cause or Cause.KILLED,
            error=status.get("error") or error,
            lost=True,
        )


def record_killed(
    run: RunDir,
    message: str,
    only_if=lambda st: st.get("state") in ACTIVE_STATES,
    ended: float | None = None,
    cause: Cause | None = None,
    **fields,
) -> dict:
    """Record, once, that a run's process was killed: ``stopped`` when a stop had been asked for,
    else ``failed`` (cause ``killed``, or ``cause``), in status.json and events.jsonl, under the run's lock.
    ``ended``: when it ended, if known (now otherwise)."""
    with run.locked():
        status = run.read_status()
        if not only_if(status):  # someone recorded the end already
            return status
        state = STOPPED if run.stop_requested() else FAILED
        status = run.write_status(
            state=state,
            cause=status.get("cause") or cause or Cause.KILLED,
            error=status.get("error") or message,
            ended=ended or time.time(),
            **fields,
        )
        run.event(state, cause=status["cause"], message=status["error"], **fields)
        return status


# -- launching ------------------------------------------------------------------------------
def spawn_run(
    run_dir: str | os.PathLike,
    extra_args: list[str] | None = None,
    env: dict[str, str] | None = None,
    launcher: Launcher | None = None,
) -> int:
    """Start ``python -m engines run <run_dir>`` detached; returns its pid. The run gets the environment
    user code may see (engines.isolation.user_env): no credentials, except those its run.yaml asks for by ``${NAME}``;
    the ones only an MCP server asks for are handed to the run beside its environment (engines.isolation.server_env).
    ``launcher``: forks it from a preloaded process where it can (engines.runs.launcher), else a fresh interpreter."""
    run = RunDir(run_dir)
    if not run.read_status():
        run.write_status(state=QUEUED)
    spec = run.file("run.yaml")
    full_env, servers = user_code_envs(spec, extra={**(env or {}), "PYTHONUNBUFFERED": "1"})
    args = ["run", str(run.path), *(extra_args or [])]
    # a run that will wait for the machine's slot is a fresh interpreter: it waits as a small process (torch and
    # the engine are imported when its turn comes), not as a fork holding everything the fork server imported
    queues = run.read_spec().get("machine_slot", True) and Slot(run.path.parent).busy()
    if launcher is not None and not queues:
        spawned = launcher.spawn(args, run.log_path, env=full_env, server_env=servers)
    else:
        proc = spawn_detached([sys.executable, "-m", "engines", *args], run.log_path, env=full_env, server_env=servers)
        spawned = Spawned(proc.pid, "exec", "it waits for the machine's slot" if queues else "no fork server here")
    fields = {"spawned": spawned.how, "spawned_why": spawned.why}
    try:
        fields.update(pid=spawned.pid, pid_create_time=psutil.Process(spawned.pid).create_time())
    except psutil.NoSuchProcess:  # ended already (a run stopped before it started): its status says how
        return spawned.pid
    run.write_status(**fields, launched=time.time())
    return spawned.pid


class Slot:
    """The machine's training slot: an exclusive flock held for the life of a local run."""

    def __init__(self, runs_dir: str | os.PathLike):
        self.path = Path(runs_dir) / SLOT_LOCK
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return True

    def _open(self) -> int:
        """The lock file, opened from the runs folder's descriptor: never through a link, and never another file's
        hard link (user code can write into the runs folder; a link planted at .slot.lock had the studio, as root,
        truncate its target and write a pid into it). Whatever was planted there is replaced by a new lock file."""
        dir_fd = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            for _attempt in range(3):
                try:
                    fd = os.open(self.path.name, os.O_RDWR | os.O_CREAT | _NO_LINK, 0o644, dir_fd=dir_fd)
                except OSError as e:
                    if e.errno not in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
                        raise
                    fd = None
                if fd is not None:
                    st = os.fstat(fd)
                    if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
                        return fd
                    os.close(fd)
                _remove_planted(self.path.name, dir_fd)
            raise OSError(
                errno.EEXIST, f"{self.path} keeps being replaced: the machine's training slot cannot be taken"
            )
        finally:
            os.close(dir_fd)

    def busy(self) -> bool:
        if self._fd is not None:
            return True
        if self.try_acquire():
            self.release()
            return False
        return True

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


_NO_LINK = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _remove_planted(name: str, dir_fd: int) -> None:
    """A link, hard link, pipe or folder put where the slot's lock file goes: removed (never followed)."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except IsADirectoryError:
        shutil.rmtree(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def wait_for_slot(run: RunDir, slot: Slot, poll_s: float = 0.5) -> bool:
    """Block in state ``queued`` until this run is first in line and the slot is free, keeping
    ``queue_position`` (1 = next), ``queued_ahead`` (the runs queued before it, first in line first) and
    ``waiting_for`` (the run holding the slot, None when no run does) in status.json.

    Returns False when a stop was requested while waiting.
    """
    announced, shown = False, None
    while True:
        if run.stop_requested():
            return False
        ahead = _queued_ahead(run)
        if not ahead and slot.try_acquire():
            if announced:
                run.write_status(queue_position=None, queued_ahead=None, waiting_for=None)
            return True
        where = {"queue_position": len(ahead) + 1, "queued_ahead": ahead, "waiting_for": slot_holder(run.path.parent)}
        if not announced:
            run.mark_process(QUEUED, **where)
            run.event("queued", message="waiting for the running job to finish", **where)
            announced, shown = True, where
        elif where != shown:
            run.write_status(durable=False, **where)
            shown = where
        else:
            run.write_status(durable=False)  # heartbeat
        time.sleep(poll_s)


def _queued_ahead(run: RunDir) -> list[str]:
    """Queued runs (alive) launched before this one, first in line first."""
    mine = run.read_status().get("launched") or 0
    ahead = []
    for other in list_run_dirs(run.path.parent):
        if other.path == run.path:
            continue
        st = other.read_status()
        if st.get("state") == QUEUED and process_alive(st) and (st.get("launched") or 0) < mine:
            ahead.append((st.get("launched") or 0, other.run_id))
    return [rid for _, rid in sorted(ahead)]


def slot_holder(runs_dir: Path) -> str | None:
    """The run whose process holds the machine's training slot (the lock file records its pid): a running (or
    stopping) run. A queued run holds no slot, whatever pid its status has (a run waiting named itself when its
    status still had the pid of the process that created it, depending on the order of the folder's listing)."""
    try:
        # a pid, read as a run's file is (no link, no pipe: user code can write the runs folder), capped; the
        # runs folder itself may be the operator's link
        pid = int(read_no_link(Path(runs_dir).resolve() / SLOT_LOCK, 64).strip() or 0)
    except (OSError, ValueError):
        return None
    for other in list_run_dirs(runs_dir):
        st = other.read_status()
        if st.get("pid") == pid and st.get("state") in (RUNNING, STOPPING):
            return other.run_id
    return None


# -- stopping -------------------------------------------------------------------------------
def stop_run(run_dir: str | os.PathLike, reason: str = "user") -> dict:
    """Ask the run to stop at its next step boundary (writes the STOP file)."""
    run = RunDir(run_dir)
    run.request_stop(reason)
    return effective_status(run)


def kill_run(run_dir: str | os.PathLike, grace_s: float = 5.0) -> bool:
    """SIGTERM then SIGKILL the run's whole process tree. True when something was signalled. A run that has ended
    is never signalled: the pid it names is no longer the run's (trained in the caller's process — a notebook, a test,
    ``AgentTrainer.resume`` — it is that process, which lives on)."""
    run = RunDir(run_dir)
    status = run.read_status()
    if status.get("state") not in ACTIVE_STATES or not process_alive(status):
        return False
    if not terminate_tree(int(status["pid"]), grace_s=grace_s):
        return False
    record_killed(run, "the process was killed after it did not stop in time")
    return True


def enforce_stop_timeout(run_dir: str | os.PathLike, timeout_s: float = 30.0) -> bool:
    """Kill a run whose stop request is older than ``timeout_s``; True when killed."""
    run = RunDir(run_dir)
    asked = run.stop_request_time()
    if asked is None or time.time() - asked < timeout_s:
        return False
    return kill_run(run_dir)


# -- listing --------------------------------------------------------------------------------
def list_run_dirs(runs_dir: str | os.PathLike) -> list[RunDir]:
    """Run directories under ``runs_dir``, newest first: those with a status.json (every run prepared
    by ``prepare_run``/``rerun_dir`` or started by ``aworld-train run`` has one; a folder that only
    got part of a spec is no run). A link is no run either: a run listed under its target's name could not be
    found by its own, and one pointing out of the runs folder would serve files from elsewhere."""
    base = Path(runs_dir)
    if not base.is_dir():
        return []
    out = [RunDir(p) for p in base.iterdir() if not p.is_symlink() and p.is_dir() and (p / STATUS_FILE).exists()]

    def newest_first(run: RunDir):
        # run ids start with the second they were made; runs made within one second (three quick
        # launches) are ordered by when they were created/launched
        st = run.read_status()
        made = st.get("created") or st.get("launched")
        # a status.json is the run's to write, and user code in the run can write it: a value that is no
        # number sorts as 0 instead of failing the whole list
        made = float(made) if isinstance(made, (int, float)) and not isinstance(made, bool) else 0.0
        return run.run_id[:15], made, run.run_id

    return sorted(out, key=newest_first, reverse=True)


@dataclass
class RunSummary:
    run_id: str
    name: str
    path: str
    state: str
    engine: str
    started: float | None
    step: int | None
    total: int | None
    last_reward: float | None
    cause: str | None

    def as_row(self) -> list[Any]:
        start = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started)) if self.started else ""
        reward = "" if self.last_reward is None else f"{self.last_reward:.3f}"
        progress = f"{self.step or 0}/{self.total}" if self.total else str(self.step or "")
        return [
            self.run_id,
            self.name,
            self.state + (f" ({self.cause})" if self.cause else ""),
            self.engine,
            start,
            progress,
            reward,
        ]


def summarize(run: RunDir) -> RunSummary:
    st = effective_status(run)
    spec = run.read_spec()
    return RunSummary(
        run_id=run.run_id,
        name=run.read_label()["name"],
        path=str(run.path),
        state=st.get("state", "unknown"),
        engine=spec.get("engine") or st.get("engine") or "?",
        started=st.get("started") or st.get("launched"),
        step=st.get("step"),
        total=st.get("total_steps"),
        last_reward=st.get("last_reward"),
        cause=st.get("cause") if st.get("state") == FAILED else None,
    )


def delete_run(run_dir: str | os.PathLike) -> None:
    run = RunDir(run_dir)
    if process_alive(run.read_status()):
        raise ValueError(f"run {run.run_id} is still running — stop it before deleting it")
    with run.locked():  # not while a reader records the run's end (the studio's watchdog): rmtree would meet its file
        shutil.rmtree(run.path)
    # what the run wrote where its directory refused it: removed from <runs>/.fallback's own descriptor, never through
    # a link there (a link at .fallback had a run's deletion remove the folder of that name wherever it pointed)
    try:
        fallback = os.open(run.path.parent / FALLBACK_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:  # none, or a link: nothing of this run's is there
        return
    try:
        shutil.rmtree(run.run_id, dir_fd=fallback, ignore_errors=True)
    finally:
        os.close(fallback)
