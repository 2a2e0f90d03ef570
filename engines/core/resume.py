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
checkpoint's step had taken, so no prompt of an epoch is seen twice or skipped (engines/trl/processor.py); ms-swift
takes the same argument; verl's run gets ``trainer.resume_mode: resume_path`` and ``trainer.resume_from_path`` (its
``global_step_<N>`` folder, complete once verl wrote its ``data.pt``, the dataloader's position, after the shards),
and its ``trainer.total_training_steps`` when ``max_steps`` was raised (engines/verl/derive.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from ..fit.model_folder import shape_mismatch
from ..results.check_result import CheckError
from ..runs.lifecycle import effective_status
from ..runs.no_links import open_no_link
from ..runs.rundir import (
    FAILED,
    FINISHED,
    METRICS_FILE,
    QUEUED,
    SAMPLES_FILE,
    SPEC_FILE,
    STATUS_FILE,
    STOP_FILE,
    STOPPED,
    RunDir,
    atomic_write_text,
)

#: the states a run resumes from (a queued, running or stopping run is still someone's)
RESUMABLE = (STOPPED, FAILED, FINISHED)
#: the engines whose runs resume: TRL's and ms-swift's trainers take ``resume_from_checkpoint``, verl its own
#: ``trainer.resume_from_path`` (the verl engine maps the one to the other)
RESUMES = ("trl", "swift", "verl")
#: where an attempt's rows after its resumed checkpoint are kept
ATTEMPTS_DIR = "attempts"
LATEST, BEST = "latest", "best"
#: a checkpoint is complete once its trainer wrote this last: Transformers' (trl, ms-swift) ``trainer_state.json``,
#: verl's ``data.pt`` (the dataloader's state, saved after the actor's and the critic's shards)
COMPLETE_MARKERS = ("trainer_state.json", "data.pt")
#: verl names its checkpoints by their step (and takes the step from the name when it resumes)
VERL_STEP_RE = re.compile(r"^global_step_(\d+)$")
#: the model a verl checkpoint was trained from (the actor's Hugging Face config, saved with its shards)
VERL_MODEL_CONFIG = ("actor", "huggingface", "config.json")


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
    with _put_back_if_refused(run):
        _mark_resumed(run, spec, folder, step, attempt, total, state, cause)
    return {"run_id": run.run_id, "checkpoint": folder.name, "step": step, "attempt": attempt, "max_steps": total}


@contextlib.contextmanager
def _put_back_if_refused(run: RunDir):
    """A write the run's folder refuses (left read-only, a full disk, a file made immutable) is a CheckError saying
    which, with run.yaml and status.json put back as they were (rows set aside stay whole in ``attempts/``)."""
    saved = {name: _raw(run.path / name) for name in (SPEC_FILE, STATUS_FILE)}
    try:
        yield
    except OSError as e:
        for name, text in saved.items():
            if text is not None:
                try:
                    atomic_write_text(run.path / name, text)
                except OSError:
                    pass  # refused as the first write was: it is as it was
        raise CheckError(
            "run",
            f"run {run.run_id} cannot be resumed: its folder refuses writes ({type(e).__name__}: {e})",
            f"make {run.path} writable (and free some space), then resume again",
        ) from e


def _raw(path: Path) -> str | None:
    try:
        with open_no_link(path, text=True) as f:
            return f.read()
    except OSError:
        return None


def _mark_resumed(run: RunDir, spec: dict, folder: Path, step: int, attempt: int, total: int, state, cause) -> None:
    """The writes of a resume: run.yaml, the stop request gone, the status, the later rows set aside, the event."""
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
    folder = _checkpoint(run, checkpoint, engine)
    step = _step_of(folder)
    _same_model(spec, folder)
    config = spec.get("config") or {}
    # verl's end is no key of the studio's: the step count the run's check derived (its epochs or total steps)
    end = status.get("total_steps") if engine == "verl" else config.get("max_steps")
    total = int(max_steps if max_steps is not None else end or 0)
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
        run = RunDir(run_path)
        try:
            config["resume_from_checkpoint"] = str(run.checkpoint_named(resume["checkpoint"]))
        except ValueError:
            left = ", ".join(p.name for p in run.checkpoints() if _complete(p)) or "none"
            raise CheckError(
                "checkpoint",
                f"{resume['checkpoint']}, the checkpoint run {run.run_id} resumes from, is gone (deleted after the "
                "resume was asked)",
                f"resume it again from another (its complete checkpoints: {left}): aworld-train resume {run.path} "
                "--checkpoint NAME",
            ) from None
        if resume.get("max_steps"):
            config["max_steps"] = int(resume["max_steps"])
    return config


def _complete(folder: Path) -> bool:
    return any((folder / marker).is_file() for marker in COMPLETE_MARKERS)


def _checkpoint(run: RunDir, name: str, engine: str = "trl") -> Path:
    found = [p for p in run.checkpoints() if _complete(p)]
    if not found:
        every = "save_freq (trainer.save_freq; verl saves none by default)" if engine == "verl" else "save_steps"
        raise CheckError(
            "checkpoint",
            f"run {run.run_id} has no complete checkpoint to resume from",
            f"train it again from the start (aworld-train rerun {run.path}); {every} sets how often a run saves one",
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
                f"incomplete (no {'data.pt' if engine == 'verl' else 'trainer_state.json'}: its save was cut short)"
                if partial
                else "not one of its checkpoints"
            ),
            f"resume from one of: {', '.join(p.name for p in found)}",
        )
    return match[0]


def _step_of(folder: Path) -> int:
    verl = VERL_STEP_RE.match(folder.name)
    if verl and not (folder / "trainer_state.json").is_file():
        return int(verl.group(1))  # as verl itself reads it
    try:
        return int(json.loads((folder / "trainer_state.json").read_text(encoding="utf-8"))["global_step"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CheckError(
            "checkpoint", f"{folder.name}'s trainer_state.json cannot be read ({e})", "resume from another checkpoint"
        ) from e


def _same_model(spec: dict[str, Any], folder: Path) -> None:
    """A checkpoint loads only into the model it was trained from: one whose saved config says another shape (the
    run's model changed in its run.yaml, or replaced on disk) is refused, naming what differs."""
    model = (spec.get("agent") or {}).get("model") if isinstance(spec.get("agent"), dict) else None
    saved = folder.joinpath(*VERL_MODEL_CONFIG)
    if not saved.is_file():  # trl's and ms-swift's checkpoints: the model's config.json at the top (a full model)
        saved = folder / "config.json"
    differ = shape_mismatch(saved, model)
    if differ:
        raise CheckError(
            "checkpoint",
            f"{folder.name} was trained from another model than the run's {model} ({differ})",
            "a run resumes with the model it trained; train the other model as a new run (aworld-train rerun, or "
            "a new train)",
        )


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
