"""This machine's side of a run trained on a Ray cluster: submit the run directory as a Ray job, mirror what the
job writes back into it, forward Stop, and say how the job ended.

The job (:mod:`engines.cluster.job_main`) is the same ``run`` command the studio starts on this machine, so every
engine trains on a cluster the way it trains here. This process stays the run's process for the studio: it holds
the run's ``state``, heartbeat and end, and the job's ``ray_job_id`` / ``ray_address`` / ``ray_run_dir`` (where
the checkpoints are) in status.json.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from secrets import token_hex
from pathlib import Path
from typing import Any

from ..isolation import server_env
from ..isolation.user_env import STUDIO_PREFIX, referenced_names, server_names
from ..runs.causes import Cause, classify_failure
from ..runs.rundir import (
    CHECKPOINTS_DIR,
    EVENTS_FILE,
    FINISHED,
    LOCK_FILE,
    LOG_FILE,
    METRICS_FILE,
    SAMPLES_FILE,
    SPEC_FILE,
    STATUS_FILE,
    STOP_FILE,
    STOPPED,
    STOPPING,
    TENSORBOARD_DIR,
    RunDir,
)
from . import job_main
from .job_secrets import secrets_package
from .mirror import LocalMirror, parse
from .ray_jobs import TERMINAL, ClusterLost, RayJob, request_stop

POLL_S = 0.5
#: after a Stop the job had this long to reach a step boundary: then Ray's stop signal (SIGTERM → a stop request in
#: the job, SIGKILL after FORCE_GRACE_S) — within the studio's 30 s before it kills this process
FORCE_AFTER_S = 15.0
FORCE_GRACE_S = 10
#: run-directory entries the job never needs: the live files of this run and its outputs
EXCLUDES = [
    f"/{name}"
    for name in (LOG_FILE, METRICS_FILE, SAMPLES_FILE, EVENTS_FILE, STATUS_FILE, STOP_FILE, LOCK_FILE, "label.json")
] + [f"/{CHECKPOINTS_DIR}/", f"/{TENSORBOARD_DIR}/", "/evals/", "/.*.tmp", "__pycache__/"]
ENGINES_PACKAGE = Path(__file__).resolve().parent.parent


class ClusterRunError(RuntimeError):
    """The run failed on the cluster; ``failure_cause`` is the cause the job recorded."""

    def __init__(self, message: str, cause: str):
        super().__init__(message)
        self.failure_cause = cause


def outside_paths(spec: Any, root: Path) -> list[str]:
    """The existing files and folders a run spec names outside its run directory (a model folder, the reward's
    module in ``path.py:function``, an MCP config): the job reads them at the same paths on the cluster."""
    found: set[str] = set()

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                visit(v)
        elif isinstance(value, list):
            for v in value:
                visit(v)
        elif isinstance(value, str) and value.startswith("/"):
            for candidate in (value, value.rsplit(":", 1)[0]):
                if os.path.exists(candidate) and not Path(candidate).resolve().is_relative_to(root.resolve()):
                    found.add(candidate)
                    break

    visit(spec)
    return sorted(found)


def job_variables(spec_file: Path) -> dict[str, str]:
    """The variables the run asks for by ``${NAME}`` (its own and its MCP servers'), from this process."""
    base = {**os.environ, **server_env.values()}
    names = referenced_names(spec_file) | server_names(spec_file)
    return {n: base[n] for n in sorted(names) if n in base and not n.upper().startswith(STUDIO_PREFIX)}


def submission(
    run: RunDir,
    address: str,
    cfg: dict[str, Any],
    engine_env: dict[str, str] | None = None,
    secrets: str | None = None,
) -> dict:
    """What :meth:`RayJob.submit` gets for this run (``engine_env``: the engine's own, its paths read there too;
    ``secrets``: the package of the values the run asks for, job_secrets.secrets_package — never in ``env_vars``,
    which the Ray dashboard shows)."""
    submission_id = f"aworld-{run.run_id}-{token_hex(3)}"
    engine_env = engine_env or {}
    needs = sorted({*outside_paths(run.read_spec(), run.path), *(v for v in engine_env.values() if v.startswith("/"))})
    env = {
        **engine_env,
        job_main.IN_RAY_JOB: "1",
        job_main.RUN_ID: run.run_id,
        job_main.DASHBOARD: address,
        job_main.SUBMISSION_ID: submission_id,
        job_main.NEEDS: json.dumps(needs),
        "PYTHONUNBUFFERED": "1",
        "RAY_JOB_STOP_WAIT_TIME_S": str(FORCE_GRACE_S),  # read by the job's supervisor: SIGTERM, then SIGKILL
    }
    if cfg.get("ray_storage"):
        env[job_main.STORAGE] = str(cfg["ray_storage"])
    resources = {"num_cpus": 1, **(cfg.get("ray_resources") or {})}
    return {
        "entrypoint": shlex.join(["python3", "-m", "engines.cluster.job_main"]),
        "runtime_env": {
            "working_dir": str(run.path),
            # the studio's own engine code, whatever the cluster has installed (and the run's values)
            "py_modules": [str(ENGINES_PACKAGE)] + ([secrets] if secrets else []),
            "excludes": EXCLUDES,
            "env_vars": env,
        },
        "metadata": {"aworld_run": run.run_id},
        "submission_id": submission_id,
        "entrypoint_num_cpus": resources.get("num_cpus"),
        "entrypoint_num_gpus": resources.get("num_gpus"),
        "entrypoint_memory": int(resources["memory"]) if resources.get("memory") else None,
    }


def train_as_ray_job(
    run: RunDir, address: str, cfg: dict[str, Any], engine_env: dict[str, str] | None = None
) -> tuple[str, str | None]:
    """Train ``run`` as a Ray job on the cluster at ``address``: (``"finished"`` or ``"stopped"``, the cause the
    job stopped with); :class:`ClusterRunError` when it failed there."""
    job = RayJob(address)
    with secrets_package(job_variables(run.file(SPEC_FILE))) as package:
        sub = submission(run, address, cfg, engine_env, secrets=package)
        job_id = job.submit(**sub)  # uploads the packages
    run.write_status(ray_job_id=job_id, ray_address=address)
    run.event(
        "submitted",
        ray_job_id=job_id,
        address=address,
        entrypoint=sub["entrypoint"],
        reads_on_cluster=json.loads(sub["runtime_env"]["env_vars"][job_main.NEEDS]),
    )
    mirror = LocalMirror(run)
    job.follow_logs(lambda chunk: None)  # whole lines, from job.lines
    state, stop_sent, forced = "PENDING", None, False
    with open(run.log_path, "a", encoding="utf-8") as log:

        def take_lines() -> None:
            for line in job.drain_lines():
                record = parse(line)
                if record is None:
                    log.write(line + "\n")
                else:
                    mirror.apply(record)
            log.flush()

        while True:
            take_lines()
            try:
                answer = job.status_or_none()
            except ClusterLost as e:
                raise ClusterRunError(str(e), Cause.KILLED) from e
            if answer is None:  # the dashboard restarting, a network blip: the job itself goes on
                time.sleep(POLL_S)
                continue
            state = answer
            if state in TERMINAL:
                break
            if run.stop_requested() and stop_sent is None:
                stop_sent = time.time()
                run.write_status(state=STOPPING)
                request_stop(job.client, job_id, run.stop_reason() or "user")
            elif stop_sent is not None and not forced and time.time() - stop_sent > FORCE_AFTER_S:
                forced = True  # the job did not see the request (its node cannot reach the dashboard?): Ray's signal
                job.stop()
            run.write_status(ray_job_status=state)
            time.sleep(POLL_S)
        job.join_logs()
        take_lines()
    run.write_status(ray_job_status=state)
    return job_outcome(job, state, mirror.end, stop_sent is not None)


def job_outcome(job: RayJob, state: str, end: dict[str, Any] | None, stop_sent: bool) -> tuple[str, str | None]:
    """How the run ended, from the job's end record (how its run ended there), else from Ray's job state."""
    if end and end.get("state") == FINISHED:
        return FINISHED, end.get("cause")  # early_stopped: the job's own
    if end and end.get("state") == STOPPED:
        return STOPPED, end.get("cause")
    if end and end.get("error"):
        cause = end.get("cause") or classify_failure(end["error"])
        raise ClusterRunError(f"on the Ray cluster (job {job.job_id}): {end['error']}", cause)
    if state == "STOPPED" and stop_sent:
        return STOPPED, None
    if state == "STOPPED":
        raise ClusterRunError(f"the Ray job {job.job_id} was stopped outside the studio", Cause.KILLED)
    info = job.info()
    message = (info.message or "").strip() or "no end record from the job"
    raise ClusterRunError(f"Ray job {job.job_id} {state.lower()}: {message}", classify_failure(message))
