"""``sweep.yaml``: a search over engine settings, in Optuna's terms, parsed and checked.

    trials: 6                    # trials to run (a grid: at most its size; default its size)
    sampler: tpe                 # grid | random | tpe                                  (default tpe)
    pruner: median               # median | none, or {type: median, n_startup_trials: 2, n_warmup_steps: 1}
    objective: {metric: eval/reward, direction: maximize}    # any metric of metrics.jsonl; min or max
    params:
      learning_rate: {low: 1.0e-4, high: 1.0e-2, log: true}  # a range (Optuna's FloatDistribution)
      num_generations: {low: 4, high: 8, step: 4}            # integers → IntDistribution
      beta: [0.0, 0.04]                                      # a list: a categorical choice
    parallel: 1                  # trials at once: one per visible GPU; 1 on a CPU machine
    seed: 0                      # the sampler's seed (optional)

Every param becomes an ``optuna.distributions`` object, so Optuna's own rules (``low <= high``, no ``log``
with ``step``, ``low > 0`` with ``log``) apply; every param's values are then checked against the engine's
own config checks (:mod:`engines.sweeps.check`) before anything runs. Errors are :class:`CheckError` of
module ``sweep`` naming the key and the fix.
"""

from __future__ import annotations

import inspect
import itertools
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..results.check_result import CheckError, did_you_mean
from ..runs.rundir import EVAL_REWARD
from ..files.yaml_input import load_user_file, load_yaml_text

SAMPLERS = ("grid", "random", "tpe")
PRUNERS = ("median", "none")
DIRECTIONS = ("maximize", "minimize")
KEYS = ("trials", "sampler", "pruner", "objective", "params", "parallel", "seed", "name")
RANGE_KEYS = ("low", "high", "log", "step")
#: our defaults of Optuna's MedianPruner: prune from the third trial on, never on the first evaluation
#: (step 0 scores the base model, the same for every trial)
MEDIAN_DEFAULTS = {"n_startup_trials": 2, "n_warmup_steps": 1}
#: the most combinations of range ends and choices checked against the engine (else each param alone)
MAX_CORNERS = 64


def _err(message: str, hint: str | None = None) -> CheckError:
    return CheckError("sweep", message, hint)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass
class SweepSpec:
    params: dict[str, Any]  # name → optuna distribution
    trials: int
    sampler: str = "tpe"
    pruner: str = "median"
    pruner_args: dict[str, Any] = field(default_factory=dict)
    metric: str = EVAL_REWARD
    direction: str = "maximize"
    parallel: int = 1
    seed: int | None = None
    name: str | None = None

    # -- Optuna objects ------------------------------------------------------------------------
    def grid(self) -> dict[str, list[Any]]:
        """Each param's grid values (a grid sampler's search space)."""
        return {name: grid_values(name, d) for name, d in self.params.items()}

    def make_sampler(self, trials_so_far: int = 0):
        """Optuna's sampler. A resumed sweep seeds it with ``seed + trials so far``: the same seed again would
        draw the first trials' params again (a seeded sampler's stream starts over in a new process)."""
        import optuna

        seed = None if self.seed is None else self.seed + trials_so_far
        if self.sampler == "grid":
            return _ask_tell_grid_sampler()(self.grid(), seed=seed)
        if self.sampler == "random":
            return optuna.samplers.RandomSampler(seed=seed)
        return optuna.samplers.TPESampler(seed=seed)

    def make_pruner(self):
        import optuna

        if self.pruner == "none":
            return optuna.pruners.NopPruner()
        return optuna.pruners.MedianPruner(**{**MEDIAN_DEFAULTS, **self.pruner_args})

    # -- values to check against the engine ------------------------------------------------------
    def corner_values(self) -> dict[str, list[Any]]:
        """Per param the values that bound it: a range's ends (its last grid value with a step), every choice."""
        from optuna.distributions import CategoricalDistribution

        out = {}
        for name, d in self.params.items():
            if isinstance(d, CategoricalDistribution):
                out[name] = list(d.choices)
            else:
                high = d.high if d.step is None else grid_values(name, d)[-1]
                out[name] = [d.low] if high == d.low else [d.low, high]
        return out

    def corner_configs(self) -> list[dict[str, Any]]:
        """Param settings to check: every combination of the corner values when there are at most
        :data:`MAX_CORNERS`, else each param's corner values alone."""
        corners = self.corner_values()
        names = list(corners)
        if math.prod(len(v) for v in corners.values()) <= MAX_CORNERS:
            return [dict(zip(names, combo)) for combo in itertools.product(*(corners[n] for n in names))]
        return [{n: v} for n in names for v in corners[n]]

    def to_dict(self) -> dict[str, Any]:
        from optuna.distributions import CategoricalDistribution

        params: dict[str, Any] = {}
        for name, d in self.params.items():
            if isinstance(d, CategoricalDistribution):
                params[name] = list(d.choices)
            else:
                params[name] = {"low": d.low, "high": d.high, "log": d.log, **({"step": d.step} if d.step else {})}
        pruner: Any = self.pruner if not self.pruner_args else {"type": self.pruner, **self.pruner_args}
        return {
            "name": self.name,
            "trials": self.trials,
            "sampler": self.sampler,
            "pruner": pruner,
            "objective": {"metric": self.metric, "direction": self.direction},
            "params": params,
            "parallel": self.parallel,
            "seed": self.seed,
        }


def _ask_tell_grid_sampler():
    """Optuna's GridSampler for ask-and-tell: after the last grid point is told, its ``after_trial`` calls
    ``study.stop()``, which raises outside ``study.optimize``; the driver stops by counting trials instead."""
    import optuna

    class AskTellGridSampler(optuna.samplers.GridSampler):
        def after_trial(self, study, trial, state, values) -> None:
            return None

    return AskTellGridSampler


def grid_values(name: str, d: Any) -> list[Any]:
    """The values of a distribution as a grid: a list's choices, a stepped range's points."""
    from optuna.distributions import CategoricalDistribution

    if isinstance(d, CategoricalDistribution):
        return list(d.choices)
    if d.step is None:
        raise _err(
            f"params.{name}: the grid sampler needs values to try, and a range without a step has infinitely many",
            f"give {name} a list (e.g. [{d.low}, {d.high}]) or a step, or use sampler: random / tpe",
        )
    n = int(round((d.high - d.low) / d.step)) + 1
    values = [d.low + i * d.step for i in range(n)]
    return [int(v) for v in values] if _is_int(d.low) else [round(v, 12) for v in values]


def _distribution(name: str, value: Any):
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if isinstance(value, list):
        if not value:
            raise _err(f"params.{name} is an empty list", f"give the values to try, e.g. {name}: [0.0, 0.04]")
        bad = [v for v in value if not (v is None or isinstance(v, (bool, int, float, str)))]
        if bad:
            raise _err(
                f"params.{name}: {bad[0]!r} is not a number, text, true/false or null",
                "a list holds plain values, one of which each trial uses",
            )
        if len(set(map(repr, value))) != len(value):
            raise _err(f"params.{name} lists a value twice", "give each value once")
        return CategoricalDistribution(value)
    if not isinstance(value, dict):
        raise _err(
            f"params.{name} must be a range {{low, high}} or a list of values, not {value!r}",
            f"e.g. {name}: {{low: 1.0e-4, high: 1.0e-2, log: true}} or {name}: [0.0, 0.04]",
        )
    unknown = [k for k in value if k not in RANGE_KEYS]
    if unknown:
        raise _err(
            f"params.{name}: unknown key '{unknown[0]}'{did_you_mean(str(unknown[0]), RANGE_KEYS)}",
            f"a range has {', '.join(RANGE_KEYS)}",
        )
    for key in ("low", "high"):
        if key not in value:
            raise _err(f"params.{name} has no `{key}`", "a range needs low and high, e.g. {low: 1.0e-4, high: 1.0e-2}")
        if not _is_number(value[key]):
            raise _err(
                f"params.{name}.{key} = {value[key]!r} is not a finite number",
                "write numbers like 0.0001 or 1.0e-4 (YAML reads 1e-4 without a dot as text)",
            )
    low, high, step, log = value["low"], value["high"], value.get("step"), value.get("log", False)
    if not isinstance(log, bool):
        raise _err(f"params.{name}.log = {log!r} must be true or false")
    if step is not None and not _is_number(step):
        raise _err(f"params.{name}.step = {step!r} is not a finite number")
    as_int = _is_int(low) and _is_int(high) and (step is None or _is_int(step))
    try:  # Optuna's own checks: low <= high, log needs low > 0, log and step exclude each other
        if as_int:
            return IntDistribution(low, high, log=log, step=step or 1)
        return FloatDistribution(float(low), float(high), log=log, step=None if step is None else float(step))
    except ValueError as e:
        raise _err(
            f"params.{name}: {e}", "Optuna's rules: low <= high; log needs low > 0; log and step cannot be combined"
        ) from None


def _objective(value: Any) -> tuple[str, str]:
    if value is None:
        return EVAL_REWARD, "maximize"
    if isinstance(value, str):
        return value, "maximize"
    if not isinstance(value, dict):
        raise _err(
            f"objective must be {{metric, direction}}, not {value!r}",
            "e.g. objective: {metric: eval/reward, direction: maximize}",
        )
    unknown = [k for k in value if k not in ("metric", "direction")]
    if unknown:
        raise _err(f"objective: unknown key '{unknown[0]}'", "objective has metric and direction")
    metric = value.get("metric") or EVAL_REWARD
    direction = str(value.get("direction") or "maximize").lower()
    if not isinstance(metric, str):
        raise _err(f"objective.metric = {metric!r} must be a metric name, e.g. eval/reward or loss")
    if direction not in DIRECTIONS:
        raise _err(
            f"objective.direction = {direction!r} is not maximize or minimize{did_you_mean(direction, DIRECTIONS)}"
        )
    return metric, direction


def _pruner(value: Any) -> tuple[str, dict[str, Any]]:
    if value is None or value is False:
        return ("none", {}) if value is False else ("median", {})
    args: dict[str, Any] = {}
    if isinstance(value, dict):
        args = dict(value)
        value = args.pop("type", "median")
    kind = str(value).lower()
    if kind not in PRUNERS:
        raise _err(
            f"pruner = {value!r} is not one of {', '.join(PRUNERS)}{did_you_mean(kind, PRUNERS)}",
            "pruner: median (Optuna's MedianPruner on the trial's evaluations) or none",
        )
    if kind == "none":
        if args:
            raise _err("pruner none takes no settings")
        return kind, {}
    import optuna

    allowed = [p for p in inspect.signature(optuna.pruners.MedianPruner).parameters]
    for key in args:
        if key not in allowed:
            raise _err(
                f"pruner: unknown setting '{key}' of Optuna's MedianPruner{did_you_mean(key, allowed)}",
                f"its settings: {', '.join(allowed)}",
            )
    try:
        optuna.pruners.MedianPruner(**{**MEDIAN_DEFAULTS, **args})
    except (ValueError, TypeError) as e:
        raise _err(f"pruner: {e}") from None
    return kind, args


def _count(value: Any, key: str, default: int | None, lo: int = 1) -> int | None:
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not _is_int(value) or value < lo:
        raise _err(f"{key} = {value!r} must be a whole number of at least {lo}")
    return value


def visible_gpus() -> int:
    """GPUs this machine can give trials, one each (``CUDA_VISIBLE_DEVICES`` when set, else CUDA's count)."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return len([d for d in listed.split(",") if d.strip() and d.strip() != "-1"])
    from ..fit.gpus import device_count

    return device_count()


def parse_sweep(source: Any, gpus: int | None = None, cluster: str | None = None) -> SweepSpec:
    """A :class:`SweepSpec` from a sweep.yaml path, YAML text or a dict. Raises CheckError (module ``sweep``).
    ``cluster``: the Ray cluster the trials are submitted to (the base config's ``ray_address``): ``parallel``
    trials are then jobs there, which the cluster schedules, not one per GPU of this machine."""
    if isinstance(source, SweepSpec):
        return source
    if isinstance(source, (str, os.PathLike)):
        text = str(source)
        if "\n" not in text and Path(text).expanduser().is_file():
            data = load_user_file(Path(text).expanduser(), module="sweep", role="sweep file")
        elif "\n" in text or ":" in text:
            data = load_yaml_text(text, module="sweep", where="the sweep text")
        else:
            raise _err(f"sweep file '{text}' does not exist", "give a sweep.yaml path")
    else:
        data = source
    if not isinstance(data, dict):
        raise _err(
            f"a sweep must be a mapping, not {type(data).__name__}",
            "e.g. {trials: 6, params: {learning_rate: {low: 1.0e-4, high: 1.0e-2, log: true}}}",
        )
    for key in data:
        if key not in KEYS:
            raise _err(f"unknown sweep key '{key}'{did_you_mean(str(key), KEYS)}", f"known keys: {', '.join(KEYS)}")
    raw_params = data.get("params")
    if not isinstance(raw_params, dict) or not raw_params:
        raise _err(
            "the sweep has no params",
            "name the settings to search, e.g. params: {learning_rate: "
            "{low: 1.0e-4, high: 1.0e-2, log: true}, beta: [0.0, 0.04]}",
        )
    params = {str(name): _distribution(str(name), value) for name, value in raw_params.items()}
    sampler = str(data.get("sampler") or "tpe").lower()
    if sampler not in SAMPLERS:
        raise _err(
            f"sampler = {data.get('sampler')!r} is not one of {', '.join(SAMPLERS)}{did_you_mean(sampler, SAMPLERS)}"
        )
    metric, direction = _objective(data.get("objective"))
    pruner, pruner_args = _pruner(data.get("pruner"))
    seed = data.get("seed")
    if seed is not None and not _is_int(seed):
        raise _err(f"seed = {seed!r} must be a whole number")
    parallel = _count(data.get("parallel"), "parallel", 1)
    if parallel > 1 and not cluster:
        have = visible_gpus() if gpus is None else gpus
        if parallel > have:
            raise _err(
                f"parallel = {parallel} needs {parallel} GPUs (one per trial) and {have} "
                f"{'is' if have == 1 else 'are'} visible",
                "use parallel: 1: trials then queue through the machine's training slot; or set ray_address in "
                "the config: trials are then Ray jobs on that cluster (docs/CLUSTER.md)",
            )
    spec = SweepSpec(
        params=params,
        trials=1,
        sampler=sampler,
        pruner=pruner,
        pruner_args=pruner_args,
        metric=metric,
        direction=direction,
        parallel=parallel,
        seed=seed,
        name=str(data["name"]).strip() if data.get("name") else None,
    )
    if sampler == "grid":
        size = math.prod(len(v) for v in spec.grid().values())
        spec.trials = _count(data.get("trials"), "trials", size)
        if spec.trials > size:
            raise _err(
                f"trials = {spec.trials} but the grid has only {size} point(s)",
                f"use trials: {size} (or fewer), or add values to the grid",
            )
    else:
        spec.trials = _count(data.get("trials"), "trials", None)
        if spec.trials is None:
            raise _err("the sweep does not say how many trials to run", "e.g. trials: 6")
    return spec


def cluster_of(base_config: Any) -> str | None:
    """The Ray cluster a sweep's trials are submitted to: its base config's ``ray_address``."""
    return base_config.get("ray_address") or None if isinstance(base_config, dict) else None
