"""Check every module and report all of them (for the studio and ``python -m engines check``): the spec's
order agent → dataset → reward → config, then the engine's availability. Never raises."""

from __future__ import annotations

import shutil
import tempfile
from typing import Any, Callable

from ..results.check_result import CHECKED_MODULES, ERROR, CheckError, CheckResult
from .modules import Modules
from .registry import get_processor_class


def engine_result(engine: str) -> tuple[Any, CheckResult]:
    try:
        cls = get_processor_class(engine)
    except ValueError as e:
        return None, CheckResult("engine", ERROR, str(e))
    try:
        ok, reason = cls.availability()
    except Exception as e:  # a probe must never take the caller down
        ok, reason = False, f"availability probe failed: {type(e).__name__}: {e}"
    status = "ok" if ok else ERROR
    return cls, CheckResult(
        "engine",
        status,
        f"{engine}: " + ("available" if ok else reason),
        details={"engine": engine, "available": ok, "reason": reason},
    )


def check_modules(p: Any, modules: Modules, on_module: Callable[[str], None] | None = None) -> list[CheckResult]:
    """The four module checks of the engine ``p`` in the spec's order, one result each; never raises: a module
    whose check fails (a :class:`CheckError`, user code's exception or ``sys.exit``) is reported and the next is
    checked. ``on_module(module)`` is called as each check starts. Runs user code: the studio calls it in a child."""
    m = modules
    steps = (
        ("agent", lambda: p.check_agent(m.agent)),
        ("dataset", lambda: p.check_dataset(m.train_dataset, m.test_dataset)),
        ("reward", lambda: p.check_reward(m.reward_func)),
        ("config", lambda: p.check_config(m.config)),
    )
    results: list[CheckResult] = []
    for module, step in steps:
        if on_module is not None:
            on_module(module)
        try:
            step()
            found = [r for r in p.check_results if r.module == module]
            results.append(found[-1] if found else CheckResult(module, "ok", "checked"))
        except CheckError as e:
            results.append(e.result)
        except SystemExit as e:  # sys.exit() in user code: say so, keep going
            results.append(
                CheckResult(
                    module,
                    ERROR,
                    f"the {module} module's code called sys.exit({e.code!r}) — "
                    "user code must not exit the check: return a value or raise an exception",
                )
            )
        except Exception as e:  # user code or an engine bug: report it, keep going
            results.append(CheckResult(module, ERROR, f"{type(e).__name__}: {e}"))
    return results


def check_all(
    modules: Modules,
    run_path: str | None = None,
    on_module: Callable[[str], None] | None = None,
    disk_dir: str | None = None,
) -> list[CheckResult]:
    """Run every check in the spec's order; never raises; returns one result per module + engine.
    ``on_module(module)`` is called as each check starts (the studio's worker reports it, so a check
    that hangs or crashes is blamed on the right module). ``disk_dir``: where the run will write, when that is
    not ``run_path`` (the studio checks in a scratch folder; its runs go to its runs folder)."""
    cls, engine = engine_result(modules.train_engine_name)
    if cls is None:
        return [CheckResult(m, ERROR, "not checked: unknown engine") for m in CHECKED_MODULES] + [engine]
    scratch = None
    if run_path is None:
        scratch = tempfile.mkdtemp(prefix="aworld-check-")
        run_path = scratch
    try:
        try:
            p = cls(run_path)
            if disk_dir and hasattr(p, "disk_dir"):
                p.disk_dir = disk_dir
        except Exception as e:  # an engine whose constructor fails: report it like any check
            msg = f"engine '{modules.train_engine_name}' failed to start: {type(e).__name__}: {e}"
            return [CheckResult(m, ERROR, "not checked: the engine failed to start") for m in CHECKED_MODULES] + [
                CheckResult("engine", ERROR, msg, details=engine.details)
            ]
        if hasattr(p, "take_aworld_inputs"):  # an engine reading an AWorld trainer's input forms
            agent, reward_func, config = p.take_aworld_inputs(modules.agent, modules.reward_func, modules.config)
            modules = modules.replace(agent=agent, reward_func=reward_func, config=config)
        results = check_modules(p, modules, on_module)
        return results + [engine]
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
