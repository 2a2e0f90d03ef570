"""A sweep checked before anything runs: the base setup's four modules, then every param's range (its
ends, every choice; their combinations while there are few) through the engine's own ``check_config``
— the same check a run gets, with the data fit and the memory estimate — all in one isolated,
time-limited child (:mod:`engines.isolation.sandbox`), as every check of user code is.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

from ..core.modules import Modules
from ..results.check_result import CHECKED_MODULES, ERROR, OK, CheckError, CheckResult
from .spec import SweepSpec


def _describe(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


def check_ranges(spec: SweepSpec, modules: Modules, on_module=None) -> list[CheckResult]:
    """The four module checks of the base setup, then the config check of each corner setting; one
    result per module plus one ``sweep`` result. Runs user code: call it in an isolated child."""
    from ..inputs.config import load_config_input
    from ..core.checks import check_modules
    from ..core.registry import get_processor_class

    scratch = tempfile.mkdtemp(prefix="aworld-sweep-check-")
    try:
        p = get_processor_class(modules.train_engine_name)(scratch)
        agent, reward_func, base = modules.agent, modules.reward_func, load_config_input(modules.config)
        if hasattr(p, "take_aworld_inputs"):  # an engine reading an AWorld trainer's input forms
            agent, reward_func, base = p.take_aworld_inputs(agent, reward_func, base)
        results = check_modules(p, modules.replace(agent=agent, reward_func=reward_func, config=base), on_module)
        if any(r.status == ERROR for r in results):
            return results + [CheckResult("sweep", ERROR, "params not checked: fix the setup first")]
        if on_module is not None:
            on_module("sweep")
        corners = spec.corner_configs()
        for values in corners:
            try:
                p.check_config({**base, **values})
            except CheckError as e:
                name = next(iter(values)) if len(values) == 1 else "the params"
                text = e.result.message
                return results + [
                    CheckResult(
                        "sweep",
                        ERROR,
                        f"params: {_describe(values)} fails the {modules.train_engine_name} engine's "
                        f"config check: {text} — narrow {name}'s range or choices in the sweep",
                        details={"values": values, "engine_message": text},
                    )
                ]
        return results + [
            CheckResult(
                "sweep",
                OK,
                f"{len(spec.params)} param(s) × {spec.trials} trial(s), "
                f"{len(corners)} setting(s) at the ends of the ranges checked",
                details={"checked": corners},
            )
        ]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _check_ranges(spec_dict: dict[str, Any], modules: Modules) -> list[CheckResult]:
    from ..isolation.sandbox import report_progress
    from .spec import cluster_of, parse_sweep

    return check_ranges(parse_sweep(spec_dict, cluster=cluster_of(modules.config)), modules, on_module=report_progress)


def check_sweep_isolated(spec: SweepSpec, modules: Modules, timeout_s: float | None = None) -> list[CheckResult]:
    """:func:`check_ranges` in an isolated child with a time limit (its environment as a check's). Never raises."""
    from ..core.isolated_checks import _preload, name_input_files, results_for_failure
    from ..isolation.sandbox import describe, run_isolated
    from ..isolation.user_env import user_code_envs

    env, servers = user_code_envs(modules.agent, modules.reward_func, modules.config)
    _preload(modules.train_engine_name)
    outcome = run_isolated(
        _check_ranges,
        {"spec_dict": spec.to_dict(), "modules": modules},
        timeout_s=timeout_s,
        env=env,
        server_env=servers,
    )
    if outcome.ok:
        return name_input_files(outcome.value, modules)
    stage = outcome.stage if outcome.stage in CHECKED_MODULES else None
    results = results_for_failure(outcome.kind, describe(outcome), stage)
    if outcome.stage == "sweep":
        results = [r for r in results if r.module != "engine"]
        results.append(CheckResult("sweep", ERROR, f"checking the params {describe(outcome)}"))
    return name_input_files(results, modules)


def first_sweep_error(results: list[CheckResult]) -> CheckError | None:
    for r in results:
        if r.status == ERROR:
            return CheckError.from_result(r)
    return None
