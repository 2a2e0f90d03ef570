"""What a process that runs user code gives up before it runs it, and what the processes that hold
secrets do to keep them (Linux; elsewhere these do nothing).

Run as root (as in most containers), a process can read any other root process's
``/proc/<pid>/environ``, ``/proc/<pid>/mem`` and attach to it with ptrace — unless the kernel's
ptrace check refuses it. That check (``cap_ptrace_access_check``) refuses a reader whose *permitted*
capabilities are not a superset of the target's and who lacks ``CAP_SYS_PTRACE``, and refuses any
reader without ``CAP_SYS_PTRACE`` a target that is not dumpable. So:

* :func:`drop_privileges` — user code's process keeps its uid but no capability at all: the
  effective, permitted, inheritable and ambient sets emptied, the bounding set emptied (an
  ``execve`` of a root program gets none back) and ``no_new_privs`` set (a set-uid program gets
  none either). It then cannot read the environment, memory or command line's secrets of the
  studio, the CLI, the check worker, the shell that started them or any other root process that
  holds a capability. It is also made non-dumpable, so calls running side by side (with the same,
  empty, capabilities) cannot read each other, and the OOM killer's first choice
  (:func:`first_when_memory_runs_out`): user code that takes the machine's memory ends itself, not the studio.
* :func:`make_undumpable` — for the processes that hold secrets (the studio, the CLI): no core
  dumps and no ``/proc/<pid>/mem``/ptrace for a process of the same user without ``CAP_SYS_PTRACE``.
* :func:`close_inherited_fds` — user code gets no file descriptor its parent had open (the
  check worker's protocol pipe, another call's pipes, a log file), only the ones it is meant to use.

``/proc/<pid>/cmdline`` is readable by every process whatever it holds: no secret may be on a
command line (the studio takes its login from a file or the environment and removes it,
:mod:`aworld_gui.web.clean_start`).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from typing import Iterable, Iterator

from .no_siblings import forbid_clone_parent
from .scoped import scope_to_own_tree

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
CLONE_NEWUSER = 0x10000000


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _prctl(option: int, arg2: int = 0) -> bool:
    libc = _libc()
    if libc is None:
        return False
    try:
        return libc.prctl(option, ctypes.c_ulong(arg2), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0
    except AttributeError:
        return False


def _last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 40


def make_undumpable() -> bool:
    """No core dump, no ``/proc/self/mem`` or ptrace for a reader without CAP_SYS_PTRACE."""
    return _prctl(PR_SET_DUMPABLE, 0)


def set_parent_death_signal(sig: int) -> bool:
    """The kernel sends ``sig`` to this process when the thread that forked it ends."""
    return _prctl(PR_SET_PDEATHSIG, int(sig))


def drop_privileges(writable: Iterable[str | os.PathLike] | None = None, temp_folder: str | None = None) -> list[str]:
    """Give up every capability for good (this process and whatever it executes), and become
    non-dumpable. Returns what could not be done (empty when all was done, or not Linux).

    With ``writable`` (a list, maybe empty), first see every file read-only but those folders and ``temp_folder``
    (:func:`engines.isolation.read_only_files.confine_writes`; the datasets caches private scratch folders there),
    and make ``temp_folder`` this process's temporary folder."""
    if _libc() is None:
        return []
    problems = []
    if writable is not None:  # while CAP_SYS_ADMIN is held: a process without it can neither remount nor leave
        from .read_only_files import confine_writes, scratch_caches, use_temp_folder

        before = tempfile.gettempdir()  # (found while it can still be written)
        problems += confine_writes(writable, temp_folder, scratch=scratch_caches())
        if temp_folder:
            use_temp_folder(temp_folder, before)
    if (why := own_user_namespace()) is not None:
        problems.append(why)
    if not first_when_memory_runs_out():
        problems.append("oom_score_adj")
    for cap in range(_last_cap() + 1):  # needs CAP_SETPCAP: first, while we still hold it
        if not _prctl(PR_CAPBSET_DROP, cap) and _has_in_bounding(cap):
            problems.append(f"bounding set: capability {cap}")
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    libc = _libc()
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    try:
        if libc.capset(ctypes.byref(header), data) != 0:
            problems.append(f"capset: {os.strerror(ctypes.get_errno())}")
    except AttributeError:
        problems.append("capset: not in libc")
    if not _prctl(PR_SET_NO_NEW_PRIVS, 1):
        problems.append("no_new_privs")
    else:
        if (why := forbid_clone_parent()) is not None:  # (needs no_new_privs) no process outside the killed tree
            problems.append(why)
        if (why := scope_to_own_tree()) is not None:  # (needs no_new_privs) no signal, no abstract socket outside
            problems.append(why)
    if not make_undumpable():
        problems.append("dumpable")
    return problems


def own_user_namespace() -> str | None:
    """This process (and what it starts) in a user namespace of its own, its uid and gid mapped to themselves: the
    same files, the same uid, but the kernel's ptrace check no longer lets another tree of user code at it. Without
    it every process user code executes (dumpable again after ``execve``, holding no capability, of the same uid) was
    open to every other call's ``ptrace``, ``/proc/<pid>/mem`` (read and write) and ``/proc/<pid>/environ``: the
    eighth probe's check attached to a process a run had started, whose environment, folders and lifetime are the
    run's. Across sibling namespaces the check asks ``CAP_SYS_PTRACE`` in the target's, which neither holds. None
    when done, else why not (a threaded process cannot; the kernel may forbid user namespaces)."""
    libc = _libc()
    if libc is None:
        return None
    uid, gid = os.geteuid(), os.getegid()
    try:
        if libc.unshare(CLONE_NEWUSER) != 0:
            return f"user namespace: {os.strerror(ctypes.get_errno())} (other user code may ptrace what this one execs)"
    except AttributeError:
        return "user namespace: unshare is not in libc"
    try:  # (setgroups first: a gid map needs it denied where CAP_SETGID is not held in the parent namespace)
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    except OSError as e:
        return f"user namespace: {e}"
    return None


@contextmanager
def without_privileges(writable: Iterable[str | os.PathLike]) -> Iterator[list[str]]:
    """:func:`drop_privileges` with ``writable`` and a private temporary folder, removed when the block ends, for a
    process that runs user code for its whole life: a run, an evaluation, a chat model. Yields what could not be
    done."""
    from .read_only_files import private_temp_folder

    # the process's own folder is writable to it, not the folder of all of them (read_only_files.confine_writes): its
    # temporary folder is one inside, which it can remove when it ends (the empty folder around it stays)
    outer = private_temp_folder()
    temp = os.path.join(outer, "tmp")
    os.mkdir(temp, 0o700)
    try:
        yield drop_privileges(writable=[*writable, outer], temp_folder=temp)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
        try:
            os.rmdir(outer)
        except OSError:
            pass


#: what user code's processes give the kernel's OOM killer: the highest, the first process it ends
OOM_SCORE_ADJ = 1000


def first_when_memory_runs_out() -> bool:
    """Make this process (and what it forks) the OOM killer's first choice: a user code that takes all the memory
    ends itself, never the studio, the CLI or another run. Set while ``CAP_SYS_RESOURCE`` is still held (before the
    capabilities go), the kernel keeps it as the floor: user code cannot lower it again."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write(str(OOM_SCORE_ADJ))
        return True
    except OSError:
        return False


def _has_in_bounding(cap: int) -> bool:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapBnd:"):
                    return bool(int(line.split()[1], 16) >> cap & 1)
    except (OSError, ValueError):
        pass
    return False


def capabilities() -> dict[str, int]:
    """This process's capability sets from ``/proc/self/status`` (CapEff, CapPrm, CapBnd, ...)."""
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Cap"):
                    key, _, value = line.partition(":")
                    out[key] = int(value.strip(), 16)
    except (OSError, ValueError):
        pass
    return out


def close_inherited_fds(keep: set[int] | frozenset[int]) -> None:
    """Close every file descriptor of this process but ``keep`` (and 0, 1, 2)."""
    keep = set(keep) | {0, 1, 2}
    try:
        fds = [int(n) for n in os.listdir("/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd")]
    except (OSError, ValueError):
        fds = list(range(3, 1024))
    for fd in fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
