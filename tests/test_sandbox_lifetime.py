"""Issue 29, item 11: user code dies with whatever started it. An isolated call's supervisor gets a
parent-death signal (its caller killed from outside, e.g. by a ``timeout`` wrapper's SIGKILL) and keeps
the deadline itself (its caller frozen); Ctrl-C ends ``aworld-train check`` at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
from testing.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
HOLDER = """
import os, sys
from engines.isolation.sandbox import run_isolated

def spin(pidfile):
    with open(pidfile, 'w') as f:
        f.write(str(os.getpid()))
    while True:
        pass

run_isolated(spin, {'pidfile': sys.argv[1]}, timeout_s=float(sys.argv[2]))
"""


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def _sigint_as_in_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(tmp_path, argv, **kw) -> tuple[subprocess.Popen, int, int]:
    """A process that runs a looping user function in an isolated call; (it, the worker's pid, the supervisor's)."""
    pidfile = tmp_path / "worker.pid"
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        # as a terminal's foreground job has it: a test runner started in the background (`cmd &`, no job
        # control) ignores SIGINT, every child inherits that, and Python then leaves Ctrl-C ignored (the
        # README's test command run as a background job failed the Ctrl-C test in two fresh-clone runs)
        preexec_fn=_sigint_as_in_a_terminal,
        **kw,
    )
    wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), 120, "the user code to start")
    worker = int(pidfile.read_text())
    return proc, worker, psutil.Process(worker).ppid()


def _kill(*pids: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def test_a_caller_killed_from_outside_leaves_no_user_code_running(tmp_path):
    for attempt in ("first", "second"):  # and again: a fresh call after the first one's end
        folder = tmp_path / attempt
        folder.mkdir()
        holder, worker, supervisor = _start(folder, [sys.executable, "-c", HOLDER, str(folder / "worker.pid"), "600"])
        try:
            assert supervisor != holder.pid and not _gone(worker)
            holder.kill()  # SIGKILL: no handler, no cleanup of its own
            holder.wait(10)
            wait_for(lambda: _gone(worker) and _gone(supervisor), 15, "the supervisor and the user code to die")  # noqa: B023
        finally:
            _kill(worker, supervisor)


def test_the_supervisor_keeps_the_deadline_when_its_caller_cannot(tmp_path):
    holder, worker, supervisor = _start(tmp_path, [sys.executable, "-c", HOLDER, str(tmp_path / "worker.pid"), "3"])
    try:
        os.kill(holder.pid, signal.SIGSTOP)  # the caller frozen: its own deadline never comes
        wait_for(lambda: _gone(worker) and _gone(supervisor), 20, "the supervisor to end the call at its deadline")
    finally:
        _kill(holder.pid, worker, supervisor)


def test_ctrl_c_ends_a_cli_check_at_once(tmp_path, demo):
    pidfile = tmp_path / "worker.pid"
    reward = tmp_path / "loop_reward.py"
    reward.write_text(
        f"import os\n\ndef loop(completion, answer, **kw):\n"
        f"    open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        f"    while True:\n        pass\n"
    )
    cli, worker, supervisor = _start(
        tmp_path,
        [
            sys.executable,
            "-m",
            "engines",
            "check",
            "--agent",
            demo["agent"],
            "--train",
            demo["train"],
            "--reward",
            f"{reward}:loop",
            "--check-timeout",
            "300",
        ],
    )
    try:
        t0 = time.monotonic()
        os.kill(cli.pid, signal.SIGINT)
        out, _ = cli.communicate(timeout=20)
        assert time.monotonic() - t0 < 20
        assert cli.returncode == 130, out
        assert b"interrupted" in out and b"Traceback" not in out, out
        wait_for(lambda: _gone(worker) and _gone(supervisor), 10, "the check's user code to be killed")
    finally:
        _kill(cli.pid, worker, supervisor)
