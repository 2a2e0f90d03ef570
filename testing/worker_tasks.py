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


TASKS = {"echo": echo, "sleep": sleep, "crash": crash, "start_then_crash": start_then_crash}
