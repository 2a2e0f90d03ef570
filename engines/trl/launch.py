"""Several training processes on one machine, started through ``accelerate launch``.

The run process (``python -m engines run <run_dir>``, which holds the machine's slot and writes the
run's lifecycle) starts ``accelerate launch --num_processes N ... -m engines.trl.rank_main <run_dir>``
as its child, in its own process group, so stopping or killing the run reaches every rank. Each rank
rebuilds the run from ``run.yaml`` and trains (:meth:`TrlProcessor.train_here`); rank 0 alone
writes metrics, samples and status; every rank reads the STOP file and they agree on it at each
step (:mod:`engines.trl.callbacks`). A DeepSpeed/FSDP preset is one of TRL's own accelerate config
files (``trl/accelerate_configs``), the same ones the ``trl`` CLI's ``--accelerate_config`` uses.

On CPU the ranks talk over gloo: ``--multi_gpu`` picks accelerate's torchrun-based launcher (the
only one that starts several local processes) and TRL's ``use_cpu`` makes each rank a CPU process.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import shutil
import subprocess
import sys
import time
from typing import Any

from ..results.check_result import CheckError
from ..isolation import server_env
from ..isolation.privileges import set_parent_death_signal
from ..isolation.processes import free_port
from ..runs.causes import Cause
from ..runs.rundir import FINISHED, STOPPED


DEEPSPEED_PRESETS = ("zero1", "zero2", "zero3")
FSDP_PRESETS = ("fsdp1", "fsdp2")
RANK_FAILED = "rank_failed"  # the event a failing rank writes before it exits


def world_size(cfg: dict[str, Any]) -> int:
    """The number of training processes: ``num_processes``, ``auto`` = one per visible GPU (1 on CPU)."""
    n = cfg.get("num_processes", 1)
    if n == "auto":
        from ..fit import gpus

        return max(1, gpus.device_count()) if gpus.cuda_available() and cfg["device"] != "cpu" else 1
    return int(n)


def needs_launch(cfg: dict[str, Any], world: int) -> bool:
    return world > 1 or cfg["distributed"] != "ddp"


def describe(cfg: dict[str, Any], world: int) -> str:
    if not needs_launch(cfg, world):
        return "in the run process"
    preset = "" if cfg["distributed"] == "ddp" else f" with TRL's {cfg['distributed']} preset"
    return f"accelerate launch: {world} process{'es' if world > 1 else ''}{preset}"


def check(cfg: dict[str, Any], world: int, cuda: bool) -> list[str]:
    """Raise CheckError for process/preset settings this machine cannot run; return warnings."""
    warnings: list[str] = []
    preset = cfg["distributed"]
    if preset in DEEPSPEED_PRESETS + FSDP_PRESETS and not cuda:
        raise CheckError(
            "config",
            f"`distributed: {preset}` shards the model across GPUs, and this machine has no CUDA GPU",
            "use distributed: ddp (each process holds the model) on CPU",
        )
    if preset in DEEPSPEED_PRESETS and importlib.util.find_spec("deepspeed") is None:
        raise CheckError(
            "config",
            f"`distributed: {preset}` needs DeepSpeed, which is not installed",
            "pip install deepspeed (in the environment that trains), or use distributed: fsdp2",
        )
    if cuda:
        from ..fit.gpus import device_count

        gpus = device_count()
        if world > gpus:
            raise CheckError(
                "config",
                f"`num_processes: {world}` but {gpus} GPU{'s' if gpus != 1 else ''} visible (one process per GPU)",
                f"use num_processes: {gpus} or auto",
            )
    else:
        cores = os.cpu_count() or 1
        if world > cores:
            raise CheckError(
                "config",
                f"`num_processes: {world}` on a CPU with {cores} cores",
                f"use at most {cores} processes on CPU",
            )
        if world > 1:
            warnings.append(
                f"{world} CPU processes share {cores} cores: each trains on its slice of every step's "
                "batch and they synchronise gradients over gloo (see docs/TRL.md for what it gains)"
            )
    return warnings


def command(run_dir: str, cfg: dict[str, Any], world: int, mixed_precision: str) -> list[str]:
    """``python -m accelerate.commands.launch ... -m engines.trl.rank_main <run_dir>``."""
    args = [
        "--num_processes",
        str(world),
        "--num_machines",
        "1",
        "--main_process_port",
        str(free_port()),
        "--mixed_precision",
        mixed_precision,
        "--dynamo_backend",
        "no",
    ]
    if cfg["distributed"] != "ddp":
        from trl.cli.accelerate_config import resolve_accelerate_config_argument

        args = resolve_accelerate_config_argument(["--accelerate_config", cfg["distributed"], *args])
    elif world > 1:
        args.append("--multi_gpu")
    return [sys.executable, "-m", LAUNCHER, *args, "-m", "engines.trl.rank_main", run_dir]


#: the module that starts the ranks (Accelerate's launcher, torch's elastic agent in its process): each rank's parent
LAUNCHER = "accelerate.commands.launch"


class RankFailure(RuntimeError):
    """A rank failed; ``failure_cause`` is the cause that rank recorded (engines.core.standard reads it)."""

    def __init__(self, message: str, cause: str):
        super().__init__(message)
        self.failure_cause = cause


def run_ranks(cfg: dict[str, Any], run: Any, world: int) -> str:
    """Start the ranks of the run (``run``: its RunDir, ``cfg``: its effective config), wait for them (a STOP file
    or SIGTERM stops them at a step boundary), and say how they ended."""
    from .arguments import device_flags

    _use_cpu, bf16, fp16 = device_flags(cfg)
    cmd = command(str(run.path), cfg, world, "bf16" if bf16 else "fp16" if fp16 else "no")
    run.write_status(world_size=world, launcher="accelerate launch", distributed=cfg["distributed"])
    run.event("launch", world_size=world, command=" ".join(cmd[1:]))
    # the MCP servers' variables reach each rank beside its environment (engines.isolation.server_env)
    handed, folder = server_env.handover_to_ranks(world)
    env = dict(os.environ, PYTHONUNBUFFERED="1", **handed)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        # the launcher dies with this process (SIGKILLed too: a run process killed alone left its ranks training in
        # the run directory, which a resume then shared with them); each rank dies with the launcher (rank_main)
        proc = subprocess.Popen(
            cmd,
            env=env,
            stdin=subprocess.DEVNULL,
            start_new_session=False,
            preexec_fn=lambda: set_parent_death_signal(signal.SIGKILL),
        )
        try:
            while proc.poll() is None:
                time.sleep(0.5)
        except BaseException:
            _end(proc)
            raise
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    if proc.returncode != 0:
        failed = [e for e in run.read_jsonl("events.jsonl") if e.get("event") == RANK_FAILED]
        if failed:
            first = failed[0]
            raise RankFailure(f"rank {first.get('rank')}: {first.get('message')}", first.get("cause") or Cause.UNKNOWN)
        raise RankFailure(
            f"accelerate launch exited with status {proc.returncode} (see train.log)",
            Cause.KILLED if proc.returncode < 0 or run.stop_requested() else Cause.UNKNOWN,
        )
    events = {e.get("event") for e in run.read_jsonl("events.jsonl")}
    return STOPPED if "stop_requested" in events else FINISHED


def _end(proc: subprocess.Popen) -> None:
    from ..isolation.processes import terminate_tree

    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            terminate_tree(proc.pid, grace_s=2.0, group=False)
