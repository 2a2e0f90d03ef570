"""User code signals and reaches over abstract Unix sockets only processes of its own tree (Linux Landlock, ABI 6+).

User code keeps its uid. The kernel lets a process signal any process of its uid, and lets anyone connect to an
abstract Unix socket (``@name``: no file, so no mount can hide it, unlike the sockets bound to paths that
:mod:`engines.isolation.read_only_files` covers). Run as root, a reward could so stop or kill the studio, its check
worker, another user's run, and talk to any daemon listening on an abstract socket that trusts uid 0 (containerd's
shims did: CVE-2020-15257). A Landlock domain with *scopes* (no file-system rule: files are the mount namespace's
business) refuses both for processes outside the domain, which every process user code starts inherits (after
``no_new_privs``, as seccomp). Signals from outside in — the studio stopping a run, a supervisor killing its call —
are not affected; within the tree (a run and its ranks, a call and its servers) nothing changes.
"""

from __future__ import annotations

import ctypes
import os
import platform

#: landlock_create_ruleset, landlock_restrict_self (the same numbers on x86-64 and arm64)
_CREATE_RULESET, _RESTRICT_SELF = 444, 446
_CREATE_RULESET_VERSION = 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1
#: the ABI version that knows scopes
SCOPES_ABI = 6


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


def scope_to_own_tree() -> str | None:
    """Enter a Landlock domain scoping signals and abstract Unix sockets (needs ``no_new_privs``). None when done,
    else why not (an older kernel, Landlock not enabled, another architecture)."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64", "arm64"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    if abi < SCOPES_ABI:
        why = f"ABI {abi}" if abi >= 0 else os.strerror(ctypes.get_errno())
        return f"landlock scopes: {why} (user code may signal the studio and reach abstract Unix sockets)"
    attr = _RulesetAttr(0, 0, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    fd = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if fd < 0:
        return f"landlock scopes: {os.strerror(ctypes.get_errno())}"
    try:
        if libc.syscall(_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            return f"landlock scopes: {os.strerror(ctypes.get_errno())}"
    finally:
        os.close(fd)
    return None
