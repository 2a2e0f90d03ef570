"""Every module's check in an isolated, time-limited child (:mod:`engines.isolation.sandbox`): what
``aworld-train check``/``train`` and :class:`~engines.core.agent_trainer.AgentTrainer` run before they
load user code into their own process, and how a check that hangs or crashes is reported.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..results.check_result import CHECKED_MODULES, ERROR, WARNING, CheckError, CheckResult
from ..isolation.sandbox import Outcome, describe, run_isolated
from ..isolation.user_env import user_code_envs
from .modules import Modules

WHAT = {
    "timeout": "timed out",
    "crash": "crashed",
    "exit": "exited",
    "cancelled": "was cancelled",
    "processes": "started too many processes",
}
HINTS = {
    "timeout": "a tool or reward that loops, sleeps or waits (on import or when called) is the usual cause; "
    "make it return promptly",
    "crash": "native code crashed (a segfault in an extension, or a signal sent to the process)",
    "exit": "user code must not call os._exit()/sys.exit(): return a value or raise an exception instead",
}


def results_for_failure(kind: str, message: str, stage: str | None) -> list[CheckResult]:
    """One result per module for a check that did not return: the module it was in gets the error
    (``message`` names whose code it was), the ones after it are "not checked"."""
    module = stage if stage in CHECKED_MODULES else None
    what = WHAT.get(kind, "failed")
    hint = HINTS.get(kind)
    text = message if not hint else f"{message} — {hint}"
    out = []
    reached = module is None
    for m in CHECKED_MODULES:
        if module is None or m == module:
            out.append(CheckResult(m, ERROR, text, details={"kind": kind}))
            reached = True
        elif reached:
            out.append(CheckResult(m, ERROR, f"not checked (the {module} check {what})"))
        else:
            out.append(
                CheckResult(m, WARNING, f"checked before the {module} check {what}; checked again once it is fixed")
            )
    out.append(CheckResult("engine", WARNING, f"not probed (the {module or 'module'} check {what})"))
    return out


def _check_all(modules: Modules) -> list[CheckResult]:
    from .checks import check_all
    from ..isolation.sandbox import report_progress

    return check_all(modules, on_module=report_progress)


def check_all_isolated(modules: Modules, timeout_s: float | None = None) -> list[CheckResult]:
    """:func:`engines.core.checks.check_all` in an isolated child with a time limit (its environment
    without credentials, except those the agent or config asks for by ``${NAME}``; the variables only an
    MCP server asks for go to its servers alone, :mod:`engines.isolation.server_env`). Never raises."""
    env, servers = user_code_envs(modules.agent, modules.reward_func, modules.config)
    _preload(modules.train_engine_name)
    outcome: Outcome = run_isolated(_check_all, {"modules": modules}, timeout_s=timeout_s, env=env, server_env=servers)
    if outcome.ok:
        return name_input_files(outcome.value, modules)
    return name_input_files(results_for_failure(outcome.kind, describe(outcome), outcome.stage), modules)


def _input_files(modules: Modules) -> dict[str, list[str]]:
    """module → the names its error may be about: the agent's and the config's file, the reward
    files and functions (``file.py:fn``); nothing for inputs that are not files."""

    def file_name(value: Any) -> list[str]:
        if (
            isinstance(value, (str, os.PathLike))
            and "\n" not in str(value)
            and len(str(value)) < 4096
            and os.path.isfile(os.path.expanduser(str(value)))
        ):
            return [Path(str(value)).name]
        return []

    refs = modules.reward_func
    refs = refs if isinstance(refs, (list, tuple)) else [refs]
    rewards = []
    for ref in refs:
        ref = ref.get("ref") if isinstance(ref, dict) else ref  # the CLI's {"ref": "r.py:fn", "weight": 1.0}
        file, _, fn = str(ref).rpartition(":") if isinstance(ref, str) and ".py:" in ref else ("", "", "")
        if file:
            rewards.append(f"{Path(file).name}:{fn.split('@')[0].split('(')[0]}")
    return {"agent": file_name(modules.agent), "config": file_name(modules.config), "reward": rewards}


def name_input_files(results: list[CheckResult], modules: Modules) -> list[CheckResult]:
    """A module's error that names none of its input files (e.g. "`learning_rate` must be float" from
    config.yaml, a reward file's dry run that timed out) starts with the file: "config.yaml: …"."""
    names = _input_files(modules)
    out = []
    for r in results:
        mine = names.get(r.module) or []
        named = any(n in r.message or n.partition(":")[0] in r.message for n in mine)
        if r.status == ERROR and mine and not named and not r.message.startswith("not checked"):
            r = replace(r, message=f"{', '.join(mine)}: {r.message}")
        out.append(r)
    return out


def _preload(engine: str | None) -> None:
    """The engine's heavy imports, here (the fork inherits them; the caller that trains needs them anyway)."""
    from ..fit.gpus import cuda_devices
    from .registry import DEFAULT_ENGINE, get_processor_class

    try:
        get_processor_class(engine or DEFAULT_ENGINE).preload()
    except Exception:  # noqa: BLE001 - an unknown engine or a missing library: the check reports it
        pass
    if "torch" in sys.modules:
        cuda_devices()  # read here, once, without CUDA in this process: the checks' forks read it, never the driver


def first_error(results: list[CheckResult]) -> CheckError | None:
    """The first module (in the spec's order) whose check failed, as the CheckError it would raise."""
    for r in results:
        if r.module in CHECKED_MODULES and r.status == ERROR:
            return CheckError.from_result(r)
    return None
