"""The calc agent's run (the tool-calling demo: ``add`` through Python tools), prepared and not trained: what the
chat and evaluation tests talk to."""

from __future__ import annotations

import os
from pathlib import Path

from engines.core.modules import Modules
from engines.core.prepare import prepare_run
from engines.runs.rundir import RunDir

ASSETS = Path(__file__).resolve().parent.parent / "assets"


def calc_run(runs_dir: str | os.PathLike) -> RunDir:
    """A prepared trl run of the calc agent under ``runs_dir`` (its base model answers with a tool call)."""
    return prepare_run(
        Modules(
            str(ASSETS / "agents/calc_agent.yaml"),
            str(ASSETS / "datasets/calc_train.jsonl"),
            None,
            str(ASSETS / "rewards/calc_reward.py") + ":calc_reward",
            {"max_steps": 2},
            train_engine_name="trl",
        ),
        runs_dir=str(runs_dir),
    )
