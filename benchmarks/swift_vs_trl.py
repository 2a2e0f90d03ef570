"""The letters demo through the `swift` engine (ms-swift, its own environment) vs our `trl` engine, same task,
one run each on this machine, written to benchmarks/results/swift_vs_trl.json.

Each engine trains the shipped demo — tiny-letters, the letters data, letter_reward, learning rate 1e-3
constant, 8 prompts × 16 completions per step, beta 0.04, 2-token completions, full fine-tuning — as a real
run (``prepare_run`` + ``python -m engines run``, detached, the studio's path), until the step's mean reward
reaches 0.8 and ``--after`` more steps have been logged (or ``--seconds`` pass). Measured from the run
directory only:

* time to reward ≥ 0.8 — from the launch (process start, imports, ms-swift's own start-up included) and
  from the first training step; and the step it happened at;
* steady steps/s — logged steps per second of wall clock after ``--warmup`` steps, until the end.

Row times are when a step's metrics reached metrics.jsonl: the trl engine writes them from its callback,
the swift engine when its watcher (1 s poll) reads ms-swift's logging.jsonl — ±1 s at both ends of a window
of a minute or more. The machine is shared (its load is recorded): compare the two within this run.

    python -m benchmarks.swift_vs_trl [--seconds 1800] [--after 30] [--warmup 10] [--engines trl,swift]
"""

from __future__ import annotations

from engines.core.modules import Modules

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.results_file import machine, write_result

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
AGENT = str(ASSETS / "agents/letters_agent.yaml")
TRAIN = str(ASSETS / "datasets/letters_train.jsonl")
REWARD = f"{ASSETS / 'rewards/letter_reward.py'}:letter_reward"
CONFIGS = {"trl": ASSETS / "configs/letters_grpo.yaml", "swift": ASSETS / "configs/letters_swift.yaml"}
GOAL = 0.8


def config_for(engine: str) -> dict:
    cfg = yaml.safe_load(CONFIGS[engine].read_text())
    cfg.update(max_steps=5000, save_steps=100000)
    if engine == "trl":
        cfg.update(eval_steps=0)  # no held-out scoring during the run (ms-swift gets no test set either)
    return cfg


def train_rows(run) -> list[dict]:
    return [r for r in run.read_jsonl("metrics.jsonl") if "loss" in r and "reward" in r]


def measure(engine: str, runs_dir: str, a) -> dict:
    from engines.core.prepare import prepare_run
    from engines.runs.lifecycle import effective_status, kill_run, spawn_run, stop_run

    t0 = time.time()
    run = prepare_run(
        Modules(AGENT, TRAIN, None, REWARD, config_for(engine), engine), runs_dir=runs_dir, name=f"bench-{engine}"
    )
    checks_s = time.time() - t0
    load_before = round(os.getloadavg()[0], 2)
    launched = time.time()
    spawn_run(run.path)
    goal = None
    stop_reason = "max steps"
    while True:
        status = effective_status(run)
        if status.get("state") in ("stopped", "finished", "failed"):
            break
        rows = train_rows(run)
        if goal is None:
            goal = next((r for r in rows if r["reward"] >= GOAL), None)
        if goal is not None and rows and rows[-1]["step"] >= goal["step"] + a.after:
            stop_reason = f"{a.after} steps after the goal"
            stop_run(run.path, reason="benchmark")
            break
        if time.time() - launched > a.seconds:
            stop_reason = f"time budget {a.seconds:.0f} s"
            stop_run(run.path, reason="benchmark")
            break
        time.sleep(1.0)
    deadline = time.time() + 300
    while effective_status(run).get("state") not in ("stopped", "finished", "failed") and time.time() < deadline:
        time.sleep(1.0)
    if effective_status(run).get("state") not in ("stopped", "finished", "failed"):
        kill_run(run.path)
    rows = train_rows(run)
    status = effective_status(run)
    if status.get("state") == "failed":
        stop_reason = f"failed: {status.get('cause') or status.get('error') or 'see the run'}"
    out: dict = {
        "engine": engine,
        "run_dir": str(run.path),
        "state": status.get("state"),
        "stop": stop_reason,
        "checks_s": round(checks_s, 1),
        "load_avg_1m_before": load_before,
        "load_avg_1m_after": round(os.getloadavg()[0], 2),
        "steps": len(rows),
    }
    if not rows:
        return out
    first_start = rows[0]["time"] - (rows[0].get("step_time") or 0.0)
    goal = next((r for r in rows if r["reward"] >= GOAL), None)
    out.update(
        startup_s=round(first_start - launched, 1),
        first_reward=round(rows[0]["reward"], 3),
        rewards=[round(r["reward"], 3) for r in rows],
    )
    if goal is not None:
        out.update(
            goal_step=goal["step"],
            time_to_goal_from_launch_s=round(goal["time"] - launched, 1),
            time_to_goal_from_first_step_s=round(goal["time"] - first_start, 1),
        )
    steady = rows[a.warmup :]
    if len(steady) >= 2:
        span = steady[-1]["time"] - steady[0]["time"]
        out.update(
            steady_steps=len(steady) - 1,
            steady_window_s=round(span, 1),
            steady_steps_per_s=round((len(steady) - 1) / span, 3) if span > 0 else None,
            median_step_time_s=round(statistics.median(r["step_time"] for r in steady if r.get("step_time")), 3),
        )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=1800.0, help="time budget of one engine's run")
    p.add_argument("--after", type=int, default=30, help="steps logged after the goal before the run is stopped")
    p.add_argument("--warmup", type=int, default=10, help="steps left out of the steady rate")
    p.add_argument("--engines", default="trl,swift")
    a = p.parse_args(argv)
    runs_dir = tempfile.mkdtemp(prefix="bench-swift-vs-trl-")
    results = {}
    for engine in a.engines.split(","):
        print(f"== {engine}", flush=True)
        results[engine] = measure(engine, runs_dir, a)
        r = results[engine]
        print({k: v for k, v in r.items() if k != "rewards"}, flush=True)
    summary: dict = {
        "task": "letters demo: tiny-letters, letters_train.jsonl, letter_reward; lr 1e-3 constant, "
        "8 prompts x 16 completions per step, beta 0.04, max 2 tokens, full fine-tuning",
        "goal": f"step mean reward >= {GOAL}",
        "engines": results,
        "machine": machine(),
        "settings": {"after": a.after, "warmup": a.warmup, "seconds": a.seconds},
    }
    trl, swift = results.get("trl") or {}, results.get("swift") or {}
    if trl.get("steady_steps_per_s") and swift.get("steady_steps_per_s"):
        summary["swift_over_trl_steady_steps_per_s"] = round(swift["steady_steps_per_s"] / trl["steady_steps_per_s"], 3)
    if trl.get("time_to_goal_from_launch_s") and swift.get("time_to_goal_from_launch_s"):
        summary["swift_over_trl_time_to_goal"] = round(
            swift["time_to_goal_from_launch_s"] / trl["time_to_goal_from_launch_s"], 3
        )
    out = write_result("swift_vs_trl.json", summary)
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
