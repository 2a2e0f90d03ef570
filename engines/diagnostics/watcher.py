"""The diagnoses while a run trains: :class:`Diagnoser` reads what the engine appended to metrics.jsonl
and samples.jsonl since its last look, applies every rule (:mod:`.rules`) and writes one ``diagnosis``
event when a problem starts and one when it clears (and a line to the train log).
:class:`DiagnosisWatcher` runs it in a thread of the training process — beside the engine, never in
its step — and stops the run when the loss is not finite (:mod:`engines.core.standard` records the cause).
"""

from __future__ import annotations

import logging
import math
import threading
from collections import deque
from typing import Any, Callable

from ..results.check_result import CheckError
from ..runs.causes import Cause
from ..runs.rundir import EVAL_REWARD, EVAL_TRAIN_REWARD, METRICS_FILE, REWARD, SAMPLES_FILE, RunDir
from ..runs.json_lines import JsonlTail
from .advice import ADVICE
from .rules import RULES, Context
from .thresholds import thresholds

logger = logging.getLogger(__name__)
ACTIVE, CLEARED = "active", "cleared"
FATAL = Cause.LOSS_NOT_FINITE  # the diagnosis that also stops the run, and its cause
KEEP_ROWS = 400  # train rows the rules look back on (every window is far shorter)


def run_thresholds(spec: dict[str, Any]):
    """The thresholds of a run spec's ``config.diagnostics`` (every engine writes the user's config there,
    verl included); the defaults, with a warning in the log, when an engine's config check let a bad one through."""
    config = spec.get("config") or {}
    try:
        return thresholds(config.get("diagnostics"))
    except CheckError as e:
        logger.warning("diagnostics: %s; using the default thresholds", e)
        return thresholds(None)


def _number(v: Any) -> float | None:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    return float(v) if ok else None


class Diagnoser:
    def __init__(self, run: RunDir, limits=None, log: Callable[[str], None] = print):
        spec = run.read_spec()
        self.run, self.log = run, log
        self.limits = limits if limits is not None else run_thresholds(spec)
        config = spec.get("config") or {}
        self.context = Context(max_completion_length=config.get("max_completion_length"))
        self.rows: deque[dict] = deque(maxlen=KEEP_ROWS)
        self.evals: list[dict] = []
        self.active: dict[str, int] = {}  # code → the step it started at
        self._metrics = JsonlTail(run.file(METRICS_FILE))
        self._samples = JsonlTail(run.file(SAMPLES_FILE))

    def _see_best(self, value: Any) -> None:
        v = _number(value)
        if v is not None and (self.context.best_reward is None or v > self.context.best_reward):
            self.context.best_reward = v

    def read_new(self) -> list[dict]:
        """The metric rows appended since the last call, in order (the samples' best reward taken in)."""
        for sample in self._samples.read_new():
            self._see_best(sample.get("reward"))
        return [row for row in self._metrics.read_new() if isinstance(row.get("step"), int)]

    def _take(self, row: dict) -> bool:
        """Keep one metric row; True when it is a held-out evaluation."""
        if EVAL_REWARD in row or EVAL_TRAIN_REWARD in row:
            self.evals.append(row)
            return True
        self.rows.append(row)
        self._see_best(row.get(REWARD))
        self._see_best(row.get("reward_max"))
        return False

    def evaluate(self) -> dict[str, dict]:
        """{code: evidence} of every diagnosis that shows now (a rule that raises is logged and skipped)."""
        rows = list(self.rows)
        self.context.active = frozenset(self.active)
        found = {}
        for code, rule in RULES.items():
            try:
                evidence = rule(rows, self.evals, self.limits, self.context)
            except Exception:  # noqa: BLE001 - a diagnosis is advice: it never breaks the run
                logger.exception("diagnosis rule %s failed", code)
                continue
            if evidence is not None:
                found[code] = evidence
        return found

    def poll(self) -> list[dict]:
        """Read, evaluate, write the events of what started and what cleared; returns those events.

        The rules see the run as it was at each held-out evaluation read in this poll, and as it is now: a
        condition that held between two polls only (the held-out reward falling at two evaluations, then
        level at the next) is said, whatever the poll's pace against the run's."""
        new = self.read_new()
        if not new:
            return []
        total = _number(self.run.read_status().get("total_steps"))
        self.context.total_steps = int(total) if total else None
        written = []
        for i, row in enumerate(new):
            is_eval = self._take(row)
            if (is_eval or i == len(new) - 1) and self.rows:
                written += self._settle(max(self.rows[-1]["step"], self.evals[-1]["step"] if self.evals else 0))
        return written

    def _settle(self, step: int) -> list[dict]:
        """The events of what shows at ``step`` and did not before, and of what showed and does no more."""
        found = self.evaluate()
        written = []
        for code, evidence in found.items():
            if code not in self.active:
                self.active[code] = step
                written.append(self._event(code, ACTIVE, step, evidence))
        for code in [c for c in self.active if c not in found]:
            since = self.active.pop(code)
            written.append(self._event(code, CLEARED, step, {"since_step": since}))
        return written

    def _event(self, code: str, state: str, step: int, evidence: dict) -> dict:
        a = ADVICE[code]
        row = self.run.event(
            "diagnosis",
            type="diagnosis",
            code=code,
            state=state,
            step=step,
            evidence=evidence,
            advice=a.advice,
            title=a.title,
            setting=a.setting,
        )
        verb = f"since step {step}: {a.title} — {a.advice}" if state == ACTIVE else f"cleared at step {step}"
        self.log(f"diagnosis {code} {verb}")
        return row


class DiagnosisWatcher:
    """A daemon thread polling a :class:`Diagnoser` every ``poll_seconds``; :meth:`stop` ends it after a
    last look. ``fatal`` names the diagnosis that stopped the run (it wrote the STOP request)."""

    def __init__(self, run: RunDir):
        self.diagnoser = Diagnoser(run, log=lambda line: print(line, flush=True))
        self.fatal: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="diagnoses", daemon=True)

    @property
    def enabled(self) -> bool:
        return bool(self.diagnoser.limits.enabled)

    def start(self) -> "DiagnosisWatcher":
        if self.enabled:
            self._thread.start()
        return self

    def _poll(self) -> None:
        try:
            self.diagnoser.poll()
        except Exception:  # noqa: BLE001 - never let the watcher take the run down
            logger.exception("diagnoses failed")
        if FATAL in self.diagnoser.active and self.fatal is None:
            self.fatal = FATAL
            self.diagnoser.run.request_stop(FATAL)

    def _loop(self) -> None:
        while not self._stop.wait(self.diagnoser.limits.poll_seconds):
            self._poll()

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        self._stop.set()
        self._thread.join(timeout=30)
        self._poll()


class NoDiagnoses:
    """The watcher of a run whose diagnoses are made elsewhere (a cluster job makes its own)."""

    fatal: str | None = None

    def stop(self) -> None:
        pass


NO_DIAGNOSES = NoDiagnoses()


def start_diagnoses(run: RunDir) -> DiagnosisWatcher:
    """The watcher of a run that starts training now (a thread only when the run's config enables it)."""
    return DiagnosisWatcher(run).start()
