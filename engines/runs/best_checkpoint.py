"""The best checkpoint of a run and early stopping, by a held-out metric (default ``eval/reward``).

:class:`BestTracker` follows the evaluations a run logs and says when one improves on the best so far
and when ``early_stopping_patience`` evaluations in a row did not. An engine saves a checkpoint at an
improving evaluation and calls :func:`record_best`: status.json's ``best_checkpoint`` (``{name, step,
metric, value}``) and a ``best_checkpoint`` event; ``best`` then names it wherever a checkpoint is
named (:func:`engines.inference.checkpoints.resolve`). The trl engine keeps it from ``save_total_limit``'s
pruning through Transformers' own ``state.best_model_checkpoint``.

Config (run settings, :data:`engines.core.run_settings.RUN_FIELDS`): ``metric_for_best`` (TRL's
``metric_for_best_model`` and ``greater_is_better`` are read too), ``early_stopping_patience``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from .rundir import EVAL_REWARD, EVAL_TRAIN_REWARD, RunDir


def metric_name(name: str | None) -> str:
    """Our metric key for a name as TRL writes it (``eval_reward``, ``reward``) or as we do (``eval/reward``)."""
    if not name:
        return EVAL_REWARD
    if "/" in name:
        return name
    return "eval/" + (name[len("eval_") :] if name.startswith("eval_") else name)


@dataclass
class BestTracker:
    metric: str = EVAL_REWARD
    greater_is_better: bool = True
    patience: int | None = None
    best_value: float | None = None
    best_step: int | None = None
    evals_since_best: int = 0

    def value_of(self, values: dict[str, Any]) -> float | None:
        key = self.metric
        if key == EVAL_REWARD and key not in values:
            key = EVAL_TRAIN_REWARD  # no test set: the training rows' greedy score stands in
        v = values.get(key)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        return float(v) if ok else None

    def observe(self, step: int, values: dict[str, Any]) -> bool:
        """Take an evaluation's values; True when it is better than every one before."""
        v = self.value_of(values)
        if v is None:
            return False
        better = self.best_value is None or (v > self.best_value if self.greater_is_better else v < self.best_value)
        if better:
            self.best_value, self.best_step, self.evals_since_best = v, step, 0
        else:
            self.evals_since_best += 1
        return better

    @property
    def exhausted(self) -> bool:
        """``early_stopping_patience`` evaluations in a row without improvement."""
        return bool(self.patience) and self.evals_since_best >= int(self.patience)


def tracker_from_config(cfg: dict[str, Any], history: Iterable[dict[str, Any]] = ()) -> BestTracker:
    """The config's tracker; ``history`` (a resumed run's metrics rows up to its checkpoint) replayed into it, so the
    best so far and early stopping's count of evaluations without improvement go on as they were."""
    metric = metric_name(cfg.get("metric_for_best") or cfg.get("metric_for_best_model"))
    greater = cfg.get("greater_is_better")
    tracker = BestTracker(
        metric,
        bool(greater) if greater is not None else not metric.endswith("loss"),
        cfg.get("early_stopping_patience"),
    )
    rows = [r for r in history if isinstance(r.get("step"), int) and not isinstance(r.get("step"), bool)]
    for row in sorted(rows, key=lambda r: r["step"]):
        tracker.observe(row["step"], row)
    return tracker


def record_best(run: RunDir, name: str, step: int, metric: str, value: float) -> dict:
    best = {"name": name, "step": int(step), "metric": metric, "value": value}
    run.write_status(best_checkpoint=best)
    run.event("best_checkpoint", **best)
    return best
