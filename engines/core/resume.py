"""Resume: a stopped, failed (killed, out of memory, a crashed reward) or finished run continues from one of its
checkpoints, in the same run directory (issue 45).

:func:`prepare_resume` readies the run for its next attempt and changes nothing else:

* the checkpoint (``latest``, ``best`` or ``checkpoint-N``) must be complete (its ``trainer_state.json`` written
  last); its step is where the run goes on;
* the rows its last attempt logged after that step (``metrics.jsonl``, ``samples.jsonl``) are kept aside, under
  ``attempts/<n>/``, never mixed into the curves: the resumed segment joins the run's at the checkpoint;
* ``run.yaml`` gets a ``resume`` entry (the checkpoint, the attempt, ``max_steps`` when it was raised) and its
  ``resumes`` history; nothing else of the spec changes, so nothing that cannot change on resume (the model, the
  engine, LoRA's rank, ``num_generations``) can: what the run trains is its own spec;
* the stop request that ended the last attempt (``STOP``) is removed; ``status.json`` says ``queued`` with the
  attempt's number, and an event records the resume with what ended the attempt before.

Then the run is executed as any prepared run (``aworld-train run <dir>``, the studio's launcher, the queue and
the machine's slot alike). The engine resumes from the checkpoint: TRL's ``resume_from_checkpoint`` restores the
weights (or adapters), the optimizer, the scheduler, the RNG states and the step, and skips the batches the
checkpoint's step had taken, so no prompt of an epoch is seen twice or skipped (engines/trl/processor.py).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ..results.check_result import CheckError
from ..runs.lifecycle import effective_status
from ..runs.no_links import open_no_link
from ..runs.rundir import (
    FAILED,
    FINISHED,
    METRICS_FILE,
    QUEUED,
    SAMPLES_FILE,
    STOP_FILE,
    STOPPED,
    RunDir,
    atomic_write_text,
)

#: the states a run resumes from (a queued, running or stopping run is still someone's)
RESUMABLE = (STOPPED, FAILED, FINISHED)
#: the engines whose runs resume: TRL's and ms-swift's trainers take ``resume_from_checkpoint`` (verl's own resume,
#: a folder of its own checkpoint format, is not wired yet)
RESUMES = ("trl", "swift")
#: where an attempt's rows after its resumed checkpoint are kept
ATTEMPTS_DIR = "attempts"
LATEST, BEST = "latest", "best"


def prepare_resume(run_dir: str | Path, checkpoint: str = LATEST, max_steps: int | None = None) -> dict[str, Any]:
    """Ready ``run_dir`` to continue from ``checkpoint`` (see the module's text); returns what the resume is:
    ``run_id``, ``checkpoint``, ``step``, ``attempt``, ``max_steps``. CheckError (what is wrong, what to do) when it
    cannot resume; then nothing was changed."""
    run = RunDir(run_dir)
    spec, status, folder, step, total = _plan(run, checkpoint, max_steps)
    state = status.get("state")
    attempt = int(status.get("attempt") or 1) + 1
    cause = None if status.get("cause") is None else str(status.get("cause"))
    resume = {
        "checkpoint": folder.name,
        "step": step,
        "attempt": attempt,
        "after": str(state),
        "cause": cause,
        "time": time.time(),
    }
    if max_steps is not None:
        resume["max_steps"] = int(max_steps)
    spec["resume"] = {k: resume[k] for k in ("checkpoint", "attempt", "max_steps") if k in resume}
    spec["resumes"] = [*(spec.get("resumes") or []), resume]
    run.write_spec(spec)
    _forget_the_stop_request(run)
    # the attempt counted before the rows are set aside: a reader that finds them gone finds the new attempt too
    # (the studio's run cache then shows the file as the run's history, not as a file replaced behind its back)
    run.write_status(
        state=QUEUED,
        attempt=attempt,
        resumed_from=folder.name,
        step=step,
        cause=None,
        error=None,
        ended=None,
        lost=None,
        pid=None,
        **({"total_steps": total} if total else {}),
    )
    kept_aside = _keep_aside(run, step, attempt - 1)
    run.event(
        "resumed",
        checkpoint=folder.name,
        step=step,
        attempt=attempt,
        after=str(state),
        cause=cause,
        kept_aside=kept_aside,
        message=f"resumed from {folder.name} (step {step}), attempt {attempt}",
    )
    return {"run_id": run.run_id, "checkpoint": folder.name, "step": step, "attempt": attempt, "max_steps": total}


def resumable(run_dir: str | Path) -> bool:
    """Whether the run resumes from its latest checkpoint as it is (what the studio's Resume does)."""
    try:
        _plan(RunDir(run_dir), LATEST, None)
        return True
    except CheckError:
        return False


def _plan(run: RunDir, checkpoint: str, max_steps: int | None) -> tuple[dict, dict, Path, int, int]:
    """What a resume of ``run`` from ``checkpoint`` would be: (spec, status, checkpoint folder, its step, the end
    step); CheckError when it cannot resume. Reads only."""
    spec = run.read_spec()
    if not spec or not spec.get("engine"):
        raise CheckError("run", f"{run.path} has no run.yaml naming an engine", "give the directory of a run")
    engine = spec["engine"]
    if engine not in RESUMES:
        raise CheckError(
            "run",
            f"runs of the {engine} engine do not resume yet (only {', '.join(RESUMES)})",
            f"train it again from the start: aworld-train rerun {run.path}",
        )
    status = effective_status(run)
    state = status.get("state")
    if state not in RESUMABLE:
        raise CheckError(
            "run",
            f"run {run.run_id} is {state}: only a stopped, failed or finished run resumes",
            "stop it first (it resumes from its last checkpoint)" if state in ("running", "stopping") else None,
        )
    folder = _checkpoint(run, checkpoint)
    step = _step_of(folder)
    config = spec.get("config") or {}
    total = int(max_steps if max_steps is not None else config.get("max_steps") or 0)
    if max_steps is not None and max_steps <= step:
        raise CheckError(
            "run", f"--max-steps {max_steps} is not past {folder.name}'s step {step}", f"give more than {step}"
        )
    if total and step >= total:
        raise CheckError(
            "run",
            f"{folder.name} is at step {step}, the run's max_steps ({total}): there is nothing left to train",
            f"train it further with max_steps above {step} (aworld-train resume {run.path} --max-steps {2 * step})",
        )
    return spec, status, folder, step, total


def resume_config(spec: dict[str, Any], run_path: Path) -> dict[str, Any]:
    """The config a run's process trains with: its own, with ``resume_from_checkpoint`` and ``max_steps`` from
    run.yaml's ``resume`` entry (what :func:`prepare_resume` wrote) when it has one."""
    config = dict(spec.get("config") or {})
    resume = spec.get("resume") or {}
    if resume.get("checkpoint"):
        config["resume_from_checkpoint"] = str(RunDir(run_path).checkpoint_named(resume["checkpoint"]))
        if resume.get("max_steps"):
            config["max_steps"] = int(resume["max_steps"])
    return config


def _checkpoint(run: RunDir, name: str) -> Path:
    found = [p for p in run.checkpoints() if (p / "trainer_state.json").is_file()]
    if not found:
        raise CheckError(
            "checkpoint",
            f"run {run.run_id} has no complete checkpoint to resume from",
            f"train it again from the start (aworld-train rerun {run.path}); save_steps sets how often a run saves one",
        )
    if name in (None, "", LATEST):
        return found[-1]
    if name == BEST:
        best = (run.read_status().get("best_checkpoint") or {}).get("name")
        match = [p for p in found if p.name == best]
        if not match:
            raise CheckError(
                "checkpoint",
                f"run {run.run_id} has no best checkpoint on disk",
                f"resume from one of: {', '.join(p.name for p in found)}",
            )
        return match[0]
    match = [p for p in found if p.name == name]
    if not match:
        partial = any(p.name == name for p in run.checkpoints())
        raise CheckError(
            "checkpoint",
            f"{name} of run {run.run_id} is "
            + (
                "incomplete (no trainer_state.json: its save was cut short)"
                if partial
                else "not one of its checkpoints"
            ),
            f"resume from one of: {', '.join(p.name for p in found)}",
        )
    return match[0]


def _step_of(folder: Path) -> int:
    try:
        return int(json.loads((folder / "trainer_state.json").read_text(encoding="utf-8"))["global_step"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CheckError(
            "checkpoint", f"{folder.name}'s trainer_state.json cannot be read ({e})", "resume from another checkpoint"
        ) from e


def _forget_the_stop_request(run: RunDir) -> None:
    """The stop request that ended the last attempt is not the next one's (which would end at its first step)."""
    try:
        os.unlink(run.path / STOP_FILE)  # (a link is removed, never followed)
    except FileNotFoundError:
        pass
    except OSError as e:
        raise CheckError(
            "run", f"cannot remove the last attempt's stop request {STOP_FILE}: {e}", f"remove {run.path / STOP_FILE}"
        ) from e


def _keep_aside(run: RunDir, step: int, attempt: int) -> dict[str, int]:
    """Move the rows logged after ``step`` out of the run's row files, into ``attempts/<attempt>/``; returns how
    many of each. Written whole and then replaced: a reader sees the file before or after, never a mix."""
    moved: dict[str, int] = {}
    for name in (METRICS_FILE, SAMPLES_FILE):
        path = run.path / name
        try:
            with open_no_link(path, text=True) as f:  # user code can put a link there: never read through it
                lines = f.read().splitlines(keepends=True)
        except FileNotFoundError:
            continue
        except OSError as e:
            raise CheckError("run", f"{name} of run {run.run_id} cannot be read ({e})", "check the run's folder") from e
        keep, aside = [], []
        for line in lines:
            try:
                row_step = json.loads(line).get("step")
            except (ValueError, AttributeError):
                row_step = None
            (aside if isinstance(row_step, (int, float)) and row_step > step else keep).append(line)
        if not aside:
            continue
        where = run.path / ATTEMPTS_DIR / str(attempt)
        where.mkdir(parents=True, exist_ok=True)
        atomic_write_text(where / name, "".join(aside))
        atomic_write_text(path, "".join(keep))
        moved[name] = len(aside)
    return moved
