"""The sweep driver's reports to Optuna, through its real study and a trial's run directory as the run writes
it (``metrics.jsonl`` growing between polls): one report grid for every trial, so the median pruner compares
trials at the same steps, and few enough reports that the driver's SQLite commits do not take the CPU the
training beside it needs (benchmarks/sweep_overhead.py)."""

from __future__ import annotations

import os
import random
import time

import optuna
import pytest

from engines.runs.json_lines import JsonlTail, dumps_line
from engines.runs.rundir import METRICS_FILE, RUNNING, RunDir
from engines.sweeps.driver import REPORTS_PER_TRIAL, Follower, SweepDriver, next_report, report_every
from engines.sweeps.sweep_dir import SweepDir


def _driver(tmp_path, max_steps, pruner="none") -> SweepDriver:
    sd = SweepDir.create_sweep(tmp_path / "runs", label="reports")
    sd.write_sweep(
        {
            "sweep": {
                "trials": 4,
                "sampler": "random",
                "pruner": pruner,
                "objective": {"metric": "reward", "direction": "maximize"},
                "params": {"learning_rate": [1e-3, 1e-4]},
            },
            "base": {"agent": "agent.yaml", "train_engine_name": "trl"},
            "base_config": {} if max_steps is None else {"max_steps": max_steps},
        }
    )
    optuna.create_study(study_name=sd.study_name, storage=sd.storage_url, direction="maximize")
    return SweepDriver(sd.path)


def _trial_run(driver: SweepDriver) -> Follower:
    trial = driver.study.ask(fixed_distributions=dict(driver.spec.params))
    run = RunDir.create(driver.sweep.runs_dir, "trl")
    run.write_status(state=RUNNING, pid=os.getpid())
    return Follower(trial, run, JsonlTail(run.file(METRICS_FILE)))


def _train(driver: SweepDriver, f: Follower, rows: list[dict], rng: random.Random) -> None:
    """The run appends its rows in bursts; the driver follows after each burst (as its polls do)."""
    i = 0
    while i < len(rows):
        burst = rows[i : i + rng.randint(1, 7)]
        with open(f.run.file(METRICS_FILE), "a", encoding="utf-8") as out:
            out.writelines(dumps_line(r) for r in burst)
        i += len(burst)
        assert driver.follow(f) is False


@pytest.mark.parametrize("seed", range(4))
def test_every_trial_reports_on_one_grid_whatever_the_polls_saw(tmp_path, seed):
    rng = random.Random(seed)
    max_steps = rng.choice([60, 200, 1000])
    every_k = rng.choice([1, 3, 10])  # the metric's cadence: every step, every 3rd, every eval (10)
    driver = _driver(tmp_path, max_steps)
    assert driver.report_every == max(1, max_steps // REPORTS_PER_TRIAL)
    seen = []
    for _ in range(3):
        f = _trial_run(driver)
        rows = [{"step": s, "reward": rng.random(), "time": time.time()} for s in range(0, max_steps + 1, every_k)]
        _train(driver, f, rows, rng)
        reported = sorted(f.trial.study.trials[f.trial.number].intermediate_values)
        seen.append(reported)
        assert len(reported) <= max_steps // driver.report_every + 1
        assert len(reported) <= 51  # whatever the run's length: not one SQLite commit per logged step
        # the first value at or after each multiple of the grid, the last logged value (step max) among them
        # whenever the cadence divides the run's length
        due, expected = 0, []
        for r in rows:
            if r["step"] >= due:
                expected.append(r["step"])
                due = next_report(r["step"], driver.report_every)
        assert reported == expected
        assert f.last_value == rows[-1]["reward"]  # the trial's value: the metric's last one, reported or not
    assert seen[0] == seen[1] == seen[2]  # one grid: the median pruner compares the same steps


def test_a_run_length_that_is_not_steps_reports_every_value(tmp_path):
    assert report_every({}) == report_every({"max_steps": -1}) == report_every({"max_steps": True}) == 1
    driver = _driver(tmp_path, None)
    f = _trial_run(driver)
    _train(driver, f, [{"step": s, "reward": 0.5} for s in range(40)], random.Random(0))
    assert sorted(f.trial.study.trials[0].intermediate_values) == list(range(40))


def test_a_trial_below_the_median_is_pruned_at_a_grid_step(tmp_path):
    """Real MedianPruner (1 startup trial, no warm-up): trial 0 completes at reward 1.0 on the grid; trial 1
    logs 0.2 every step and is pruned at its first grid step after step 0, through its run's STOP file."""
    driver = _driver(tmp_path, 200, pruner={"type": "median", "n_startup_trials": 1, "n_warmup_steps": 1})
    rng = random.Random(1)
    first = _trial_run(driver)
    _train(driver, first, [{"step": s, "reward": 1.0} for s in range(201)], rng)
    driver.study.tell(first.trial, 1.0)
    second = _trial_run(driver)
    _train(driver, second, [{"step": s, "reward": 0.2} for s in range(20)], rng)
    assert second.prune_asked and second.run.stop_reason() == "pruned"
    assert second.trial.study.trials[1].user_attrs["pruned_at"] == driver.report_every
