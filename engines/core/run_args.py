"""The AgentTrainer arguments of a prepared run, from its run.yaml alone (what the run's process trains with): its
modules, and its config — a resumed run's from its checkpoint (engines/core/resume.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..runs.rundir import RunDir
from .resume import resume_config

#: the spec passed its checks when it was prepared; in the (detached, stoppable) run process a large dataset's
#: conversion may take longer than an interactive check is allowed
RUN_CHECK_TIMEOUT_S = 900.0


def trainer_args(run_dir: str | Path) -> dict[str, Any]:
    """``AgentTrainer(**trainer_args(run_dir))`` rebuilds the run's trainer; ValueError without a run.yaml."""
    run = RunDir(run_dir)
    spec = run.read_spec()
    if not spec:
        raise ValueError(f"{run.path} has no run.yaml — prepare the run first")
    data = spec.get("data") or {}
    return dict(
        agent=spec["agent"],
        train_dataset={"path": data.get("train"), "columns": data.get("columns")},
        test_dataset=data.get("test"),
        reward_func=spec.get("reward"),
        config=resume_config(spec, run.path),
        run_path=str(run.path.parent),
        train_engine_name=spec["engine"],
        run_dir=run.path,
        check_timeout_s=RUN_CHECK_TIMEOUT_S,
    )
