"""``summary.json`` from the Optuna study (its one source): every trial with its run, params, value and
state, and the best complete trial. Optuna's best trial is the best of the *complete* trials (a pruned
trial's value is its last evaluation before it stopped, and is listed but never best)."""

from __future__ import annotations

import warnings
from typing import Any

from .spec import SweepSpec
from .sweep_dir import COMPLETE, FAILED_TRIAL, INTERRUPTED, PRUNED, RUNNING_TRIAL, SweepDir


def trial_state(t: Any) -> str:
    from optuna.trial import TrialState

    if t.state == TrialState.FAIL and t.user_attrs.get("interrupted"):
        return INTERRUPTED
    return {
        TrialState.COMPLETE: COMPLETE,
        TrialState.PRUNED: PRUNED,
        TrialState.FAIL: FAILED_TRIAL,
        TrialState.RUNNING: RUNNING_TRIAL,
    }.get(t.state, t.state.name.lower())


def trial_row(t: Any) -> dict[str, Any]:
    value = t.value if t.values else None
    if value is None and t.intermediate_values:
        value = t.intermediate_values[max(t.intermediate_values)]
    row = {
        "number": t.number,
        "run_id": t.user_attrs.get("run_id"),
        "params": dict(t.params),
        "value": value,
        "state": trial_state(t),
    }
    if t.user_attrs.get("error"):
        row["error"] = t.user_attrs["error"]
    if t.user_attrs.get("pruned_at") is not None:
        row["pruned_at"] = t.user_attrs["pruned_at"]
    if t.user_attrs.get("resumes_trial") is not None:  # its run is the failed trial's, resumed (sweeps/driver.py)
        row["resumes_trial"] = t.user_attrs["resumes_trial"]
    return row


def summarize_study(study: Any, spec: SweepSpec) -> dict[str, Any]:
    from optuna.trial import TrialState

    trials = [t for t in study.get_trials(deepcopy=False) if t.state != TrialState.WAITING]
    best = None
    if any(t.state == TrialState.COMPLETE for t in trials):
        b = study.best_trial
        best = {"number": b.number, "run_id": b.user_attrs.get("run_id"), "params": dict(b.params), "value": b.value}
    return {
        "objective": {"metric": spec.metric, "direction": spec.direction},
        "trials_planned": spec.trials,
        "trials": [trial_row(t) for t in trials],
        "best": best,
    }


def write_summary(sweep: SweepDir, study: Any, spec: SweepSpec) -> dict[str, Any]:
    summary = summarize_study(study, spec)
    sweep.write_summary(summary)
    return summary


def importances(study: Any) -> dict[str, float] | None:
    """Optuna's parameter importances once there are 4 complete trials; None before. Optuna's PED-ANOVA
    evaluator: its default (fANOVA) needs scikit-learn, which this project does not otherwise need."""
    import optuna
    from optuna.trial import TrialState

    if sum(1 for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE) < 4:
        return None
    try:
        with warnings.catch_warnings():  # "experimental" in Optuna 4: pinned to <5 in requirements.txt
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            evaluator = optuna.importance.PedAnovaImportanceEvaluator()
        return {k: float(v) for k, v in optuna.importance.get_param_importances(study, evaluator=evaluator).items()}
    except (RuntimeError, ValueError, ZeroDivisionError):  # e.g. every trial had the same params
        return None
