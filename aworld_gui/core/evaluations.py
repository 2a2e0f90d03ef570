"""A run's evaluations as the Evaluate tab lists them: its own (under its ``evals/``, launched with it selected), and
every other run's that scored one of its checkpoints (an evaluation is kept once, where it was launched; it showed
under that run only, issue 42)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from engines.inference.evaluation import list_evals, read_eval, read_metrics
from engines.runs.lifecycle import effective_status, list_run_dirs
from engines.runs.rundir import RunDir


def evaluations(runs_dir: Path, run_path: Callable[[str], Path], run_id: str) -> list[dict[str, Any]]:
    """A run's evaluations, newest first: id, state, models, their mean rewards. Another run's has the id
    ``<that run>/<eval id>`` and ``filed_under`` that run."""
    found = [(ev, ev.run_id, None) for ev in list_evals(run_path(run_id))]
    for other in list_run_dirs(runs_dir):
        if other.run_id != run_id:
            found += [
                (ev, f"{other.run_id}/{ev.run_id}", other.run_id)
                for ev in list_evals(other.path)
                if scored(ev.path, run_id)
            ]
    found.sort(key=lambda f: f[0].run_id, reverse=True)
    return [_entry(ev, eval_id, filed_under) for ev, eval_id, filed_under in found]


def eval_path(run_path: Callable[[str], Path], run_id: str, eval_id: str) -> Path:
    """The folder of one of :func:`evaluations`' entries: ``eval_id`` under the run's ``evals/``, or ``<other
    run>/<eval id>`` for another run's evaluation that scored one of this run's checkpoints."""
    owner, _sep, name = (eval_id or "").rpartition("/")
    evals = (run_path(owner or run_id) / "evals").resolve()
    p = (evals / name).resolve()
    if p.parent != evals or not (p / "eval.yaml").exists():
        raise ValueError(f"no evaluation '{eval_id}' in run {run_id}")
    if owner and not scored(p, run_id):
        raise ValueError(f"evaluation '{eval_id}' scored no checkpoint of run {run_id}")
    return p


def scored(eval_dir: Path, run_id: str) -> bool:
    """Whether the evaluation in ``eval_dir`` scored a checkpoint of ``run_id`` (its models name their run)."""
    return any(m.get("run_id") == run_id for m in read_eval(eval_dir).get("models") or [])


def _entry(ev: RunDir, eval_id: str, filed_under: str | None) -> dict[str, Any]:
    doc, status = read_eval(ev.path), effective_status(ev)
    return {
        "eval_id": eval_id,
        "filed_under": filed_under,
        "path": str(ev.path),
        "state": status.get("state"),
        "cause": status.get("cause"),
        "error": status.get("error"),
        "models": [m["label"] for m in doc.get("models", [])],
        "rewards": {k: v.get("reward") for k, v in read_metrics(ev.path).items()},
        "step": status.get("step"),
        "total": status.get("total_steps"),
        "dataset": Path(str((doc.get("dataset") or {}).get("path", ""))).name,
        "samples": doc.get("samples"),
        "temperature": doc.get("temperature"),
    }
