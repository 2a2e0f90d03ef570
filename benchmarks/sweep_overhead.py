"""Sweep overhead on the shipped letters demo (trl engine, CPU), written to benchmarks/results/sweep_overhead.json.

(a) a trial's steady-state steps/s vs the same run launched alone (``prepare_run`` + ``spawn_run``): the
    trials differ only in their seed, and each seed also runs alone (the seed changes the sampled completions,
    so the steps' cost: comparing trial seeds 1, 2 with an alone run of seed 42 measured the seeds, not the
    sweep); the order alternates (alone first, then sweep first) in one process on one machine; ratio of
    medians (issue 31's goal: >= 0.98);
(b) the time from one trial's end (its status' ``ended``) to the next trial's first logged step (the driver
    telling Optuna, asking, preparing the next run with its checks, the run process starting, loading the
    engine and the model), and to its ``started`` event;
(c) the driver's own CPU (this process drives the sweep) per second of the sweep, as a share of one core: on a
    CPU machine that is what the training beside it loses.

    python -m benchmarks.sweep_overhead [--rounds 3] [--steps 200] [--trials 2]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.results_file import write_result
from engines.core.modules import Modules
from engines.runs.rundir import TERMINAL_STATES, RunDir
from engines.sweeps.driver import REPORTS_PER_TRIAL

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
AGENT = str(ASSETS / "agents/letters_agent.yaml")
TRAIN = str(ASSETS / "datasets/letters_train.jsonl")
TEST = str(ASSETS / "datasets/letters_test.jsonl")
REWARD = f"{ASSETS / 'rewards/letter_reward.py'}:letter_reward"
WARMUP_STEPS = 5


def config(steps: int, seed: int | None = None) -> dict:
    cfg = yaml.safe_load((ASSETS / "configs/letters_grpo.yaml").read_text())
    cfg.update(max_steps=steps, save_steps=10**6, eval_steps=0, samples_per_step=0)
    if seed is not None:
        cfg["seed"] = seed
    return cfg


def cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


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


def alone(runs: str, steps: int, seed: int) -> float:
    from engines.core.prepare import prepare_run
    from engines.runs.lifecycle import spawn_run

    run = prepare_run(Modules(AGENT, TRAIN, TEST, REWARD, config(steps, seed), train_engine_name="trl"), runs_dir=runs)
    spawn_run(run.path)
    assert wait_ended(run)["state"] == "finished", run.read_status()
    return steps_per_s(run)


def sweep(runs: str, steps: int, seeds: list[int]) -> tuple[dict[int, float], list[float], list[float], float]:
    """({seed: its trial's steps/s}, end → next first step, end → next started, the driver's CPU share of one
    core), the trials differing only in seed (Optuna's grid sampler takes the seeds in an order of its own)."""
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
            "params": {"seed": seeds},
        },
    )
    cpu0, t0 = cpu_s(), time.time()
    assert s.run() == "finished"
    driver_share = (cpu_s() - cpu0) / (time.time() - t0)
    trials = s.summary()["trials"]
    runs_by_number = {t["number"]: RunDir(Path(runs) / t["run_id"]) for t in trials}
    speeds = {t["params"]["seed"]: steps_per_s(runs_by_number[t["number"]]) for t in trials}
    to_step, to_start = [], []
    for n in sorted(runs_by_number):
        run = runs_by_number[n]
        if n + 1 in runs_by_number:
            ended = run.read_status()["ended"]
            nxt = runs_by_number[n + 1]
            first = min(r["time"] for r in nxt.read_jsonl("metrics.jsonl"))
            started = next(e["time"] for e in nxt.read_jsonl("events.jsonl") if e["event"] == "started")
            to_step.append(first - ended)
            to_start.append(started - ended)
    return speeds, to_step, to_start, driver_share


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument(
        "--report-every-value",
        action="store_true",
        help="the driver reports every value of the objective to Optuna (as before its report grid), to compare",
    )
    ap.add_argument("--out", default="sweep_overhead.json")
    a = ap.parse_args()
    if a.report_every_value:
        from engines.sweeps import driver

        driver.REPORTS_PER_TRIAL = 10**9  # report_every(...) == 1
    alone_speeds, trial_speeds, gaps_step, gaps_start, shares, pairs = [], [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="sweep-overhead-") as tmp:
        seeds = list(range(1, a.trials + 1))
        for r in range(a.rounds):
            if r % 2:  # sweep first in odd rounds: neither side always runs on a warmer machine
                by_seed, to_step, to_start, share = sweep(f"{tmp}/runs", a.steps, seeds)
                alone_round = [alone(f"{tmp}/runs", a.steps, seed) for seed in seeds]
            else:
                alone_round = [alone(f"{tmp}/runs", a.steps, seed) for seed in seeds]
                by_seed, to_step, to_start, share = sweep(f"{tmp}/runs", a.steps, seeds)
            speeds = [by_seed[seed] for seed in seeds]  # in the alone runs' order: each pair is one seed
            alone_speeds += alone_round
            trial_speeds += speeds
            pairs += [t / s for t, s in zip(speeds, alone_round)]
            gaps_step += to_step
            gaps_start += to_start
            shares.append(share)
            print(
                f"round {r}: alone {[round(x, 3) for x in alone_round]} steps/s, trials {[round(x, 3) for x in speeds]}"
                f" (seeds {seeds}), driver {share:.1%} of a core, end → next first step "
                f"{[round(x, 1) for x in to_step]} s",
                flush=True,
            )
    ratio = statistics.median(trial_speeds) / statistics.median(alone_speeds)
    summary = {
        "steps": a.steps,
        "trials_per_sweep": a.trials,
        "rounds": a.rounds,
        "alone_steps_per_s": [round(x, 4) for x in alone_speeds],
        "trial_steps_per_s": [round(x, 4) for x in trial_speeds],
        "reports": "every value" if a.report_every_value else f"grid of max_steps // {REPORTS_PER_TRIAL}",
        "ratio_trial_over_alone": round(ratio, 4),
        "ratio_per_seed_pair": [round(x, 4) for x in pairs],
        "driver_cpu_share_of_one_core": [round(x, 4) for x in shares],
        "goal_ratio": 0.98,
        "end_to_next_first_step_s": [round(x, 2) for x in gaps_step],
        "end_to_next_started_s": [round(x, 2) for x in gaps_start],
    }
    out = write_result(a.out, summary)
    print(f"ratio {ratio:.3f}; end → next first step {gaps_step} s; written to {out}")


if __name__ == "__main__":
    main()
