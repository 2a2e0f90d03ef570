"""The entry point of a run's Ray job, on the cluster: ``python3 -m engines.cluster.job_main``.

Ray extracted the run directory (without its live files) as the job's working directory. The job copies it to
``<storage>/<run_id>`` (``ray_storage``, default ``~/aworld-runs`` on the node, where the checkpoints stay), checks
that the files the run reads outside its directory are there, says where it is, then trains the run there with
the same ``run`` command as on the studio's machine, as a child process whose output is the job's log (this
process has threads; the run forks for its checks, which a process with threads must not do), while
:class:`JobMirror` prints what the engine writes and a thread watches for the studio's Stop
(:func:`ray_jobs.stop_requested`). Ray's own stop signal reaches the child too, which stops at a step boundary;
this process waits for it, then sends the end.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

from ..isolation.privileges import set_parent_death_signal
from ..runs.causes import Cause
from ..runs.rundir import RunDir
from .job_secrets import read_secrets
from .mirror import JobMirror
from .ray_jobs import job_client, stop_requested

#: set in a cluster job's environment: the run trains there, it is not submitted again
IN_RAY_JOB = "AWORLD_IN_RAY_JOB"
RUN_ID = "AWORLD_RUN_ID"
STORAGE = "AWORLD_RAY_STORAGE"
DASHBOARD = "AWORLD_RAY_DASHBOARD"
SUBMISSION_ID = "AWORLD_RAY_SUBMISSION_ID"
NEEDS = "AWORLD_RAY_NEEDS"
DEFAULT_STORAGE = "~/aworld-runs"
STOP_POLL_S = 2.0


def run_folder(environ=os.environ) -> Path:
    """``<storage>/<run_id>``; a run submitted again (its studio restarted) gets ``<run_id>.2``, ... beside it."""
    base = Path(os.path.expanduser(environ.get(STORAGE) or DEFAULT_STORAGE)) / environ[RUN_ID]
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}.{n}")
    return path


def missing_paths(environ=os.environ) -> list[str]:
    """The files the run reads outside its directory (the model, the reward's module, ...) not on this node."""
    return [p for p in json.loads(environ.get(NEEDS) or "[]") if not os.path.exists(p)]


def watch_for_stop(run: RunDir, done: threading.Event, environ=os.environ) -> None:
    """Until ``done``: the studio's Stop (a marker job) → the run's STOP file, with the studio's reason."""
    address, job_id = environ.get(DASHBOARD), environ.get(SUBMISSION_ID)
    try:
        client = job_client(address)
    except Exception as e:  # noqa: BLE001 - Stop then comes as Ray's stop signal (see ray_run.FORCE_AFTER_S)
        print(
            f"the studio's Stop cannot be watched from here ({type(e).__name__}: {e}); Ray's stop signal "
            "still stops the run at a step boundary",
            file=sys.stderr,
            flush=True,
        )
        return
    while not done.wait(STOP_POLL_S):
        reason = stop_requested(client, job_id)
        if reason:
            run.request_stop(reason)
            return


def main() -> int:
    target = run_folder()
    shutil.copytree(Path.cwd(), target)
    lock = threading.Lock()

    def write(text: str) -> None:
        with lock:
            sys.stdout.write(text)
            sys.stdout.flush()

    mirror = JobMirror(target, write)
    mirror.send({"where": {"host": socket.gethostname(), "path": str(target)}})
    missing = missing_paths()
    if missing:
        error = (
            f"the run reads files outside its directory that this cluster node does not have: "
            f"{', '.join(missing)} — put them on storage the cluster shares, at the same paths (docs/CLUSTER.md)"
        )
        print(error, file=sys.stderr, flush=True)
        mirror.send({"end": {"state": "failed", "cause": Cause.MISSING_DEPENDENCY, "error": error}})
        return 2
    # Ray's stop signal goes to every process of the job: the run stops at a step boundary, this one waits for it
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    child = subprocess.Popen(
        [sys.executable, "-m", "engines", "run", str(target)],
        env={**os.environ, **read_secrets()},  # the values the run asks for (job_secrets: not in the job's env_vars)
        preexec_fn=lambda: set_parent_death_signal(signal.SIGKILL),  # never outlives the job's process
    )
    done = threading.Event()
    threading.Thread(target=watch_for_stop, args=(RunDir(target), done), daemon=True).start()
    mirror.start()
    try:
        return child.wait()
    finally:
        done.set()
        mirror.close()


if __name__ == "__main__":
    sys.exit(main())
