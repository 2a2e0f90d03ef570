"""Sweep overhead on the shipped letters demo (trl engine, CPU), written to benchmarks/results/sweep_overhead.json.

(a) a trial's steady-state steps/s vs the same run launched alone (``prepare_run`` + ``spawn_run``), alternated
    alone → sweep → alone ... in one process on one machine; ratio of medians (issue 31's goal: >= 0.98);
(b) the time from one trial's end (its status' ``ended``) to the next trial's first logged step (the driver
    telling Optuna, asking, preparing the next run with its checks, the run process starting, loading the
    engine and the model), and to its ``started`` event.

    python -m benchmarks.sweep_overhead [--rounds 1] [--steps 60] [--trials 2]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.results_file import write_result
from engines.runs.rundir import TERMINAL_STATES, RunDir

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
AGENT = str(ASSETS / "agents/letters_agent.yaml")
TRAIN = str(ASSETS / "datasets/letters_train.jsonl")
TEST = str(ASSETS / "datasets/letters_test.jsonl")
REWARD = f"{ASSETS / 'rewards/letter_reward.py'}:letter_reward"
WARMUP_STEPS = 5


def config(steps: int) -> dict:
    cfg = yaml.safe_load((ASSETS / "configs/letters_grpo.yaml").read_text())
    cfg.update(max_steps=steps, save_steps=10**6, eval_steps=0, samples_per_step=0)
    return cfg


def steps_per_s(run: RunDir) -> float:
    """Steady state: steps after the warm-up over the time they took (metrics.jsonl's own stamps)."""
    rows = [r for r in run.read_jsonl("metrics.jsonl") if "loss" in r or "reward" in r]
    rows = [r for r in rows if r["step"] > WARMUP_STEPS]
    return (rows[-1]["step"] - rows[0]["step"]) / (rows[-1]["time"] - rows[0]["time"])


def wait_ended(run: RunDir, timeout_s: float = 3600) -> dict:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        st = run.read_status()
        if st.get("state") in TERMINAL_STATES:
            return st
        time.sleep(0.5)
    raise TimeoutError(f"{run.run_id} did not end")


def alone(runs: str, steps: int) -> float:
    from engines.runs.prepare import prepare_run
    from engines.runs.lifecycle import spawn_run

    run = prepare_run(AGENT, TRAIN, TEST, REWARD, config(steps), train_engine_name="trl", runs_dir=runs)
    spawn_run(run.path)
    assert wait_ended(run)["state"] == "finished", run.read_status()
    return steps_per_s(run)


def sweep(runs: str, steps: int, trials: int) -> tuple[list[float], list[float], list[float]]:
    """(steps/s of each trial, end → next first step, end → next started), the trials differing only in seed."""
    from engines.sweeps import AgentSweep

    s = AgentSweep(
        AGENT,
        TRAIN,
        TEST,
        REWARD,
        config(steps),
        run_path=runs,
        train_engine_name="trl",
        sweep={
            "sampler": "grid",
            "pruner": "none",
            "objective": {"metric": "reward"},
            "params": {"seed": list(range(1, trials + 1))},
        },
    )
    assert s.run() == "finished"
    runs_by_number = {t["number"]: RunDir(Path(runs) / t["run_id"]) for t in s.summary()["trials"]}
    speeds, to_step, to_start = [], [], []
    for n in sorted(runs_by_number):
        run = runs_by_number[n]
        speeds.append(steps_per_s(run))
        if n + 1 in runs_by_number:
            ended = run.read_status()["ended"]
            nxt = runs_by_number[n + 1]
            first = min(r["time"] for r in nxt.read_jsonl("metrics.jsonl"))
            started = next(e["time"] for e in nxt.read_jsonl("events.jsonl") if e["event"] == "started")
            to_step.append(first - ended)
            to_start.append(started - ended)
    return speeds, to_step, to_start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--trials", type=int, default=2)
    a = ap.parse_args()
    alone_speeds, trial_speeds, gaps_step, gaps_start = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="sweep-overhead-") as tmp:
        for r in range(a.rounds):
            alone_speeds.append(alone(f"{tmp}/runs", a.steps))
            speeds, to_step, to_start = sweep(f"{tmp}/runs", a.steps, a.trials)
            trial_speeds += speeds
            gaps_step += to_step
            gaps_start += to_start
            print(
                f"round {r}: alone {alone_speeds[-1]:.3f} steps/s, trials {[round(x, 3) for x in speeds]}, "
                f"end → next first step {[round(x, 1) for x in to_step]} s",
                flush=True,
            )
        alone_speeds.append(alone(f"{tmp}/runs", a.steps))  # alone on both sides of the sweeps
    ratio = statistics.median(trial_speeds) / statistics.median(alone_speeds)
    summary = {
        "steps": a.steps,
        "trials_per_sweep": a.trials,
        "rounds": a.rounds,
        "alone_steps_per_s": [round(x, 4) for x in alone_speeds],
        "trial_steps_per_s": [round(x, 4) for x in trial_speeds],
        "ratio_trial_over_alone": round(ratio, 4),
        "goal_ratio": 0.98,
        "end_to_next_first_step_s": [round(x, 2) for x in gaps_step],
        "end_to_next_started_s": [round(x, 2) for x in gaps_start],
    }
    out = write_result("sweep_overhead.json", summary)
    print(f"ratio {ratio:.3f}; end → next first step {gaps_step} s; written to {out}")


if __name__ == "__main__":
    main()
