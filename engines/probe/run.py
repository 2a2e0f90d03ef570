"""A probe of a checked setup: the stored report when one exists for the same inputs, else the samples taken in an
isolated, time-limited child (engines/isolation/sandbox.py: the model, the reward's and the tools' code never run in
the caller's process, as for the checks), the statistics, forecast and verdicts made of them, and the report stored.

``probe_processor`` takes an engine's processor after its checks (``AgentTrainer.probe`` and ``aworld-train probe``
call it): its agent, training set, reward and effective config are what the probe samples with."""

from __future__ import annotations

import os
import select
import time
from typing import Any, Callable

from ..isolation.sandbox import IsolatedCall, Outcome, describe, run_isolated, seconds_from_env
from ..isolation.user_env import user_code_envs
from ..results.check_result import CheckError
from . import statistics as S
from .forecast import forecast
from .result import ProbeResult
from .sampling import pick_rows, sample
from .settings import probe_settings
from .store import probe_inputs, probe_key, probe_path, read_stored, write_stored
from .verdicts import verdicts

DEFAULT_PROMPTS = 64
#: the probe's time limit: ``$AWORLD_PROBE_TIMEOUT_S``, else this many seconds
DEFAULT_TIMEOUT_S = 900.0
TIMEOUT_ENV = "AWORLD_PROBE_TIMEOUT_S"


def default_timeout_s() -> float:
    """The sampling's time limit: ``$AWORLD_PROBE_TIMEOUT_S``, else 900 s."""
    return seconds_from_env(TIMEOUT_ENV, DEFAULT_TIMEOUT_S)


def _count(name: str, value: Any, low: int, high: int, fix: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not (low <= value <= high):
        raise CheckError("probe", f"{name} must be a whole number from {low} to {high}, got {value!r}", fix)
    return value


def build_report(
    settings: dict[str, Any], names: list[str], sampled: dict[str, Any], pass_threshold: float, diagnostics: Any
) -> dict[str, Any]:
    """The report from the samples (pure: the tests rebuild it from stored samples)."""
    samples = sampled["samples"]
    prompts = S.prompt_stats(samples, pass_threshold)
    report: dict[str, Any] = {
        "settings": settings,
        "samples": len(samples),
        "prompts": prompts,
        "pass_rates": S.pass_rates(prompts, pass_threshold),
        "zero_spread": S.zero_spread(prompts, samples, int(settings["samples"]), int(settings["num_generations"])),
        "lengths": S.lengths(samples, int(settings["max_completion_length"])),
        "terms": S.terms(samples, names),
        "tools": S.tool_use(samples, int(settings["max_turns"])) if settings["has_tools"] else None,
        "timing": sampled["timing"],
    }
    report["forecast"] = forecast(settings, sampled["timing"], report["lengths"])
    report["verdicts"] = verdicts(report, diagnostics if isinstance(diagnostics, dict) else None)
    return report


def _sample_in_child(processor: Any, settings: Any, rows: list[int], samples: int, seed: int) -> dict[str, Any]:
    return sample(
        settings,
        processor.agent_spec,
        processor.data.train,
        processor.data.columns,
        processor.reward,
        rows,
        samples,
        seed,
    )


def probe_processor(
    processor: Any,
    prompts: int = DEFAULT_PROMPTS,
    samples: int | None = None,
    seed: int = 0,
    runs_dir: str | os.PathLike | None = None,
    timeout_s: float | None = None,
    refresh: bool = False,
    pass_threshold: float = 1.0,
    sources: tuple = (),
    on_progress: Callable[[str | None], None] | None = None,
) -> ProbeResult:
    """Probe the checked setup of ``processor`` (a StandardProcessor whose checks passed). ``samples`` defaults to
    the config's ``num_generations``; the report goes to ``<runs_dir>/.probes/<key>.json`` (``runs_dir``: the
    processor's runs folder). ``sources``: the inputs as given (agent, reward, config), whose ``${NAME}`` the child's
    environment may hold (engines/isolation/user_env.py). ``refresh``: sample again even when a report is stored.
    ``on_progress``: called with what the sampling child says it is doing (``"12 of 64 completions sampled and
    scored"``) each time that changes (the studio's check worker passes it on to the page). Raises CheckError for bad
    arguments and for a probe that failed (its cause: the reward's error, the time limit, ...)."""
    if getattr(processor, "agent_spec", None) is None or getattr(processor, "data", None) is None:
        raise CheckError("probe", "the setup is not checked", "construct AgentTrainer with valid modules first")
    if processor.reward is None:
        raise CheckError("probe", "there is no reward to score completions with", "give a reward (--reward)")
    cfg = processor.effective_config or {}
    settings = probe_settings(processor.engine_name, cfg, processor.agent_spec)
    prompts = _count("prompts", prompts, 1, 100_000, "give --prompts N, e.g. 64")
    samples = settings.num_generations if samples is None else samples
    samples = _count("samples", samples, 1, 1024, "give --samples K, e.g. the config's num_generations")
    seed = _count("seed", seed, 0, 2**32 - 1, "give --seed S, a whole number ≥ 0")
    if samples > 1 and settings.temperature <= 0:
        raise CheckError(
            "probe",
            f"temperature is 0, so the {samples} samples per prompt would all be the same completion",
            "set the config's temperature above 0 (training samples at it too)",
            key="temperature",
        )
    runs_dir = runs_dir if runs_dir is not None else processor.run_path
    sdict = {**settings.to_dict(), "samples": samples}
    inputs = probe_inputs(processor, sdict, prompts, samples, seed)
    inputs["pass_threshold"] = pass_threshold
    key = probe_key(inputs)
    if not refresh and (stored := read_stored(runs_dir, key)) is not None:
        return ProbeResult(stored, reused=True)
    rows = pick_rows(len(processor.data.train), prompts, seed)
    env, servers = user_code_envs(*sources)
    t0 = time.time()
    call = dict(
        fn=_sample_in_child,
        kwargs={"processor": processor, "settings": settings, "rows": rows, "samples": samples, "seed": seed},
        timeout_s=timeout_s or default_timeout_s(),
        env=env,
        server_env=servers,
    )
    outcome = run_isolated(**call) if on_progress is None else _wait(IsolatedCall(**call), on_progress)
    if not outcome.ok:
        raise CheckError(
            "probe",
            f"the probe failed: {describe(outcome)}",
            f"raise the time limit (--timeout, ${TIMEOUT_ENV}) or probe fewer prompts/samples"
            if outcome.kind == "timeout"
            else "fix the reward or tool code it names (the checks' dry run calls it on fewer rows)",
        )
    report = build_report(sdict, processor.reward.names, outcome.value, pass_threshold, cfg.get("diagnostics"))
    report.update(
        key=key,
        inputs=inputs,
        rows=rows,
        sample_rows=outcome.value["samples"],
        created=time.time(),
        wall_seconds=round(time.time() - t0, 3),
        path=str(probe_path(runs_dir, key)),
        memory=_memory(processor),
    )
    write_stored(runs_dir, report)
    return ProbeResult(report, reused=False)


def _wait(call: IsolatedCall, on_progress: Callable[[str | None], None]) -> Outcome:
    """``call.wait()``, telling ``on_progress`` each new thing the call says it is doing."""
    said = None
    try:
        while not call.done:
            ready, _, _ = select.select(call.fds(), [], [], max(0.0, min(0.2, call.deadline - time.monotonic())))
            call.pump(ready)
            if call.doing != said:
                said = call.doing
                on_progress(said)
    except BaseException:
        call.stop("cancelled", "interrupted")
        call.finish()
        raise
    return call.finish()


def _memory(processor: Any) -> dict | None:
    """The memory estimate the config check already made (trl), as the report shows it beside the forecast."""
    for r in getattr(processor, "check_results", []) or []:
        if r.module == "config" and isinstance(r.details, dict) and r.details.get("memory"):
            return r.details["memory"]
    return None
