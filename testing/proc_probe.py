"""What hostile user code tries, to read the secrets of the processes around it (tests of item 1 of
issue 29: tests/test_user_code_privileges.py). Self-contained: :func:`reward_source` is this file's text
with a reward appended, written as a reward file that the check runs as user code.

Every route: ``/proc/<pid>/environ`` and ``/proc/<pid>/cmdline`` of every process (searched for the
secrets), ``/proc/<pid>/mem`` and ``ptrace`` (``PTRACE_SEIZE``, which does not stop the target; the
tracer's exit detaches it) of each ancestor, the capabilities held, and the file descriptors
inherited."""

import json  # noqa: F401 - used by the reward this file's text becomes (reward_source)
import ctypes
import os

PTRACE_SEIZE = 0x4206


def _parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def ancestors():
    out, pid = [], os.getppid()
    while pid > 1 and len(out) < 64:
        out.append(pid)
        try:
            pid = _parent(pid)
        except (OSError, ValueError, IndexError):
            break
    return out


def probe(secrets):
    """What this process could get: a list of findings (empty: nothing read), and what it holds."""
    found, me = [], os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        for part in ("environ", "cmdline"):
            try:
                with open(f"/proc/{name}/{part}", "rb") as f:
                    data = f.read()
            except OSError:
                continue
            found += [f"/proc/{name}/{part} holds {s[:6]}..." for s in secrets if s.encode() in data]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    for pid in ancestors():
        try:
            with open(f"/proc/{pid}/mem", "rb"):
                found.append(f"/proc/{pid}/mem opened")
        except OSError:
            pass
        if libc.ptrace(PTRACE_SEIZE, pid, None, None) == 0:
            found.append(f"ptrace of {pid} attached")
    fds = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds[int(fd)] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    caps = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Cap"):
                key, _, value = line.partition(":")
                caps[key] = int(value.strip(), 16)
    inherited = {fd: t for fd, t in fds.items() if fd > 2 and not t.startswith("/proc/")}
    return {"found": found, "caps": caps, "fds": inherited, "ancestors": ancestors()}


def reward_source(secrets, out_path):
    """A reward file: this probe, run once when the reward is called, its report written to ``out_path``."""
    with open(__file__, encoding="utf-8") as f:
        text = f.read()
    return text + (
        f"\n\ndef probe_reward(completion, answer, **kw):\n"
        f"    with open({str(out_path)!r}, 'w') as f:\n"
        f"        json.dump(probe({list(secrets)!r}), f)\n"
        f"    return 1.0 if completion == answer else 0.0\n"
    )
