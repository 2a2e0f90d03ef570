"""Prepare a run directory that a run process can execute (its modules checked, ``run.yaml`` written), rebuild
the trainer of a prepared run, and copy an earlier run's spec into a new one."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from .agent_trainer import AgentTrainer
from ..results.check_result import ERROR, CheckError
from .checks import engine_result
from .modules import Modules
from .run_args import trainer_args
from ..runs.rundir import QUEUED, RunDir


def prepare_run(modules: Modules, runs_dir: str = "runs", name: str | None = None, note: str | None = None) -> RunDir:
    """Check everything in a fresh run dir and write its run.yaml (state ``queued``); ``name`` (also
    part of the run id) and ``note`` go to its label. Raises :class:`CheckError` (the run dir is
    removed) when a module fails."""
    engine_name = modules.train_engine_name
    cls, engine = engine_result(engine_name)
    if cls is None or engine.status == ERROR:
        raise CheckError("engine", engine.message)
    run = RunDir.create(runs_dir, engine_name, label=(name or "").strip() or None)
    try:
        trainer = AgentTrainer(**modules.as_kwargs(), run_path=runs_dir, run_dir=run.path)
    except BaseException:
        shutil.rmtree(run.path, ignore_errors=True)
        raise
    processor = trainer.train_processor
    processor.write_run_spec()
    processor.run.write_status(state=QUEUED, engine=engine_name, created=time.time())
    processor.run.event("created", engine=engine_name)
    if (name or "").strip() or (note or "").strip():
        processor.run.write_label(name or "", note or "")
    return processor.run


def trainer_from_run_dir(run_dir: str | Path, isolated_checks: bool = True) -> AgentTrainer:
    """Rebuild the AgentTrainer of a prepared run from its run.yaml (what the run process does; run_args.py).
    ``isolated_checks=False`` where the run process has already checked the spec in isolation (the
    ranks of a launched run)."""
    return AgentTrainer(**trainer_args(run_dir), isolated_checks=isolated_checks)


def rerun_dir(run_dir: str | Path, runs_dir: str | Path | None = None) -> RunDir:
    """A new run directory (fresh run id, state ``queued``) holding ``run_dir``'s exact spec."""
    old = RunDir(run_dir)
    spec = old.read_spec()
    if not spec or not spec.get("engine"):
        raise ValueError(f"{old.path} has no run.yaml naming an engine — give the directory of an earlier run")
    run = RunDir.create(runs_dir or old.path.parent, spec["engine"])
    spec["run_id"] = run.run_id
    spec.pop("resume", None)  # a new run trains from the start: its own resumes are its own
    spec.pop("resumes", None)
    run.write_spec(spec)
    run.write_status(state=QUEUED, engine=spec["engine"], rerun_of=old.run_id, created=time.time())
    run.event("created", engine=spec["engine"], rerun_of=old.run_id)
    return run
