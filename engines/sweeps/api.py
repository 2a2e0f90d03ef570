"""``AgentSweep``: many runs of one setup, searched with Optuna — the Python face of ``aworld-train sweep``,
beside :class:`~engines.core.agent_trainer.AgentTrainer` and with its arguments::

    from engines import AgentSweep

    sweep = AgentSweep(agent="agent.yaml", train_dataset="train.jsonl", test_dataset="test.jsonl",
                       reward_func="reward.py:score", config="grpo.yaml", train_engine_name="trl",
                       sweep={"trials": 6, "sampler": "tpe", "params": {"learning_rate": {"low": 1e-4, "high": 1e-2,
                              "log": True}, "beta": [0.0, 0.04]}})
    sweep.run()            # here, until its trials are done; or sweep.start() to run it detached
    sweep.best()           # {number, run_id, params, value}
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..core.modules import Modules
from ..core.registry import DEFAULT_ENGINE
from ..runs.lifecycle import effective_status
from .launch import prepare_sweep, resume_sweep, spawn_sweep, stop_sweep
from .sweep_dir import SweepDir


class AgentSweep:
    """Checks the setup and every param's range at construction (a :class:`CheckError` says what is wrong),
    then creates ``<run_path>/sweeps/<id>/``."""

    def __init__(
        self,
        agent: Any,
        train_dataset: Any = None,
        test_dataset: Any = None,
        reward_func: Any = None,
        config: Any = None,
        sweep: Any = None,
        run_path: str = "runs",
        train_engine_name: str = DEFAULT_ENGINE,
        *,
        name: str | None = None,
        check_timeout_s: float | None = None,
    ):
        if sweep is None:
            raise ValueError("sweep is empty — pass a sweep.yaml path or a dict {trials, params, ...}")
        modules = Modules(agent, train_dataset, test_dataset, reward_func, config, train_engine_name)
        self.sweep_dir: SweepDir = prepare_sweep(
            sweep,
            modules,
            runs_dir=run_path,
            name=name,
            timeout_s=check_timeout_s,
        )

    @classmethod
    def open(cls, sweep_dir: str | os.PathLike) -> "AgentSweep":
        """An existing sweep (to follow, stop or resume it)."""
        self = cls.__new__(cls)
        self.sweep_dir = SweepDir(sweep_dir)
        if not self.sweep_dir.exists():
            raise ValueError(f"{self.sweep_dir.path} is not a sweep directory (no sweep.yaml)")
        return self

    @property
    def path(self) -> Path:
        return self.sweep_dir.path

    def run(self) -> str:
        """Drive the sweep in this process; returns ``finished`` or ``stopped``."""
        from .driver import run_sweep

        return run_sweep(self.path)

    def start(self) -> int:
        """Drive it in a detached process of its own; returns its pid."""
        return spawn_sweep(self.path)

    def stop(self) -> dict:
        return stop_sweep(self.path)

    def resume(self, detach: bool = True) -> int | str:
        return resume_sweep(self.path, detach=detach)

    def status(self) -> dict:
        return effective_status(self.sweep_dir)

    def summary(self) -> dict:
        return self.sweep_dir.read_summary()

    def best(self) -> dict | None:
        return self.summary().get("best")
