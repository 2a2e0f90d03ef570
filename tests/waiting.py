"""Polling helper shared by tests that watch a run directory or a live app."""
import time


def wait_for(predicate, timeout: float = 120.0, every: float = 0.2, what: str = "condition"):
    """Return the first truthy value of ``predicate()``; fail the test after ``timeout`` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"{what} not met within {timeout:.0f} s")
