"""Extra check-worker tasks for the worker's own tests: ``CheckWorker(task_modules=["testing.worker_tasks"])``."""
import os
import signal
import time


def echo(**kwargs):
    return kwargs


def sleep(seconds: float = 1.0) -> str:
    time.sleep(seconds)
    return "slept"


def crash() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


TASKS = {"echo": echo, "sleep": sleep, "crash": crash}
