"""A stand-in run process for the studio's tests and benchmarks (no torch, starts in ~0.1 s).

    python -m testing.fake_run <runs_dir> [--steps 200] [--rate 20] [--history 0] [--fail-at N] [--stopping-s 0]

It writes a run directory exactly as an engine does (run.yaml, status.json with its pid,
metrics.jsonl, samples.jsonl, events.jsonl, train.log), one step every ``1/rate`` seconds,
honours the STOP file (→ ``stopped``) and can fail on purpose (→ ``failed`` with a cause).
``--history N`` first writes N past steps at once (a long run to reattach to).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time

from engines.runs.rundir import FAILED, FINISHED, RUNNING, STOPPED, STOPPING, RunDir


def write_history(run: RunDir, steps: int, t0: float | None = None) -> None:
    """``steps`` metric rows in one write (fast even for 100,000 steps)."""
    from engines.runs.json_lines import dumps_line

    t0 = t0 or time.time() - steps * 0.1
    with open(run.file("metrics.jsonl"), "a", encoding="utf-8") as f:
        for s in range(1, steps + 1):
            f.write(dumps_line(metric_row(s, t0 + 0.1 * s)))


def metric_row(step: int, when: float) -> dict:
    r = 1 - math.exp(-step / 80) * 0.85 + random.uniform(-0.05, 0.05)
    return {
        "step": step,
        "time": when,
        "loss": 0.5 * math.exp(-step / 60) + random.uniform(0, 0.02),
        "reward": r,
        "reward_std": 0.2,
        "rewards/letter_reward": r,
        "kl": 0.01 * step**0.5,
        "lr": 1e-3,
        "completion_length": 2.0,
        "step_time": 0.05,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("runs_dir")
    p.add_argument("--run-dir", help="use this (existing) run dir instead of creating one")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--rate", type=float, default=20.0, help="steps per second")
    p.add_argument("--history", type=int, default=0)
    p.add_argument("--fail-at", type=int, default=0)
    p.add_argument("--ignore-stop", action="store_true", help="a hung run: never honours STOP")
    p.add_argument(
        "--stopping-s",
        type=float,
        default=0.0,
        help="on STOP, stay in state stopping this long first (as an engine saving its checkpoint)",
    )
    p.add_argument("--print-dir", action="store_true")
    a = p.parse_args(argv)
    run = RunDir(a.run_dir) if a.run_dir else RunDir.create(a.runs_dir, "fake")
    if not run.read_spec():
        run.write_spec(
            {
                "engine": "fake",
                "run_id": run.run_id,
                "agent": {"name": "fake-agent", "model": "/models/fake", "system_prompt": "hi"},
                "data": {"train": "train.jsonl", "test": None, "columns": {"prompt": "prompt"}},
                "reward": [{"name": "exact_match", "weight": 1.0}],
                "config": {"max_steps": a.steps},
            }
        )
    if a.print_dir:
        print(run.path, flush=True)
    total = a.history + a.steps
    run.mark_process(RUNNING, started=time.time(), step=a.history, total_steps=total, engine="fake")
    run.event("started", engine="fake", pid=os.getpid())
    if a.history:
        write_history(run, a.history)
    print("fake run started", flush=True)
    for step in range(a.history + 1, total + 1):
        if run.stop_requested() and not a.ignore_stop:
            if a.stopping_s:
                run.write_status(state=STOPPING, step=step - 1)
                run.event("stop_requested", step=step - 1)
                time.sleep(a.stopping_s)
            run.write_status(state=STOPPED, ended=time.time(), step=step - 1)
            run.event("stopped", step=step - 1)
            print("stopped at a step boundary", flush=True)
            return 0
        time.sleep(1.0 / a.rate)
        if a.fail_at and step == a.fail_at:
            msg = "KeyError: 'answer' — column missing in row 17"
            print(f"Traceback (most recent call last):\n  ...\n{msg}", file=sys.stderr, flush=True)
            run.write_status(state=FAILED, cause="bad data", error=msg, ended=time.time())
            run.event("failed", cause="bad data", message=msg)
            return 1
        row = run.append_metrics(
            step, {k: v for k, v in metric_row(step, time.time()).items() if k not in ("step", "time")}
        )
        if step % 5 == 0:
            letter = random.choice("ABCDEFGH")
            got = letter if random.random() < row["reward"] else random.choice("ABCDEFGH")
            run.append_sample(
                {
                    "step": step,
                    "prompt": [{"role": "user", "content": f"Say the letter {letter}:"}],
                    "completion": [{"role": "assistant", "content": got}],
                    "answer": letter,
                    "rewards": {"letter_reward": float(got == letter)},
                    "reward": float(got == letter),
                }
            )
        if step % 10 == 0:
            print(f"step {step}: reward={row['reward']:.3f} loss={row['loss']:.4f}", flush=True)
        run.write_status(step=step, total_steps=total, last_reward=row["reward"], last_loss=row["loss"])
    run.write_status(state=FINISHED, ended=time.time())
    run.event("finished", step=total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
