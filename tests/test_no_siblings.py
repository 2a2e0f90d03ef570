"""Issue 41: user code started a process with ``clone(CLONE_PARENT)`` and ``setsid``, a sibling of the run rather
than its descendant, which outlived the run. A seccomp filter (engines/isolation/no_siblings.py) now refuses it in
every process that runs user code, and nothing else."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import subprocess
import sys
import threading

import pytest

from engines.isolation import no_siblings
from engines.isolation.sandbox import run_isolated

SIGCHLD = 17


def _decide(prog: list[tuple[int, int, int, int]], arch: int, nr: int, arg0: int) -> int:
    """The filter run by hand (the few classic BPF instructions it uses) on one call."""
    data = {0: nr, 4: arch, 16: arg0 & 0xFFFFFFFF}
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = prog[pc]
        if code == no_siblings._LD_W_ABS:
            acc, pc = data[k], pc + 1
        elif code == no_siblings._RET_K:
            return k
        else:
            taken = {no_siblings._JEQ_K: acc == k, no_siblings._JGE_K: acc >= k, no_siblings._JSET_K: bool(acc & k)}[
                code
            ]
            pc += 1 + (jt if taken else jf)


@pytest.mark.parametrize("machine", sorted(no_siblings.ARCHES))
def test_the_filter_refuses_clone_parent_and_clone3_and_allows_the_rest(machine):
    arch, clone, clone3, x32 = no_siblings.ARCHES[machine]
    prog = no_siblings.program(machine)
    allow, errno_ = no_siblings.RET_ALLOW, no_siblings.RET_ERRNO
    assert _decide(prog, arch, clone, no_siblings.CLONE_PARENT | SIGCHLD) == errno_ | errno.EPERM
    assert _decide(prog, arch, clone, 0x01200000 | SIGCHLD) == allow  # fork: CHILD_SETTID | CHILD_CLEARTID
    assert _decide(prog, arch, clone, 0x003D0F00) == allow  # a thread: VM | FS | FILES | SIGHAND | THREAD | ...
    assert _decide(prog, arch, clone3, 0) == errno_ | errno.ENOSYS
    assert _decide(prog, arch, 0, 0) == allow and _decide(prog, arch, 59, 0) == allow
    assert _decide(prog, 0x40000003, clone, 0) == errno_ | errno.EPERM  # another architecture's calls
    if x32:
        assert _decide(prog, arch, no_siblings.X32_SYSCALL_BIT | clone, SIGCHLD) == errno_ | errno.EPERM


def _try_to_leave() -> dict:
    libc = ctypes.CDLL(None, use_errno=True)
    _arch, clone, clone3, _x32 = no_siblings.ARCHES[platform.machine()]
    out = {}
    pid = libc.syscall(clone, no_siblings.CLONE_PARENT | SIGCHLD, 0, 0, 0, 0)
    if pid == 0:  # a sibling after all: it leaves at once
        os._exit(0)
    out["clone_parent"] = os.strerror(ctypes.get_errno()) if pid < 0 else f"started {pid}"
    out["clone3"] = os.strerror(ctypes.get_errno()) if libc.syscall(clone3, 0, 0) < 0 else "called"
    seen = []
    t = threading.Thread(target=lambda: seen.append("thread"))
    t.start()
    t.join()
    child = os.fork()
    if child == 0:
        os._exit(7)
    seen.append(f"fork {os.waitpid(child, 0)[1] >> 8}")
    seen.append(subprocess.run([sys.executable, "-c", "print('exec')"], capture_output=True, text=True).stdout.strip())
    out["works"] = seen
    return out


@pytest.mark.skipif(platform.machine() not in no_siblings.ARCHES, reason="a filter for x86-64 and arm64")
def test_user_code_cannot_start_a_sibling_but_forks_threads_and_executes():
    out = run_isolated(_try_to_leave, timeout_s=60)
    assert out.ok, out.error
    assert out.value["clone_parent"] == "Operation not permitted", out.value
    assert out.value["clone3"] == "Function not implemented", out.value
    assert out.value["works"] == ["thread", "fork 7", "exec"], out.value
