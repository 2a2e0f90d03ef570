"""Extra check-worker tasks for the worker's own tests: ``CheckWorker(task_modules=["testing.worker_tasks"])``."""

import os
import signal
import subprocess
import time


def echo(**kwargs):
    return kwargs


def sleep(seconds: float = 1.0) -> str:
    time.sleep(seconds)
    return "slept"


def crash() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def start_then_crash(argv: list[str]) -> None:
    """Start a process in a session of its own (as the MCP SDK starts a stdio server), then crash."""
    subprocess.Popen(argv, start_new_session=True, stdin=subprocess.PIPE)
    time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGKILL)


def kill_worker() -> None:
    """Kill the worker this call runs in: the zygote, the oldest ancestor running aworld_gui.worker.zygote (the
    call's supervisor is a fork of it, with the same command line)."""

    def parent(pid: int) -> int:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])

    def is_zygote(pid: int) -> bool:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"aworld_gui.worker.zygote" in f.read()

    pid, zygote = os.getppid(), None
    while pid > 1:
        if is_zygote(pid):
            zygote = pid
        pid = parent(pid)
    if zygote is None:
        raise RuntimeError("no zygote above this call")
    os.kill(zygote, signal.SIGKILL)
    time.sleep(30)


TASKS = {"echo": echo, "sleep": sleep, "crash": crash, "start_then_crash": start_then_crash, "kill_worker": kill_worker}
