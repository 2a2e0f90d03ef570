"""Run ms-swift for a checked run and mirror it into the run directory.

:class:`SwiftJob` starts ms-swift's ``rlhf``/``sft`` command (``<swift python> swift/cli/rlhf.py <args>``, what
``swift.cli.main`` runs; with ``NPROC_PER_NODE``/``NNODES`` set, ``swift.cli.main`` itself, which starts torchrun)
in a process session of its own, its output appended to ``train.log`` — never a pipe — and watches it to its end:

* ms-swift's ``logging.jsonl`` is tailed into ``metrics.jsonl`` (its keys kept, canonical names added), the
  status (step/total, last reward and loss) and TensorBoard;
* ``completions.jsonl`` into ``samples.jsonl`` (a few rollouts per step);
* each ``checkpoint-N`` folder becomes a ``checkpoint`` event;
* a stop request (the STOP file, or SIGTERM → STOP) is acted on by the plugin's callback inside ms-swift at the
  next step boundary, which saves a checkpoint; this side only records ``stopping`` and waits.

An exit code other than 0 raises :class:`SwiftRunError` carrying ms-swift's last error line, which the run's
failure cause is read from (reward error, missing dependency, out of memory, bad data, killed).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..runs.run_summary import measured_summary
from ..isolation.processes import spawn_detached
from ..runs.rundir import FINISHED, STOPPED, STOPPING, RunDir, step_log_line
from ..runs.json_lines import JsonlTail, TextTail
from .metrics import PromptLookup, is_summary, normalize, samples_from_completions
from .plugin import RUN_DIR_ENV, WATCH_PID_ENV

POLL_S = 1.0
_ERROR_RE = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception|Interrupt)(?:\([\w.]+\))?(?::\s.*)?$")
_CKPT_RE = re.compile(r"^checkpoint-(\d+)$")


#: ms-swift's own test for starting torchrun (swift/cli/main.py ``use_torchrun``)
TORCHRUN_ENV = ("NPROC_PER_NODE", "NNODES")


def command_script(python: str, command: str) -> str | None:
    """The script ms-swift's ``swift.cli.main`` runs for ``command`` (``swift/cli/<command>.py`` of the environment
    of ``python``), or None where it cannot be found."""
    from .environment import probe

    folder = probe(python).get("swift_dir")
    script = Path(folder) / "cli" / f"{command.replace('-', '_')}.py" if folder else None
    return str(script) if script is not None and script.is_file() else None


class SwiftRunError(RuntimeError):
    """ms-swift ended with an error; the message carries its last error line."""


def last_error(text: str) -> str | None:
    """The last ``SomeError: message`` line of a log."""
    for raw in reversed(text.splitlines()):
        line = raw.strip()
        if _ERROR_RE.match(line):
            return line[:600]
    return None


def log_tail(path: Path) -> str:
    tail = TextTail(Path(path), keep=3000)
    tail.read_new()
    return tail.text()


def explain_exit(code: int, log_text: str) -> str:
    """Why ms-swift exited, in words the failure classifier reads."""
    if code < 0 or code == 137:
        sig = -code if code < 0 else signal.SIGKILL
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        return f"ms-swift was killed by signal {name} (the machine's memory killer sends SIGKILL too: see dmesg)"
    err = last_error(log_text) or "no error line in train.log"
    if "No module named" in err or "ModuleNotFoundError" in err:
        err += " — missing dependency in ms-swift's environment: run python -m engines setup swift"
    return f"ms-swift exited with code {code}: {err}"


@dataclass
class SwiftWatcher:
    """Mirrors ms-swift's output folder into the run directory; call :meth:`poll` regularly."""

    run: RunDir
    output_dir: Path
    reward_terms: list[tuple[str, float]] = field(default_factory=list)
    samples_per_step: int = 2  # prompt groups when group_size is known, else rollouts
    group_size: int = 0  # num_generations (GRPO)
    total_steps: int | None = None
    dataset_path: Path | None = None
    tensorboard: Any = None
    #: a run resumed from its checkpoint of this step: ms-swift's files already hold that attempt's logs up to it (and
    #: past it: those rows were set aside, engines/core/resume.py); mirrored once, not again
    resumed_at: int = 0

    def __post_init__(self) -> None:
        self.metrics_tail = JsonlTail(self.output_dir / "logging.jsonl")
        self.completions_tail = JsonlTail(self.output_dir / "completions.jsonl")
        self.last_step: int | None = None
        self.first_step: int | None = None  # the first step this run logged (the summary's steps count from it)
        self.rows = 0
        self.checkpoints: set[int] = set(range(1, self.resumed_at + 1))
        self._lookup: PromptLookup | None = None
        self._sampled_steps: set = set()

    def poll(self) -> int:
        before = self.rows
        for record in self.metrics_tail.read_new():
            self._metrics(record)
        for record in self.completions_tail.read_new():
            self._samples(record)
        self._checkpoints()
        return self.rows - before

    def _metrics(self, record: dict) -> None:
        if is_summary(record):
            if "train_runtime" in record:  # measured figures only (engines/runs/run_summary.py)
                steps = None if self.first_step is None else self.last_step - self.first_step + 1
                self.run.event("summary", **measured_summary(record, steps, record.get("train_runtime")))
            return
        row = normalize(record)
        if row is None:
            return
        step, total, values = row
        if step <= self.resumed_at:
            return
        now = time.time()
        if total:
            self.total_steps = total
        self.run.append_metrics(step, values, when=now)
        if self.tensorboard is not None:
            self.tensorboard.add(step, values, when=now)
        self.rows += 1
        self.last_step = step if self.last_step is None else max(self.last_step, step)
        self.first_step = step if self.first_step is None else min(self.first_step, step)
        step_time = values.get("step_time") if ("loss" in values or "reward" in values) else None
        print(step_log_line(step, self.total_steps, values, 1.0 / step_time if step_time else None), flush=True)
        status: dict[str, Any] = {"step": self.last_step}
        if self.total_steps:
            status["total_steps"] = self.total_steps
        for key, name in (("reward", "last_reward"), ("loss", "last_loss")):
            if key in values:
                status[name] = values[key]
        self.run.write_status(durable=False, **status)

    def _samples(self, record: dict) -> None:
        """The first record of a step holds its training rollouts; a later one of the same step, the
        evaluation's (not samples of training)."""
        steps = record.get("step") or [None]
        if self.samples_per_step <= 0 or steps[0] in self._sampled_steps:
            return
        if isinstance(steps[0], int) and steps[0] <= self.resumed_at:
            return
        self._sampled_steps.add(steps[0])
        if self._lookup is None:
            self._lookup = PromptLookup.from_jsonl(self.dataset_path) if self.dataset_path else PromptLookup([])
        self.run.append_samples(
            samples_from_completions(record, self.reward_terms, self.samples_per_step, self._lookup, self.group_size)
        )

    def _checkpoints(self) -> None:
        if not self.output_dir.is_dir():
            return
        for p in self.output_dir.iterdir():
            m = _CKPT_RE.match(p.name)
            if not m or p.is_symlink() or not p.is_dir() or int(m.group(1)) in self.checkpoints:
                continue
            if not (p / "trainer_state.json").exists():  # still being written
                continue
            step = int(m.group(1))
            self.checkpoints.add(step)
            self.run.event("checkpoint", step=step, path=str(p))
            self.run.write_status(last_checkpoint=str(p))


def resumed_step(checkpoint: str | Path | None) -> int:
    """The step of the ``checkpoint-<step>`` folder a run resumes from (0: it does not resume)."""
    m = _CKPT_RE.match(Path(checkpoint).name) if checkpoint else None
    return int(m.group(1)) if m else 0


@dataclass
class SwiftJob:
    """One ms-swift training process for a run, from start to end."""

    run: RunDir
    python: str
    command: str  # rlhf | sft
    argv: list[str]
    env_vars: dict[str, str]
    watcher: SwiftWatcher

    def full_command(self) -> list[str]:
        """ms-swift's command. One process: the command's own script (``swift/cli/<command>.py``), which ms-swift's
        ``swift.cli.main`` would start as a second interpreter after importing its utilities in the first (3-5 s
        of every run). Several (``NPROC_PER_NODE``/``NNODES``): ``swift.cli.main``, which starts torchrun."""
        torchrun = any(k in self.environment() for k in TORCHRUN_ENV)
        script = None if torchrun else command_script(self.python, self.command)
        if script is None:
            return [self.python, "-m", "swift.cli.main", self.command, *self.argv]
        return [self.python, script, *self.argv]

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):  # never inherit a launcher's distributed settings
            env.pop(key, None)
        env.update(
            {
                "PYTHONUNBUFFERED": "1",
                "TOKENIZERS_PARALLELISM": "false",
                RUN_DIR_ENV: str(self.run.path),
                WATCH_PID_ENV: str(os.getpid()),
            }
        )
        env.update({k: str(v) for k, v in self.env_vars.items()})
        return env

    def write_command_file(self, path: Path) -> None:
        """The exact command, to run on another node (NNODES > 1: set NODE_RANK there) or by hand."""
        env = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in self.env_vars.items())
        line = " ".join(shlex.quote(a) for a in self.full_command())
        path.write_text(
            f"#!/bin/sh\n# ms-swift command of run {self.run.run_id} (written by engines/swift)\n"
            f"cd {shlex.quote(str(self.run.path))}\n{(env + ' ') if env else ''}exec {line}\n",
            encoding="utf-8",
        )
        path.chmod(0o755)

    def train(self) -> str:
        run = self.run
        proc = spawn_detached(self.full_command(), run.log_path, env=self.environment(), cwd=run.path)
        run.write_status(swift_pid=proc.pid)
        run.event(
            "launched", engine="swift", pid=proc.pid, command=" ".join(shlex.quote(a) for a in self.full_command())
        )
        stopping = False
        while proc.poll() is None:
            self.watcher.poll()
            if run.stop_requested() and not stopping:
                stopping = True
                run.write_status(state=STOPPING)
                run.event("stop_requested", step=self.watcher.last_step)
            run.write_status(durable=False)  # heartbeat
            time.sleep(POLL_S)
        self.watcher.poll()
        code = proc.returncode
        if code == 0:
            return STOPPED if (stopping or run.stop_requested()) else FINISHED
        raise SwiftRunError(explain_exit(code, log_tail(run.log_path)))
