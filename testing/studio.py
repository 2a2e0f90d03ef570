"""Helpers for the studio's tests and benchmarks: run ``app.py`` in a subprocess on a free port,
start stand-in runs (:mod:`testing.fake_run`), launch Chromium.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from engines.isolation.processes import spawn_detached, terminate_tree
from engines.runs.rundir import RunDir
from testing import free_port

REPO_ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-gpu",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    return env


class StudioProcess:
    """``aworld-studio`` (``python -m aworld_gui.web.serve``) on 127.0.0.1:<free port>, output to
    ``<runs>/../studio-<port>.log``. ``launcher`` replaces ``-m aworld_gui.web.serve`` (e.g.
    ``["-m", "testing.late_answers", "3"]``: every Gradio answer 3 s late); ``env``: variables added to the
    studio's environment (this process's). ``demo_run``: the studio adds the shipped trained demo to an empty runs
    folder as a user's does (off by default here: most tests count the runs they made)."""

    def __init__(
        self,
        runs_dir: str | os.PathLike,
        port: int | None = None,
        extra: list[str] | None = None,
        launcher: list[str] | None = None,
        env: dict[str, str] | None = None,
        demo_run: bool = False,
    ):
        self.env = dict(env or {})
        self.runs_dir = Path(runs_dir)
        self.port = port or free_port()
        self.extra = [*(extra or []), *([] if demo_run else ["--no-demo-run"])]
        self.launcher = launcher or ["-m", "aworld_gui.web.serve"]
        self.proc: subprocess.Popen | None = None
        self.log_path = self.runs_dir.parent / f"studio-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, timeout_s: float = 90.0) -> "StudioProcess":
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.proc = spawn_detached(
            [
                sys.executable,
                *self.launcher,
                "--port",
                str(self.port),
                "--runs-dir",
                str(self.runs_dir),
                *self.extra,
            ],
            self.log_path,
            env={**_env(), **self.env},
            cwd=REPO_ROOT,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the studio exited ({self.proc.returncode}); see {self.log_path}:\n"
                    + self.log_path.read_text(errors="replace")[-3000:]
                )
            try:
                with urllib.request.urlopen(self.url, timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.3)
        self.stop()
        raise TimeoutError(f"the studio did not answer on {self.url} within {timeout_s} s")

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 15.0) -> None:
        """Stop the studio (and its check worker) — never the runs, which have their own sessions."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            terminate_tree(self.proc.pid, grace_s=0)
            self.proc.wait(timeout=10)

    def log_size(self) -> int:
        """How many bytes the studio's log holds now (a mark for :meth:`log_text`)."""
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def log_text(self, start: int = 0) -> str:
        """What the studio (and its check worker) wrote to its log from byte ``start`` on."""
        if not self.log_path.exists():
            return ""
        with open(self.log_path, "rb") as f:
            f.seek(start)
            return f.read().decode("utf-8", errors="replace")

    def __enter__(self) -> "StudioProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def start_fake_run(runs_dir: str | os.PathLike, *args: str) -> tuple[RunDir, int]:
    """A stand-in run process, detached like a real one (own session, output to its train.log, and
    not our child: a shell starts it in the background and exits). Returns the run and its pid."""
    run = RunDir.create(runs_dir, "fake")
    cmd = [sys.executable, "-m", "testing.fake_run", str(runs_dir), "--run-dir", str(run.path), *args]
    with open(run.log_path, "ab") as log:
        subprocess.run(
            ["/bin/sh", "-c", '"$@" </dev/null & exit 0', "sh", *cmd],
            cwd=str(REPO_ROOT),
            env=_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            check=True,
        )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not run.read_status().get("pid"):
        time.sleep(0.05)
    return run, int(run.read_status().get("pid") or 0)


def process_gone(pid: int, timeout_s: float = 30) -> None:
    """Wait until ``pid`` is gone (or a zombie nobody reaped yet: it runs no more)."""
    import psutil

    from testing.waiting import wait_for

    wait_for(
        lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
        timeout_s,
        f"process {pid} to be gone",
    )


def killed_fake_run(runs_dir: str | os.PathLike) -> RunDir:
    """A fake run under ``runs_dir`` killed with SIGKILL after its first steps: its status still says ``running``
    (it could not say otherwise), its process is gone."""
    from testing.waiting import wait_for

    run, pid = start_fake_run(runs_dir, "--steps", "100000", "--rate", "50")
    wait_for(lambda: (run.read_status().get("step") or 0) >= 2, 60, "the fake run's first steps")
    os.kill(pid, signal.SIGKILL)
    process_gone(pid)
    assert run.read_status()["state"] == "running"  # it could not say so itself
    return run


def remove_runs_since(runs_dir: str | os.PathLike, before: set[str]) -> list[str]:
    """Kill and delete every run under ``runs_dir`` that is not in ``before`` (run ids); the ids."""
    import shutil

    from engines.runs.lifecycle import kill_run, list_run_dirs

    removed = []
    for run in list_run_dirs(runs_dir):
        if run.run_id not in before:
            kill_run(run.path, grace_s=2)
            shutil.rmtree(run.path, ignore_errors=True)
            removed.append(run.run_id)
    return removed


def run_ids(runs_dir: str | os.PathLike) -> set[str]:
    from engines.runs.lifecycle import list_run_dirs

    return {r.run_id for r in list_run_dirs(runs_dir)}


def end_process_group(pid: int) -> None:
    """Kill a run process tree this test started (by its id)."""
    terminate_tree(pid, grace_s=0)


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
