"""Polling helpers shared by tests that watch a run directory, a live app, a browser page or processes."""

import time


def wait_for(
    predicate, timeout: float = 120.0, what: str = "condition", every: float = 0.2, retry_errors: bool = False
):
    """Return the first truthy value of ``predicate()``; fail the test after ``timeout`` seconds,
    naming ``what`` and the last value seen. ``retry_errors`` treats an exception as "not yet"
    (e.g. a page element being re-rendered)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except Exception as e:  # noqa: BLE001 - only when asked
            if not retry_errors:
                raise
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(every)
    raise AssertionError(f"{what} not met within {timeout:.0f} s; last: {last!r}")


def processes_marked(marker: str) -> list[int]:
    """Processes whose command line holds ``marker`` (scanned in /proc: also those that left with setsid)."""
    import os

    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        out.append(int(name))
            except OSError:
                pass
    return out


def promptly(fn, deadline_s: float = 20.0):
    """``fn()``'s value (or the exception it raised), run in a thread: fails the test when it has not returned within
    ``deadline_s`` — a read that blocks for ever (a pipe, ``/proc/kmsg``) fails instead of hanging the suite."""
    import threading

    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=target, name="promptly", daemon=True)
    t.start()
    t.join(deadline_s)
    assert not t.is_alive(), f"{getattr(fn, '__name__', fn)} still blocked after {deadline_s:.0f} s"
    if "error" in box:
        raise box["error"]
    return box["value"]
