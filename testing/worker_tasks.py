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


def kill_worker(marker: str) -> None:
    """Name the worker this call runs in — the zygote, the oldest ancestor running aworld_gui.worker.zygote (the
    call's supervisor is a fork of it, with the same command line) — in the file ``marker``, then wait to die with it.
    A call cannot kill its worker itself: user code signals only its own tree (engines/isolation/scoped.py); the test
    reads the file and kills it (``kill_named_workers``)."""

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
    with open(marker + ".tmp", "w") as f:
        f.write(str(zygote))
    os.rename(marker + ".tmp", marker)
    time.sleep(30)


def kill_named_workers(marker: str, times: int, stop) -> int:
    """In the test's process: each time a ``kill_worker`` call names its worker in ``marker``, SIGKILL it, until
    ``times`` were killed or ``stop`` (an Event) is set; returns how many were."""
    killed = 0
    while killed < times and not stop.is_set():
        try:
            with open(marker) as f:
                pid = int(f.read())
        except (OSError, ValueError):
            time.sleep(0.05)
            continue
        os.unlink(marker)
        os.kill(pid, signal.SIGKILL)
        killed += 1
    return killed


TASKS = {"echo": echo, "sleep": sleep, "crash": crash, "start_then_crash": start_then_crash, "kill_worker": kill_worker}
