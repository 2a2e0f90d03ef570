"""The module arguments every command that checks or trains shares (``--agent --train --test --reward --config
--engine --columns --check-timeout``): the argparse options and the :class:`~engines.core.modules.Modules` they
give. ``aworld-train`` (engines/cli.py) and ``aworld-train sweep`` (engines/sweeps/cli.py) use
them."""

from __future__ import annotations

import argparse
from typing import Any

from .results.check_result import CheckError
from .core.modules import Modules
from .core.registry import DEFAULT_ENGINE


def parse_reward(values: list[str] | None) -> Any:
    """``--reward`` values → reward spec entries (see engines.rewards.spec.parse_cli_reward)."""
    if not values:
        return None
    from .rewards.spec import parse_cli_reward

    try:
        return [entry for v in values for entry in parse_cli_reward(v)]
    except CheckError as e:
        raise SystemExit(f"error: {e.result.message}")


def parse_columns(value: str | None) -> dict | None:
    if not value:
        return None
    pairs = dict(item.split("=", 1) for item in value.split(",") if "=" in item)
    return {k.strip(): v.strip() for k, v in pairs.items()}


def add_module_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent", required=True, help="agent YAML")
    p.add_argument("--train", dest="train_dataset", help="training dataset (csv/tsv/jsonl/json/parquet/folder)")
    p.add_argument("--test", dest="test_dataset", help="test dataset")
    p.add_argument(
        "--reward",
        action="append",
        help="built-in name, file.py:fn or module:fn, REF(k=v,...) for a "
        "factory's arguments; NAME@WEIGHT; inline YAML {judge: {...}} / {reward_model: PATH}; a .yaml file",
    )
    p.add_argument("--config", help="engine config (YAML/JSON file)")
    p.add_argument(
        "--engine",
        dest="train_engine_name",
        default=DEFAULT_ENGINE,
        help=f"training engine ({DEFAULT_ENGINE} by default)",
    )
    p.add_argument("--columns", help="column mapping, e.g. prompt=question,answer=solution")
    p.add_argument(
        "--check-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="time limit of the checks, which run user code in an isolated child ($AWORLD_CHECK_TIMEOUT_S, else 60)",
    )


def modules_from_args(a: argparse.Namespace) -> Modules:
    """The modules the command line names (``--columns`` applied to the training data)."""
    modules = Modules(a.agent, a.train_dataset, a.test_dataset, parse_reward(a.reward), a.config, a.train_engine_name)
    return modules.with_columns(parse_columns(a.columns) if a.train_dataset else None)
