"""User code cannot start a process that is not its descendant (Linux, x86-64 and arm64).

``clone(CLONE_PARENT)`` makes the new process a child of the caller's *parent*: a sibling of the run or of the
isolated call, outside the tree its supervisor kills when the call ends (:mod:`engines.isolation.process_tree`), so
with ``setsid`` it outlived the run. :func:`forbid_clone_parent` installs a seccomp filter (allowed without privilege
once ``no_new_privs`` is set, kept by every process it starts and across ``execve``) that answers:

* ``clone`` with ``CLONE_PARENT`` — ``EPERM``;
* ``clone3`` — ``ENOSYS`` (its flags are in memory a filter cannot read; the C library then falls back to ``clone``,
  as it does under Docker's default profile);
* the x32 system-call numbers on x86-64 — ``EPERM`` (the same calls by other numbers).

Every other call is allowed: ``fork``, threads, ``posix_spawn`` and ``vfork`` use ``clone`` without that flag.
"""

from __future__ import annotations

import ctypes
import errno
import platform

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
CLONE_PARENT = 0x00008000
X32_SYSCALL_BIT = 0x40000000

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000

#: machine -> (AUDIT_ARCH_*, clone's number, clone3's number, whether x32 numbers exist)
ARCHES = {
    "x86_64": (0xC000003E, 56, 435, True),
    "aarch64": (0xC00000B7, 220, 435, False),
}
# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
_NR, _ARCH, _ARG0_LOW = 0, 4, 16


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def program(machine: str) -> list[tuple[int, int, int, int]]:
    """The filter for ``machine`` as (code, jump if true, jump if false, k) instructions."""
    arch, clone, clone3, x32 = ARCHES[machine]
    allow, enosys, eperm = RET_ALLOW, RET_ERRNO | errno.ENOSYS, RET_ERRNO | errno.EPERM
    body = [
        (_LD_W_ABS, 0, 0, _NR),
        *([(_JGE_K, 6, 0, X32_SYSCALL_BIT)] if x32 else []),  # -> eperm
        (_JEQ_K, 4, 0, clone3),  # -> enosys
        (_JEQ_K, 0, 2, clone),  # else -> allow
        (_LD_W_ABS, 0, 0, _ARG0_LOW),  # the flags (their low 32 bits)
        (_JSET_K, 2, 0, CLONE_PARENT),  # -> eperm
        (_RET_K, 0, 0, allow),
        (_RET_K, 0, 0, enosys),
        (_RET_K, 0, 0, eperm),
    ]
    # a call of another architecture (a 32-bit one on a 64-bit kernel) is refused as a whole
    return [(_LD_W_ABS, 0, 0, _ARCH), (_JEQ_K, 1, 0, arch), (_RET_K, 0, 0, eperm), *body]


def forbid_clone_parent() -> str | None:
    """Install the filter in this process (``no_new_privs`` must be set). Returns why it could not be, or None."""
    machine = platform.machine()
    if machine not in ARCHES:
        return f"seccomp: no filter for {machine or 'this machine'}"
    lines = program(machine)
    filters = (_Filter * len(lines))(*[_Filter(*line) for line in lines])
    prog = _Program(len(lines), filters)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
            return f"seccomp: {errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())}"
    except (AttributeError, OSError) as e:
        return f"seccomp: {e}"
    return None
