"""Every module's check in an isolated, time-limited child (:mod:`engines.sandbox`): what
``aworld-train check``/``train`` and :class:`~engines.agent_trainer.AgentTrainer` run before they
load user code into their own process, and how a check that hangs or crashes is reported.
"""
from __future__ import annotations

from typing import Any

from .check_result import CHECKED_MODULES, ERROR, WARNING, CheckError, CheckResult
from .sandbox import Outcome, describe, run_isolated
from .user_env import referenced_names, user_code_env

WHAT = {"timeout": "timed out", "crash": "crashed", "exit": "exited", "cancelled": "was cancelled"}
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
            out.append(CheckResult(m, WARNING, f"checked before the {module} check {what}; checked again once it "
                                   "is fixed"))
    out.append(CheckResult("engine", WARNING, f"not probed (the {module or 'module'} check {what})"))
    return out


def _check_all(kwargs: dict[str, Any]) -> list[CheckResult]:
    from .prepare import check_all
    from .sandbox import report_progress

    return check_all(**kwargs, on_module=report_progress)


def check_all_isolated(timeout_s: float | None = None, **kwargs: Any) -> list[CheckResult]:
    """:func:`engines.prepare.check_all` in an isolated child with a time limit (its environment
    without credentials, except those the agent or config asks for by ``${NAME}``). Never raises."""
    env = user_code_env(allow=referenced_names(kwargs.get("agent"), kwargs.get("reward_func"),
                                                     kwargs.get("config")))
    _preload(kwargs.get("train_engine_name"))
    outcome: Outcome = run_isolated(_check_all, {"kwargs": kwargs}, timeout_s=timeout_s, env=env)
    if outcome.ok:
        return outcome.value
    return results_for_failure(outcome.kind, describe(outcome), outcome.stage)


def _preload(engine: str | None) -> None:
    """The engine's heavy imports, here (the fork inherits them; the caller that trains needs them anyway)."""
    from .registry import DEFAULT_ENGINE, get_processor_class

    try:
        get_processor_class(engine or DEFAULT_ENGINE).preload()
    except Exception:  # noqa: BLE001 - an unknown engine or a missing library: the check reports it
        pass


def first_error(results: list[CheckResult]) -> CheckError | None:
    """The first module (in the spec's order) whose check failed, as the CheckError it would raise."""
    for r in results:
        if r.module in CHECKED_MODULES and r.status == ERROR:
            return CheckError.from_result(r)
    return None
