"""The sweep driver: ``python -m engines sweep-run <sweep_dir>``, a process of its own (like a run), so
closing the studio or restarting it never stops a sweep.

It asks Optuna for a trial (``study.ask``), prepares it as an ordinary run (``prepare_run`` in an
isolated child: the trial's run dir with its ``run.yaml``, named "<sweep> · trial k") and starts it
detached through :func:`engines.runs.lifecycle.spawn_run` (so it queues for the machine's training slot as any run
does). While the trial trains the driver reads the run's ``metrics.jsonl``: each value of the objective
metric is reported to the trial (``trial.report``); when Optuna's pruner says so (``should_prune``) the
driver writes the run's STOP file with reason ``pruned`` and the run stops at its next step boundary.
When the run ends the driver tells the study (``study.tell``: complete with the metric's last value,
pruned, or failed) and rewrites ``summary.json``.

Everything it knows lives in the sweep directory and the study, so a driver killed at any moment is
resumed by starting it again: a trial whose run is still training is followed again, one whose run ended
is told, one whose run was lost is marked ``interrupted`` and its params are queued to run again.

A trial whose run failed (killed, out of memory, a crashed reward) and was then resumed (``aworld-train resume``,
the studio's Resume: the same run, a later attempt) is followed again: Optuna cannot reopen a told trial, so the
driver adds a trial with the same params that follows the same run (``resumes_trial``: the failed one's number,
which then no longer counts among the sweep's trials), reports the run's values from its first step and tells the
end. The running driver looks for such runs every few seconds; a sweep that had ended picks them up when it is
resumed (``sweep-resume``). Runs of complete, pruned or interrupted trials are not followed when resumed: their
trial's result stands (an interrupted trial's params are re-run from the start on resume).
"""

from __future__ import annotations

import logging
import math
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.modules import Modules
from ..runs.rundir import FAILED, FINISHED, METRICS_FILE, RUNNING, STOPPED, STOPPING, TERMINAL_STATES, RunDir
from ..runs.json_lines import JsonlTail
from ..runs.causes import Cause
from ..runs.launcher import Launcher
from ..runs.lifecycle import effective_status, enforce_stop_timeout, spawn_run
from .spec import SweepSpec, cluster_of, parse_sweep
from .summary import write_summary
from .sweep_dir import SweepDir

logger = logging.getLogger("aworld.trainer.sweep")
POLL_S = 0.5
HEARTBEAT_S = 5.0
#: a trial run asked to stop (sweep stopped) is killed after this long without stopping
STOP_KILL_AFTER_S = 120.0
PREPARE_TIMEOUT_S = 900.0
SWEEP_STOP_REASON = "sweep stopped"
PRUNED_REASON = "pruned"
#: at most about this many values of the objective reported to Optuna per trial: each ``trial.report`` is a
#: committed SQLite transaction (~7 ms of the driver's CPU), taken from the training beside it on a CPU machine
REPORTS_PER_TRIAL = 25


def report_every(config: dict[str, Any]) -> int:
    """The sweep's report grid: a trial reports the first value at or after each multiple of this step.

    One grid for every trial of the sweep (from the base config's ``max_steps``), so Optuna's median pruner
    compares trials at the same steps; 1 (every value) where the run's length is not a number of steps."""
    steps = config.get("max_steps")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0:
        return 1
    return max(1, steps // REPORTS_PER_TRIAL)


def next_report(step: int, every: int) -> int:
    """After a report at ``step``: the step from which the next value is reported (the next multiple)."""
    return (step // every + 1) * every


def _trial_name(sweep: SweepDir, number: int) -> str:
    return f"{sweep.name} · trial {number}"


def _prepare_trial(modules: Modules, runs_dir: str, name: str, note: str) -> str:
    """In the isolated child: the trial's run directory (its checks run here, once)."""
    from ..core.prepare import prepare_run

    return str(prepare_run(modules, runs_dir=runs_dir, name=name, note=note).path)


@dataclass
class Follower:
    """One trial being trained: its Optuna trial, its run, what of its metrics was read."""

    trial: Any  # optuna.trial.Trial
    run: RunDir
    tail: JsonlTail
    reported: set[int] = field(default_factory=set)
    due: int = 0  # the next value at or after this step is reported (the sweep's report grid)
    last_value: float | None = None
    prune_asked: bool = False
    stop_asked_at: float | None = None
    pid: int | None = None  # the run's process when this driver started it (reaped when it ends)


class SweepDriver:
    def __init__(self, sweep_dir: str | os.PathLike):
        import optuna

        self.sweep = SweepDir(sweep_dir)
        doc = self.sweep.read_sweep()
        if not doc:
            raise ValueError(f"{self.sweep.path} has no sweep.yaml — prepare the sweep first")
        self.base_config: dict[str, Any] = dict(doc.get("base_config") or {})
        self.modules = Modules(**doc["base"], config=self.base_config)  # sweep.yaml keeps the config apart
        self.spec: SweepSpec = parse_sweep(doc["sweep"], gpus=None, cluster=cluster_of(self.base_config))
        self.report_every = report_every(self.base_config)
        storage = self.storage = optuna.storages.RDBStorage(self.sweep.storage_url)
        self.study_id = storage.get_study_id_from_name(self.sweep.study_name)
        so_far = len(storage.get_all_trials(self.study_id, deepcopy=False))
        self.study = optuna.load_study(
            study_name=self.sweep.study_name,
            storage=storage,
            sampler=self.spec.make_sampler(so_far),
            pruner=self.spec.make_pruner(),
        )
        self.active: dict[int, Follower] = {}
        self.gpus: dict[int, str] = {}  # trial number → the GPU it was given (parallel > 1)
        self._last_heartbeat = 0.0
        self._last_resume_scan = 0.0
        self._ended_pids: set[int] = set()  # trial runs this driver started that ended: reaped when they exit
        self.launcher = Launcher()  # trial runs fork from a preloaded process (engines.runs.launcher)

    # -- the study ----------------------------------------------------------------------------
    def _trial(self, number: int):
        import optuna

        frozen = self.study.get_trials(deepcopy=False)[number]
        return optuna.trial.Trial(self.study, frozen._trial_id)

    def counted(self) -> int:
        """Trials that used up one of ``trials``: complete, pruned, failed (not an interrupted one)."""
        from optuna.trial import TrialState

        trials = self.study.get_trials(deepcopy=False)
        resumed = superseded(trials)
        return sum(
            1
            for t in trials
            if t.state in (TrialState.COMPLETE, TrialState.PRUNED)
            or t.state == TrialState.FAIL
            and not t.user_attrs.get("interrupted")
            and t.number not in resumed
        )

    def _summary(self) -> None:
        write_summary(self.sweep, self.study, self.spec)

    # -- starting trials ------------------------------------------------------------------------
    def _free_gpu(self) -> str | None:
        if self.spec.parallel <= 1 or cluster_of(self.base_config):  # a cluster's trials: Ray gives the GPUs
            return None
        listed = os.environ.get("CUDA_VISIBLE_DEVICES")
        gpus = [g.strip() for g in listed.split(",")] if listed else [str(i) for i in range(self.spec.parallel)]
        used = set(self.gpus.values())
        return next((g for g in gpus if g not in used), None)

    def start_trial(self) -> None:
        from ..isolation.sandbox import describe, run_isolated
        from ..isolation.user_env import user_code_envs

        trial = self.study.ask(fixed_distributions=dict(self.spec.params))
        params = dict(trial.params)
        name = _trial_name(self.sweep, trial.number)
        note = f"sweep {self.sweep.run_id}, trial {trial.number}: " + ", ".join(f"{k}={v}" for k, v in params.items())
        self.sweep.event("trial_preparing", trial=trial.number, params=params)
        env, servers = user_code_envs(self.modules.agent, self.modules.reward_func, self.base_config)
        outcome = run_isolated(
            _prepare_trial,
            {
                "modules": self.modules.replace(config={**self.base_config, **params}),
                "runs_dir": str(self.sweep.runs_dir),
                "name": name,
                "note": note,
            },
            timeout_s=PREPARE_TIMEOUT_S,
            env=env,
            server_env=servers,
            writable=[self.sweep.runs_dir],
        )
        if not outcome.ok:
            message = describe(outcome)
            trial.set_user_attr("error", message)
            self.study.tell(trial, state=_state("FAIL"))
            self.sweep.event("trial_ended", trial=trial.number, state="failed", error=message)
            logger.error("trial %s could not be prepared: %s", trial.number, message)
            self._summary()
            return
        run = RunDir(outcome.value)
        trial.set_user_attr("run_id", run.run_id)
        trial.set_user_attr("run_dir", str(run.path))
        run.write_status(sweep={"id": self.sweep.run_id, "trial": trial.number})
        gpu = self._free_gpu()
        env_extra = None
        if gpu is not None:
            spec = run.read_spec()
            spec["machine_slot"] = False  # one GPU each, side by side: not the one-at-a-time slot
            run.write_spec(spec)
            env_extra = {"CUDA_VISIBLE_DEVICES": gpu}
            self.gpus[trial.number] = gpu
        pid = spawn_run(run.path, env=env_extra, launcher=self.launcher)
        self.active[trial.number] = Follower(trial, run, JsonlTail(run.file(METRICS_FILE)), pid=pid)
        self.sweep.event("trial_started", trial=trial.number, run_id=run.run_id, params=params)
        logger.info("trial %s: run %s with %s", trial.number, run.run_id, params)
        self._summary()

    # -- following trials ------------------------------------------------------------------------
    def follow(self, f: Follower) -> bool:
        """Read the trial's new metrics, report them, prune when told; True when its run has ended."""
        for row in f.tail.read_new():
            value = row.get(self.spec.metric)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                continue
            f.last_value = float(value)
            step = int(row.get("step") or 0)
            if step in f.reported or step < f.due:
                continue
            f.trial.report(f.last_value, step)
            f.reported.add(step)
            f.due = next_report(step, self.report_every)
            if not f.prune_asked and self.spec.pruner != "none" and f.trial.should_prune():
                f.prune_asked = True
                f.trial.set_user_attr("pruned_at", step)
                f.run.request_stop(PRUNED_REASON)
                self.sweep.event(
                    "trial_pruned", trial=f.trial.number, run_id=f.run.run_id, step=step, value=f.last_value
                )
                logger.info(
                    "trial %s pruned at step %s (%s = %s)", f.trial.number, step, self.spec.metric, f.last_value
                )
        status = effective_status(f.run)
        if status.get("state") in TERMINAL_STATES:
            for row in f.tail.read_new():  # the last lines written before the end
                value = row.get(self.spec.metric)
                if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                    f.last_value = float(value)
            self.finish(f, status)
            return True
        if f.stop_asked_at is not None:
            enforce_stop_timeout(f.run.path, STOP_KILL_AFTER_S)
        return False

    def finish(self, f: Follower, status: dict[str, Any]) -> None:
        state, number = status.get("state"), f.trial.number
        self.gpus.pop(number, None)
        if f.pid:
            self._ended_pids.add(f.pid)
        reason = f.run.stop_reason()
        f.trial.set_user_attr("attempt", int(status.get("attempt") or 1))  # a later one: the run was resumed
        if state == FINISHED and f.last_value is not None:
            self.study.tell(f.trial, f.last_value)
            outcome = "complete"
        elif state == STOPPED and (f.prune_asked or reason == PRUNED_REASON):
            self.study.tell(f.trial, state=_state("PRUNED"))
            outcome = "pruned"
        elif reason == SWEEP_STOP_REASON:
            self._interrupt(f.trial, f"the sweep was stopped while trial {number} trained")
            outcome = "interrupted"
        else:
            if state == FINISHED:
                error = (
                    f"the run finished without logging `{self.spec.metric}` — pick a metric the run writes to "
                    f"metrics.jsonl (eval/reward needs a test set; loss, reward are logged every step)"
                )
            else:
                error = status.get("error") or f"the run ended {state}" + (f" ({reason})" if reason else "")
            f.trial.set_user_attr("error", error)
            self.study.tell(f.trial, state=_state("FAIL"))
            outcome = "failed"
        self.sweep.event("trial_ended", trial=number, run_id=f.run.run_id, state=outcome, value=f.last_value)
        logger.info("trial %s %s (%s = %s)", number, outcome, self.spec.metric, f.last_value)
        self._summary()

    def _interrupt(self, trial, why: str) -> None:
        """A trial cut short by the sweep's stop or the driver's death: failed here, its params queued again."""
        trial.set_user_attr("interrupted", True)
        trial.set_user_attr("error", why)
        self.study.tell(trial, state=_state("FAIL"))
        self.study.enqueue_trial(dict(trial.params), user_attrs={"rerun_of": trial.number})

    # -- resumed trial runs -----------------------------------------------------------------------
    def adopt_resumed(self) -> None:
        """Failed trials whose run was resumed since: a trial with the same params follows the run again."""
        import datetime

        from optuna.trial import FrozenTrial, TrialState

        for old, run in resumed_runs(self.study.get_trials(deepcopy=False)):
            template = FrozenTrial(
                number=-1,
                state=TrialState.RUNNING,
                value=None,
                datetime_start=datetime.datetime.now(),
                datetime_complete=None,
                params=dict(old.params),
                distributions=dict(old.distributions),
                user_attrs={"run_id": run.run_id, "run_dir": str(run.path), "resumes_trial": old.number},
                system_attrs={},
                intermediate_values={},
                trial_id=-1,
            )
            trial = self._trial_by_id(self.storage.create_new_trial(self.study_id, template_trial=template))
            run.write_status(sweep={"id": self.sweep.run_id, "trial": trial.number})
            self.active[trial.number] = Follower(trial, run, JsonlTail(run.file(METRICS_FILE)))
            attempt = effective_status(run).get("attempt")
            self.sweep.event(
                "trial_resumed", trial=trial.number, resumes=old.number, run_id=run.run_id, attempt=attempt
            )
            logger.info(
                "trial %s: run %s of trial %s resumed (attempt %s)", trial.number, run.run_id, old.number, attempt
            )
        self._summary()

    def _trial_by_id(self, trial_id: int):
        import optuna

        return optuna.trial.Trial(self.study, trial_id)

    # -- resuming ---------------------------------------------------------------------------------
    def reattach(self) -> None:
        """Trials a previous driver left running: follow them again, tell the ended ones, re-queue the lost."""
        from optuna.trial import TrialState

        for frozen in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            trial = self._trial(frozen.number)
            run_dir = frozen.user_attrs.get("run_dir")
            if not run_dir or not Path(run_dir).is_dir():
                self._interrupt(trial, "the sweep driver stopped before this trial's run was prepared")
                self.sweep.event("trial_ended", trial=frozen.number, state="interrupted")
                continue
            run = RunDir(run_dir)
            f = Follower(
                trial,
                run,
                JsonlTail(run.file(METRICS_FILE)),
                reported=set(frozen.intermediate_values),
                due=next_report(max(frozen.intermediate_values), self.report_every)
                if frozen.intermediate_values
                else 0,
                prune_asked=bool(frozen.user_attrs.get("pruned_at") is not None),
            )
            state = effective_status(run).get("state")
            if state == FAILED and effective_status(run).get("lost"):
                self._interrupt(trial, "the trial's run was lost while the sweep driver was down")
                self.sweep.event("trial_ended", trial=frozen.number, run_id=run.run_id, state="interrupted")
                continue
            self.sweep.event("trial_reattached", trial=frozen.number, run_id=run.run_id, state=state)
            self.active[frozen.number] = f
        self.adopt_resumed()

    # -- the loop ---------------------------------------------------------------------------------
    def _reap(self) -> None:
        """Collect the exit status of trial runs this driver started (no zombies while the sweep goes on)."""
        for pid in list(self._ended_pids):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self._ended_pids.discard(pid)

    def _heartbeat(self) -> None:
        if time.time() - self._last_heartbeat >= HEARTBEAT_S:
            self.sweep.write_status(durable=False, trials_done=self.counted(), active=sorted(self.active))
            self._last_heartbeat = time.time()

    def _stop_trials(self) -> None:
        for f in self.active.values():
            if f.stop_asked_at is None:
                f.run.request_stop(SWEEP_STOP_REASON)
                f.stop_asked_at = time.time()

    def run(self) -> str:
        sweep = self.sweep
        sweep.mark_process(RUNNING, started=time.time(), trials=self.spec.trials)
        sweep.event("started", pid=os.getpid())
        restore = _stop_on_sigterm(sweep)
        self.launcher.start()  # preloads beside the driver's own preload: trials fork from it
        try:
            from ..core.isolated_checks import _preload

            _preload(self.modules.train_engine_name)  # once here: each trial's prepare forks with it
            self.reattach()
            stopping = False
            while True:
                if sweep.stop_requested() and not stopping:
                    stopping = True
                    sweep.write_status(state=STOPPING)
                    sweep.event("stop_requested", active=sorted(self.active))
                    self._stop_trials()
                if not stopping and time.time() - self._last_resume_scan >= HEARTBEAT_S:
                    self._last_resume_scan = time.time()
                    self.adopt_resumed()
                for number in [n for n, f in self.active.items() if self.follow(f)]:
                    del self.active[number]
                if stopping and not self.active:
                    break
                while (
                    not stopping
                    and len(self.active) < self.spec.parallel
                    and self.counted() + len(self.active) < self.spec.trials
                    and not sweep.stop_requested()
                ):
                    self.start_trial()
                if not stopping and not self.active and self.counted() >= self.spec.trials:
                    break
                self._heartbeat()
                self._reap()
                time.sleep(POLL_S)
            final = STOPPED if stopping else FINISHED
            self._summary()
            sweep.event(final, trials_done=self.counted())
            sweep.write_status(state=final, ended=time.time(), trials_done=self.counted(), active=[])
            return final
        except BaseException as e:
            sweep.event("failed", message=f"{type(e).__name__}: {e}")
            sweep.write_status(state=FAILED, error=f"{type(e).__name__}: {e}", cause=Cause.UNKNOWN, ended=time.time())
            raise
        finally:
            self.launcher.close()
            restore()


def superseded(trials: list) -> set[int]:
    """The failed trials a later trial took over when their run was resumed (they no longer count)."""
    return {t.user_attrs["resumes_trial"] for t in trials if isinstance(t.user_attrs.get("resumes_trial"), int)}


def resumed_runs(trials: list) -> list[tuple[Any, RunDir]]:
    """(failed trial, its run) for each failed trial whose run was resumed after it was told — a later attempt than
    the one that failed — and that no trial follows yet. Interrupted trials are not among them (re-run instead)."""
    from optuna.trial import TrialState

    taken = superseded(trials)
    out = []
    for t in trials:
        run_dir = t.user_attrs.get("run_dir")
        if t.state != TrialState.FAIL or t.user_attrs.get("interrupted") or t.number in taken or not run_dir:
            continue
        run = RunDir(run_dir)
        if run.path.is_dir() and int(effective_status(run).get("attempt") or 1) > int(t.user_attrs.get("attempt") or 1):
            out.append((t, run))
    return out


def _state(name: str):
    from optuna.trial import TrialState

    return getattr(TrialState, name)


def _stop_on_sigterm(sweep: SweepDir):
    """SIGTERM → the sweep's stop request: its trials stop at a step boundary and are re-run on resume."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_term(signum, frame):
        sweep.request_stop("SIGTERM")

    previous = signal.signal(signal.SIGTERM, on_term)
    return lambda: signal.signal(signal.SIGTERM, previous)


def run_sweep(sweep_dir: str | os.PathLike) -> str:
    """Drive a prepared sweep in this process until its trials are done or it is stopped."""
    return SweepDriver(sweep_dir).run()
