"""Sweeps made, started, stopped and resumed: the sweep directory and its Optuna study are created only
after the whole sweep passed its checks; the driver runs detached (``python -m engines sweep-run``) or in
the caller's process."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from ..results.check_result import CheckError, CheckResult
from ..isolation.processes import spawn_detached
from ..core.modules import Modules
from ..runs.rundir import ACTIVE_STATES, FINISHED, QUEUED, RUNNING
from ..runs.lifecycle import effective_status, process_alive
from .check import check_sweep_isolated, first_sweep_error
from .spec import SweepSpec, cluster_of, parse_sweep
from .sweep_dir import SweepDir


def _absolute(value: Any) -> Any:
    """A relative file path (or ``file.py:fn`` reference) made absolute, so the driver finds it from anywhere."""
    if isinstance(value, str) and "\n" not in value and len(value) < 4096:
        path, sep, attr = value.rpartition(":") if ".py:" in value else (value, "", "")
        candidate = Path(os.path.expanduser(path))
        if path and candidate.exists():
            return str(candidate.resolve()) + (sep + attr if sep else "")
        return value
    if isinstance(value, dict):
        return {k: _absolute(v) if k in ("path", "train", "test", "ref") else v for k, v in value.items()}
    if isinstance(value, list):
        return [_absolute(v) for v in value]
    return value


def sweep_inputs(modules: Modules) -> dict[str, Any]:
    """The base setup as sweep.yaml records it (its config apart): files and references (absolute), not Python
    objects."""
    inputs = {k: v for k, v in modules.as_kwargs().items() if k != "config"}
    for key, value in inputs.items():
        if not (value is None or isinstance(value, (str, int, float, bool, list, dict))):
            raise CheckError(
                "sweep",
                f"{key} is a {type(value).__name__}: a sweep's trials are separate processes "
                "that read the setup from sweep.yaml",
                "give it as a file path or a reference (file.py:fn), as the CLI takes it",
            )
    return {k: _absolute(v) for k, v in inputs.items()}


def check_sweep(
    sweep: Any, modules: Modules, timeout_s: float | None = None
) -> tuple[SweepSpec | None, list[CheckResult]]:
    """(the parsed sweep, every check's result) — the setup's modules, then each param's range against the
    engine's config check. Never raises for bad input: a sweep.yaml error is the ``sweep`` result."""
    from ..inputs.config import load_config_input

    try:
        base_config = load_config_input(modules.config)
        spec = parse_sweep(sweep, cluster=cluster_of(base_config))
        base = Modules(**sweep_inputs(modules), config=base_config)
    except CheckError as e:
        return None, [e.result]
    return spec, check_sweep_isolated(spec, base, timeout_s=timeout_s)


def prepare_sweep(
    sweep: Any,
    modules: Modules,
    runs_dir: str | os.PathLike = "runs",
    name: str | None = None,
    timeout_s: float | None = None,
) -> SweepDir:
    """Check everything, then create ``<runs>/sweeps/<id>/`` with sweep.yaml and the Optuna study (state
    ``queued``). Raises :class:`CheckError` (nothing is created) when a check fails."""
    import optuna

    from ..inputs.config import load_config_input

    spec, results = check_sweep(sweep, modules, timeout_s)
    error = first_sweep_error(results)
    if error is not None:
        raise error
    assert spec is not None
    spec.name = (name or "").strip() or spec.name
    base = sweep_inputs(modules)
    sd = SweepDir.create_sweep(runs_dir, label=spec.name)
    spec.name = spec.name or f"sweep-{sd.run_id.rsplit('-', 1)[-1]}"  # short: it is part of each trial's run id
    sd.write_sweep(
        {
            "sweep": spec.to_dict(),
            "base": base,
            "base_config": load_config_input(modules.config),
            "created": time.time(),
        }
    )
    optuna.create_study(study_name=sd.study_name, storage=sd.storage_url, direction=spec.direction)
    sd.write_status(state=QUEUED, created=time.time(), trials=spec.trials)
    sd.event("created", trials=spec.trials, params=list(spec.params))
    return sd


def spawn_sweep(sweep_dir: str | os.PathLike, env: dict[str, str] | None = None) -> int:
    """Start the sweep's driver detached (``python -m engines sweep-run <dir>``); returns its pid."""
    import psutil

    sd = SweepDir(sweep_dir)
    status = effective_status(sd)
    if status.get("state") in ACTIVE_STATES and status.get("pid") and process_alive(status):
        raise ValueError(f"sweep {sd.run_id} is already running (pid {status['pid']})")
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env["PYTHONUNBUFFERED"] = "1"
    proc = spawn_detached([sys.executable, "-m", "engines", "sweep-run", str(sd.path)], sd.log_path, env=full_env)
    sd.write_status(
        state=QUEUED if status.get("state") != RUNNING else RUNNING,
        pid=proc.pid,
        pid_create_time=psutil.Process(proc.pid).create_time(),
        launched=time.time(),
    )
    return proc.pid


def stop_sweep(sweep_dir: str | os.PathLike, reason: str = "user") -> dict:
    """Ask the sweep to stop: its running trials stop at a step boundary (re-run on resume)."""
    sd = SweepDir(sweep_dir)
    sd.request_stop(reason)
    return effective_status(sd)


def _has_resumed_trials(sd: SweepDir) -> bool:
    """Whether a failed trial's run was resumed since the sweep told it (the driver then follows it again)."""
    import optuna

    from .driver import resumed_runs

    study = optuna.load_study(study_name=sd.study_name, storage=sd.storage_url)
    return bool(resumed_runs(study.get_trials(deepcopy=False)))


def resume_sweep(sweep_dir: str | os.PathLike, detach: bool = True) -> int | str:
    """Start a stopped (or killed) sweep's driver again: trials it left are followed, re-run or told.
    Returns the driver's pid (``detach``) or the sweep's final state."""
    sd = SweepDir(sweep_dir)
    if not sd.exists():
        raise ValueError(f"{sd.path} is not a sweep directory (no sweep.yaml)")
    status = effective_status(sd)
    if status.get("state") in ACTIVE_STATES and process_alive(status):
        raise ValueError(f"sweep {sd.run_id} is still running (pid {status.get('pid')})")
    if status.get("state") == FINISHED and not _has_resumed_trials(sd):
        raise ValueError(
            f"sweep {sd.run_id} has finished all its trials (a failed trial's run resumed with aworld-train resume "
            "would be followed again)"
        )
    sd.clear_stop()
    sd.event("resumed")
    if detach:
        return spawn_sweep(sd.path)
    from .driver import run_sweep

    return run_sweep(sd.path)
