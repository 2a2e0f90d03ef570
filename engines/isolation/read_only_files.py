"""User code sees the machine's files read-only, but for the folders its work writes into (Linux, as root).

Run as root without capabilities (:mod:`engines.isolation.privileges`), user code could still write every file
root owns: the Python installation and the project's source among them. A reward that drops a ``.pth`` file into
site-packages has its code run by the next interpreter the studio starts, before that interpreter gives up its
capabilities. So a process about to run user code, while it still holds ``CAP_SYS_ADMIN``, calls
:func:`confine_writes`:

* it enters a mount namespace of its own (``unshare(CLONE_NEWNS)``), whose mounts no longer propagate to or from
  the machine's (``MS_PRIVATE``, recursively);
* each folder the work writes into (the run's folder, an evaluation's, a private temporary folder) is bound onto
  itself, a mount of its own that stays writable;
* a *scratch* folder is a fresh, private, empty folder bound over a cache folder that libraries write into
  (``datasets``' cache): writes there land in the call's own throw-away copy, never in the machine's cache;
* then every other mount (``/`` first) is remounted read-only (``MS_BIND|MS_REMOUNT|MS_RDONLY``); the kernel's
  own file systems (``/proc``, ``/sys``, ``/dev``) are left as they are, but for the kernel's settings, the block
  devices and ``/dev`` itself (its nodes stay usable; ``/dev/shm`` and ``/dev/pts`` stay writable);
* every Unix socket bound to a path outside those folders gets ``/dev/null`` in its place: a read-only mount does not
  stop a ``connect()``, and the daemons listening there (systemd, Docker, tmux) trust uid 0 by its number.

The capabilities go right after (:func:`~engines.isolation.privileges.drop_privileges`): a process without
``CAP_SYS_ADMIN`` can neither remount nor leave the namespace, and whatever it starts inherits it. A write
elsewhere fails with ``EROFS`` ("Read-only file system"). Where the kernel refuses a namespace (not root, or a
container without ``CAP_SYS_ADMIN``) nothing changes and :func:`confine_writes` says why.
"""

from __future__ import annotations

import ctypes
import os
import re
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

CLONE_NEWNS = 0x00020000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MS_STRICTATIME = 1 << 24

#: per-mount options (``/proc/self/mountinfo``'s sixth field) a remount must keep: the kernel refuses to clear a locked one
_KEPT = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}
#: the kernel's own file systems, and where they are mounted: left as they are (they hold no code)
KERNEL_TYPES = frozenset(
    {"proc", "sysfs", "devtmpfs", "devpts", "mqueue", "cgroup", "cgroup2", "securityfs", "debugfs", "tracefs"}
)
KERNEL_PLACES = ("/proc", "/sys", "/dev")
#: the kernel's settings and controls: read-only to user code too (the sixth probe). uid 0 without any capability may
#: still write most of them — the kernel checks the file's mode: ``/proc/sys/kernel/core_pattern`` set to ``|prog``
#: had the kernel run ``prog`` as root with every capability, outside every namespace, at the next crash; the
#: cgroup files let user code leave its ``pids`` cgroup or freeze the studio. Each is made read-only with every
#: mount beneath it (bound onto itself first where it is no mount of its own).
KERNEL_KNOBS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/sys")
#: character devices beside the block devices that user code gets ``/dev/null`` in place of (a loop device attached,
#: a FUSE file system served, a btrfs device scanned)
HIDDEN_DEVICES = frozenset({"loop-control", "fuse", "btrfs-control", "mem", "kmem", "port"})
#: the folder, in the machine's temporary folder, where each user-code process gets a temporary folder of its own
#: (short: a Unix socket's path there must fit in 108 bytes, as multiprocessing's do)
TEMP_ROOT_NAME = "aworld-user-code"
#: names beyond these, colon-separated, that user code may write into (an operator's own cache, say)
WRITABLE_ENV = "AWORLD_USER_CODE_WRITABLE"


@dataclass(frozen=True)
class Mount:
    point: str
    options: str
    fstype: str

    def flags(self) -> int:
        out = 0
        for opt in self.options.split(","):
            out |= _KEPT.get(opt, 0)
        return out


def _unescape(field: str) -> str:
    """mountinfo writes a space, tab, newline and backslash in a path as ``\\040`` and the like."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts(text: str | None = None) -> list[Mount]:
    """This process's mounts, in the order the kernel lists them (parents before what is mounted on them)."""
    if text is None:
        with open("/proc/self/mountinfo") as f:
            text = f.read()
    out = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 6 or not tail:
            continue
        out.append(Mount(_unescape(fields[4]), fields[5], tail[0]))
    return out


def _beneath(path: str, folders: Iterable[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def to_make_read_only(all_mounts: list[Mount], writable: Iterable[str]) -> list[Mount]:
    """The mounts :func:`confine_writes` remounts read-only: all but the kernel's and the writable folders'."""
    writable = list(writable)
    seen: set[str] = set()
    out = []
    for m in all_mounts:
        if m.point in seen or m.fstype in KERNEL_TYPES or _beneath(m.point, KERNEL_PLACES):
            continue
        if _beneath(m.point, writable):
            continue
        seen.add(m.point)
        out.append(m)
    return out


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _mount(source: str | None, target: str, flags: int) -> None:
    libc = _libc()
    src = source.encode() if source is not None else None
    if libc.mount(src, target.encode(), None, ctypes.c_ulong(flags), None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def operator_writable() -> list[str]:
    """:data:`WRITABLE_ENV`'s folders (absolute ones only)."""
    return [p for p in os.environ.get(WRITABLE_ENV, "").split(":") if p.startswith("/")]


def scratch_caches() -> list[Path]:
    """The caches libraries write into while they load a dataset: ``datasets``' own, and ms-swift's (through
    ModelScope's). User code gets a private, throw-away copy of each (its writes there are never another's reads)."""
    modelscope = os.environ.get("MODELSCOPE_CACHE") or os.path.expanduser("~/.cache/modelscope/hub")
    out = [datasets_cache(), Path(modelscope) / "datasets"]
    # ``datasets`` already imported here fixed its cache folder then, from the environment of that time (a HOME
    # changed since — a test's — moves the folder a fresh interpreter would use, not this one's)
    loaded = getattr(sys.modules.get("datasets.config"), "HF_DATASETS_CACHE", None)
    if loaded and Path(loaded) not in out:
        out.append(Path(loaded))
    return out


def datasets_cache() -> Path:
    """Where ``datasets`` writes the files it makes of a dataset it loads (and its locks)."""
    env = os.environ.get("HF_DATASETS_CACHE")
    if env:
        return Path(env)
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"
    )
    return Path(home) / "datasets"


def temp_root() -> str:
    """:data:`TEMP_ROOT_NAME` in the machine's temporary folder (made, mode 0700, where missing); never another
    user's folder or a link planted there."""
    root = os.path.join(tempfile.gettempdir(), TEMP_ROOT_NAME)
    try:
        os.mkdir(root, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(root)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise OSError(f"{root} is not a folder of this user's: remove it (user code's temporary folders go there)")
    return root


def private_temp_folder() -> str:
    """A fresh folder for a user-code process's temporary files (mode 0700) in :func:`temp_root`; only the folder
    itself is writable to it (an isolated call's is removed by its supervisor; a run's contents by the run itself, the
    empty folder, and a killed one's, stay until the machine's temporary folder is cleaned)."""
    return tempfile.mkdtemp(dir=temp_root())


#: AWorld writes its log into ``<cwd>/logs`` unless this variable says where
AWORLD_LOG_ENV = "AWORLD_LOG_PATH"
#: compilers' caches that torch puts in the temporary folder (and names in the environment of the process that
#: computed them: a forked run inherits its parent's): moved into the call's own
TEMP_CACHE_ENVS = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")


def use_temp_folder(folder: str, before: str) -> None:
    """This process's and its children's temporary files go to ``folder`` instead of ``before`` (and AWorld's log,
    where the working folder is read-only and no other place was given)."""
    before = before.rstrip("/") + "/"
    for name in TEMP_CACHE_ENVS:
        if os.environ.get(name, "").startswith(before):
            os.environ[name] = os.path.join(folder, os.environ[name][len(before) :])
    for name in ("TMPDIR", "TMP", "TEMP"):
        os.environ[name] = folder
    tempfile.tempdir = folder
    if AWORLD_LOG_ENV not in os.environ and not os.access(os.getcwd(), os.W_OK):
        os.environ[AWORLD_LOG_ENV] = os.path.join(folder, "aworld-logs")


def confine_writes(
    writable: Iterable[str | os.PathLike], temp_folder: str | None = None, scratch: Iterable[str | os.PathLike] = ()
) -> list[str]:
    """Enter a mount namespace in which only ``writable``, ``temp_folder`` (and :data:`WRITABLE_ENV`'s folders) can
    be written, and each ``scratch`` folder is a private empty one made in ``temp_folder``. Returns what could not be
    done (empty when all was done)."""
    if not os.uname().sysname == "Linux":
        return []
    keep = []
    # the call's own temporary folder, not the folder of them all: every other call's and run's is there (the sixth
    # probe planted files in another run's TMPDIR, where torch keeps the code it compiles)
    for p in [*writable, *([temp_folder] if temp_folder else []), *operator_writable()]:
        real = os.path.realpath(p)
        if os.path.isdir(real) and not _beneath(real, keep):  # (a folder in another is writable with it)
            keep = [k for k in keep if not _beneath(k, [real])] + [real]
    scratch_points = []
    for p in scratch if temp_folder else ():
        try:
            os.makedirs(p, exist_ok=True)
            scratch_points.append(os.path.realpath(p))
        except OSError:
            pass
    try:
        if _libc().unshare(CLONE_NEWNS) != 0:
            err = ctypes.get_errno()
            return [f"mount namespace: {os.strerror(err)} (user code can write every file this user can)"]
    except AttributeError:
        return ["mount namespace: unshare is not in libc"]
    problems = []
    try:
        _mount(None, "/", MS_REC | MS_PRIVATE)
        for target in scratch_points:
            _mount(tempfile.mkdtemp(prefix="scratch-", dir=temp_folder), target, MS_BIND)
        for folder in keep:
            _mount(folder, folder, MS_BIND | MS_REC)
        problems += _remount_read_only(to_make_read_only(mounts(), [*keep, *scratch_points]))
        problems += _read_only_knobs()
        problems += _hide_devices()
        problems += _read_only_dev()
        problems += hide_sockets([*keep, *scratch_points])
    except OSError as e:
        problems.append(str(e))
    return problems


def _read_only_knobs() -> list[str]:
    """:data:`KERNEL_KNOBS` read-only in this (private) mount namespace: each bound onto itself where it is no mount of
    its own, then every mount at or beneath one remounted read-only."""
    problems = []
    present = [p for p in KERNEL_KNOBS if os.path.lexists(p)]
    points = {m.point for m in mounts()}
    for point in present:
        if point not in points:
            try:
                _mount(point, point, MS_BIND | MS_REC)
            except OSError as e:
                problems.append(str(e))
    return problems + _remount_read_only([m for m in mounts() if _beneath(m.point, present)])


def _remount_read_only(chosen: Iterable[Mount]) -> list[str]:
    """Each mount point once, read-only with the options it keeps; what the kernel refused."""
    problems, seen = [], set()
    for m in chosen:
        if m.point in seen:
            continue
        seen.add(m.point)
        try:
            _mount(None, m.point, MS_BIND | MS_REMOUNT | MS_RDONLY | m.flags())
        except OSError as e:
            problems.append(str(e))
    return problems


def _hide_devices(dev: str = "/dev") -> list[str]:
    """``/dev/null`` bound over every block device under ``dev`` and :data:`HIDDEN_DEVICES`: a read-only mount says
    nothing of the device beneath it, which uid 0 opens read-write by its mode alone."""
    problems = []
    stack = [dev]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and e.path not in ("/dev/shm", "/dev/pts"):
                stack.append(e.path)
            elif stat.S_ISBLK(st.st_mode) or (stat.S_ISCHR(st.st_mode) and e.name in HIDDEN_DEVICES):
                try:
                    _mount("/dev/null", e.path, MS_BIND)
                except OSError as err:
                    problems.append(str(err))
    return problems


def _read_only_dev(dev: str = "/dev") -> list[str]:
    """``/dev`` itself read-only (its submounts — ``/dev/shm``, ``/dev/pts``, ``/dev/mqueue`` — as they are; a device
    node opens as before: a read-only mount says nothing of a device). Left writable, it is the machine's own folder
    (devtmpfs has one instance): the eighth probe's reward replaced a device node with a regular file of its own, for
    every process on the machine (``/dev/null`` so: what anyone writes there, user code reads), and made files and
    links there. ``/dev/shm`` where it is no mount of its own is bound onto itself first (torch's shared memory)."""
    mine = [m for m in mounts() if m.point == dev]
    if not mine:
        return []
    points = {m.point for m in mounts()}
    problems = []
    shm = os.path.join(dev, "shm")
    if shm not in points and os.path.isdir(shm) and not os.path.islink(shm):
        try:
            _mount(shm, shm, MS_BIND)
        except OSError as e:
            problems.append(str(e))
    return problems + _remount_read_only(mine[-1:])


#: Unix sockets user code still reaches when the process runs in a Ray job (its own cluster's: the job connects to it)
_RAY_SESSION_SOCKET = re.compile(r"/session_[^/]+/sockets/")
#: set in a Ray cluster job's environment (engines.cluster.job_main.IN_RAY_JOB)
_IN_RAY_JOB = "AWORLD_IN_RAY_JOB"
#: the GPU driver's own daemons (persistence, MPS), which CUDA in user code may need
_DRIVER_SOCKETS = ("/run/nvidia-persistenced/", "/var/run/nvidia-persistenced/", "/tmp/nvidia-mps/")


def bound_socket_paths(text: str | None = None) -> list[str]:
    """The paths Unix sockets are bound to (``/proc/net/unix``'s last column, those that start with ``/``)."""
    if text is None:
        try:
            with open("/proc/net/unix") as f:
                text = f.read()
        except OSError:
            return []
    out = []
    for line in text.splitlines()[1:]:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith("/") and fields[7] not in out:
            out.append(fields[7])
    return out


def hide_sockets(writable: Iterable[str], text: str | None = None) -> list[str]:
    """``/dev/null`` bound over every Unix socket bound to a path (but those in ``writable``, the GPU driver's and,
    in a Ray job, its cluster's): root's daemons accept uid 0 by its number — the eighth probe's reward, with no
    capability, in its read-only namespace, connected to a socket of a process outside that holds every one
    (systemd's ``/run/systemd/private``, ``docker.sock`` or root's tmux server run what they are asked). A socket
    bound after the call started is not hidden."""
    writable = list(writable)
    in_ray_job = bool(os.environ.get(_IN_RAY_JOB))
    problems = []
    for path in bound_socket_paths(text):
        if _beneath(path, writable) or path.startswith(_DRIVER_SOCKETS):
            continue
        if in_ray_job and _RAY_SESSION_SOCKET.search(path):
            continue
        try:
            if not stat.S_ISSOCK(os.lstat(path).st_mode):  # (a socket's file removed since, or another file there now)
                continue
        except OSError:
            continue
        try:
            _mount("/dev/null", path, MS_BIND)
        except OSError as e:
            problems.append(f"{path}: {e}")
    return problems
