"""Sweeps end to end on the letters demo (tiny trials: a few GRPO steps each): trials are ordinary runs, the
study is Optuna's, a pruned trial stops through its STOP file with cause ``pruned``, a killed driver is resumed
without losing the trial that was training."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engines.runs.rundir import FINISHED, STOPPED, RunDir
from engines.runs.lifecycle import effective_status, process_alive
from engines.sweeps import AgentSweep
from engines.sweeps.sweep_dir import SweepDir, list_sweeps
from testing.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
#: a trial: 3 GRPO steps on the tiny letters model, held-out reward at step 0 and at the end
TINY = {
    "max_steps": 3,
    "prompts_per_step": 2,
    "num_generations": 4,
    "eval_steps": 0,
    "eval_samples": 4,
    "save_steps": 100,
    "samples_per_step": 0,
    "learning_rate": 1e-3,
}


def _trial_runs(runs: Path, summary: dict) -> dict[int, RunDir]:
    return {t["number"]: RunDir(runs / t["run_id"]) for t in summary["trials"] if t.get("run_id")}


def _best_of(summary: dict, direction: str = "maximize") -> dict:
    complete = [t for t in summary["trials"] if t["state"] == "complete"]
    pick = max if direction == "maximize" else min
    return pick(complete, key=lambda t: t["value"])


def test_a_sweep_from_the_cli_runs_every_trial_as_a_run(tmp_path, demo):
    import optuna

    runs = tmp_path / "runs"
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(
        yaml.safe_dump(
            {
                "trials": 3,
                "sampler": "random",
                "seed": 0,
                "pruner": "none",
                "objective": {"metric": "eval/reward", "direction": "maximize"},
                "params": {"learning_rate": {"low": 1e-4, "high": 1e-2, "log": True}, "beta": [0.0, 0.04]},
            }
        )
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "engines",
            "sweep",
            "--agent",
            demo["agent"],
            "--train",
            demo["train"],
            "--test",
            demo["test"],
            "--reward",
            demo["reward"],
            "--config",
            str(config),
            "--engine",
            "trl",
            "--sweep",
            str(sweep_file),
            "--run-path",
            str(runs),
            "--name",
            "lr-beta",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    printed = json.loads(out.stdout.strip().splitlines()[-1])
    [sweep] = list_sweeps(runs)
    assert printed["state"] == FINISHED and Path(printed["sweep_dir"]) == sweep.path
    assert (sweep.path / "sweep.yaml").is_file() and (sweep.path / "study.db").is_file()

    summary = sweep.read_summary()
    assert [t["state"] for t in summary["trials"]] == ["complete"] * 3
    assert all(isinstance(t["value"], float) for t in summary["trials"])
    best = _best_of(summary)
    assert summary["best"]["value"] == best["value"] and summary["best"]["run_id"] == best["run_id"]
    assert printed["best"] == summary["best"]

    # the study is Optuna's own, in its SQLite storage: the same trials, params and values
    study = optuna.load_study(study_name=sweep.study_name, storage=sweep.storage_url)
    assert [(t.number, t.params, t.value) for t in study.trials] == [
        (t["number"], t["params"], t["value"]) for t in summary["trials"]
    ]

    # every trial is an ordinary run: its run.yaml holds the trial's params, it is named "<sweep> · trial k",
    # it finished, and `aworld-train runs` lists it
    trial_runs = _trial_runs(runs, summary)
    for t in summary["trials"]:
        run = trial_runs[t["number"]]
        spec = run.read_spec()
        assert spec["config"]["learning_rate"] == pytest.approx(t["params"]["learning_rate"])
        assert spec["config"]["beta"] == t["params"]["beta"] and spec["config"]["max_steps"] == 3
        assert run.read_label()["name"] == f"lr-beta · trial {t['number']}"
        status = run.read_status()
        assert status["state"] == FINISHED and status["sweep"] == {"id": sweep.run_id, "trial": t["number"]}
        evals = [r["eval/reward"] for r in run.read_jsonl("metrics.jsonl") if "eval/reward" in r]
        assert evals[-1] == t["value"]  # the objective: the metric's last value in the run's metrics.jsonl
    listed = subprocess.run(
        [sys.executable, "-m", "engines", "runs", "--runs-dir", str(runs)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    ).stdout
    assert all(run.run_id in listed for run in trial_runs.values())
    sweeps = subprocess.run(
        [sys.executable, "-m", "engines", "sweeps", "--runs-dir", str(runs)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    ).stdout
    assert sweep.run_id in sweeps and "3/3 trials" in sweeps


#: trial 0 draws 1e-3 with this seed; the driver resumed after one trial seeds its sampler with PRUNE_SEED + 1,
#: which draws 1e-5, 1e-5 (checked below): trial 0 completes and sets the median the others fall below
PRUNE_SEED = 2


#: the demo's reward (a letter scores 1), 50 ms a completion in a run's training (``python -m engines run``), never in
#: a check
SLOW_REWARD = """
import sys, time


def score(completion, answer, **kw):
    if sys.argv[1:2] == ["run"]:
        time.sleep(0.05)
    return 1.0 if completion.strip()[:1] == answer else 0.0
"""


def test_a_trial_is_pruned_and_a_killed_driver_resumes_without_losing_the_trial_training(tmp_path, demo):
    """Objective ``lr`` (logged at every step, the learning rate itself): deterministic, so Optuna's
    MedianPruner prunes every trial below the first complete one at its first report."""
    runs = tmp_path / "runs"
    config = dict(TINY, max_steps=30, save_steps=100)
    # a trial to prune must still be training when the driver's prune lands: on a machine that trains fast, the third
    # trial's 30 steps ended first (complete, not pruned). Its reward takes 0.4 s a step in a run: 12 s for 30 steps,
    # where a prune at the first report takes a second or two
    reward = tmp_path / "slow_reward.py"
    reward.write_text(SLOW_REWARD, encoding="utf-8")
    sweep = AgentSweep(
        agent=demo["agent"],
        train_dataset=demo["train"],
        test_dataset=demo["test"],
        reward_func=f"{reward}:score",
        config=config,
        run_path=str(runs),
        train_engine_name="trl",
        name="prune",
        sweep={
            "trials": 3,
            "sampler": "random",
            "seed": PRUNE_SEED,
            "pruner": {"type": "median", "n_startup_trials": 1, "n_warmup_steps": 0},
            "objective": {"metric": "lr", "direction": "maximize"},
            "params": {"learning_rate": [1e-3, 1e-5]},
        },
    )
    driver = sweep.start()
    try:

        def first_trial_training():
            trials = sweep.summary()["trials"]
            if not trials or not trials[0].get("run_id"):
                return None
            run = RunDir(runs / trials[0]["run_id"])
            return run if (run.read_status().get("step") or 0) >= 1 else None

        first = wait_for(first_trial_training, timeout=300, every=0.1, what="trial 0 training")
        os.kill(driver, signal.SIGKILL)  # the driver dies; the trial's run (its own session) trains on
        wait_for(lambda: not process_alive({"pid": driver}), timeout=30)
        assert effective_status(sweep.sweep_dir)["state"] == "failed"
        assert process_alive(first.read_status()) or first.read_status()["state"] == FINISHED

        driver = sweep.resume()
        wait_for(
            lambda: effective_status(sweep.sweep_dir)["state"] == FINISHED,
            timeout=900,
            every=1,
            what="the resumed sweep to finish",
        )
    finally:
        if process_alive({"pid": driver}):
            sweep.stop()
    summary = sweep.summary()
    trials = summary["trials"]
    assert [t["params"]["learning_rate"] for t in trials] == [1e-3, 1e-5, 1e-5]
    assert [t["state"] for t in trials] == ["complete", "pruned", "pruned"]
    # trial 0 was followed again by the new driver, not re-run: the same run, finished, all 30 steps
    assert trials[0]["run_id"] == first.run_id and first.read_status()["state"] == FINISHED
    events = SweepDir(sweep.path).read_jsonl("events.jsonl")
    assert any(e["event"] == "trial_reattached" and e["trial"] == 0 for e in events)
    assert len([d for d in runs.iterdir() if (d / "run.yaml").exists()]) == 3
    # a pruned trial stopped at a step boundary through its STOP file, with cause `pruned`
    for t in trials[1:]:
        run = RunDir(runs / t["run_id"])
        status = run.read_status()
        assert status["state"] == STOPPED and status["cause"] == "pruned", status
        assert status["step"] < 30 and run.stop_reason() == "pruned"
        assert any(e["event"] == "stopped" and e.get("cause") == "pruned" for e in run.read_jsonl("events.jsonl"))
        assert t["value"] == pytest.approx(1e-5)
    assert summary["best"] == {
        "number": 0,
        "run_id": first.run_id,
        "params": {"learning_rate": 1e-3},
        "value": pytest.approx(1e-3),
    }
    assert summary["best"]["value"] == _best_of(summary)["value"]


#: the demo's reward (a letter scores 1), waiting while the hold file exists — in a run's training only (``python -m
#: engines run``), never in a check
HELD_REWARD = """
import os, sys, time


def score(completion, answer, **kw):
    while sys.argv[1:2] == ["run"] and os.path.exists({hold!r}):
        time.sleep(0.05)
    return 1.0 if completion.strip()[:1] == answer else 0.0
"""


def test_a_stopped_sweep_resumes_and_re_runs_the_trial_its_stop_cut_short(tmp_path, demo):
    """``sweep-stop``: the training trial stops at a step boundary and is marked interrupted (not counted);
    ``sweep-resume`` runs its params again as a new trial, then the rest."""
    runs = tmp_path / "runs"
    config = dict(TINY, max_steps=30)
    # the first trial must still be training when the stop lands, however fast the machine trains (30 steps ended
    # before `sweep-stop`'s interpreter had started, on a fast machine): once it is seen training, its reward waits
    # while the test holds it, until the stop is asked for
    hold = tmp_path / "hold"
    reward = tmp_path / "held_reward.py"
    reward.write_text(HELD_REWARD.format(hold=str(hold)), encoding="utf-8")
    sweep = AgentSweep(
        agent=demo["agent"],
        train_dataset=demo["train"],
        test_dataset=demo["test"],
        reward_func=f"{reward}:score",
        config=config,
        run_path=str(runs),
        train_engine_name="trl",
        sweep={
            "trials": 2,
            "sampler": "random",
            "seed": 0,
            "pruner": "none",
            "objective": {"metric": "lr", "direction": "maximize"},
            "params": {"learning_rate": {"low": 1e-4, "high": 1e-2, "log": True}},
        },
    )
    sweep.start()
    cli = [sys.executable, "-m", "engines"]
    try:
        first = wait_for(
            lambda: (
                (t := sweep.summary()["trials"])
                and t[0].get("run_id")
                and (RunDir(runs / t[0]["run_id"]).read_status().get("step") or 0) >= 1
                and RunDir(runs / t[0]["run_id"])
            ),
            timeout=300,
            every=0.1,
            what="trial 0 training",
        )
        hold.touch()
        subprocess.run([*cli, "sweep-stop", str(sweep.path)], check=True, timeout=120, cwd=ROOT)
        hold.unlink()  # the stop is asked for: the trial goes on to its next step boundary, and stops there
        wait_for(lambda: effective_status(sweep.sweep_dir)["state"] == STOPPED, timeout=300, what="the sweep stopped")
        status = first.read_status()
        assert status["state"] == STOPPED and status["cause"] == "sweep stopped" and status["step"] < 30
        stopped = sweep.summary()["trials"]
        assert [t["state"] for t in stopped] == ["interrupted"]

        out = subprocess.run(
            [*cli, "sweep-resume", str(sweep.path), "--detach"], capture_output=True, text=True, timeout=120, cwd=ROOT
        )
        assert out.returncode == 0, out.stderr
        wait_for(
            lambda: effective_status(sweep.sweep_dir)["state"] == FINISHED,
            timeout=900,
            every=1,
            what="the resumed sweep to finish",
        )
    finally:
        if process_alive(effective_status(sweep.sweep_dir)):
            sweep.stop()
    trials = sweep.summary()["trials"]
    assert [t["state"] for t in trials] == ["interrupted", "complete", "complete"]
    assert trials[1]["params"] == trials[0]["params"]  # the cut-short trial, run again first
    assert trials[1]["run_id"] != trials[0]["run_id"]
    assert sweep.summary()["best"]["value"] == _best_of(sweep.summary())["value"]


#: the demo's reward, raising once a trial's run has logged step 2 (after its checkpoint at 2) while a file ``crash``
#: beside it names the runs folder: a trial whose run fails at a known place
CRASHING_REWARD = """
import json
from pathlib import Path

CRASH = Path(__file__).with_name("crash")


def score(completion, answer, **kw):
    if CRASH.exists():
        runs = Path(CRASH.read_text().strip())
        if any(json.loads(line).get("step", 0) >= 2 for m in runs.glob("*/metrics.jsonl") for line in m.read_text().splitlines()):
            raise RuntimeError("the reward crashed")
    return 1.0 if completion.strip()[:1] == answer else 0.0
"""


def test_a_failed_trial_s_run_resumed_is_followed_again_by_the_sweep(tmp_path, demo):
    """A one-trial sweep whose trial's run crashes in step 3 ends with the trial failed; the run is resumed
    (``aworld-train resume``) and finishes; ``sweep-resume`` then follows it as a trial with the same params
    (``resumes_trial`` 0) and tells its value: the failed trial no longer counts, the sweep finishes with its best."""
    runs = tmp_path / "runs"
    reward = tmp_path / "crashing_reward.py"
    reward.write_text(CRASHING_REWARD, encoding="utf-8")
    (tmp_path / "crash").write_text(str(runs))
    sweep = AgentSweep(
        agent=demo["agent"],
        train_dataset=demo["train"],
        test_dataset=demo["test"],
        reward_func=f"{reward}:score",
        config=dict(TINY, max_steps=4, save_steps=2),
        run_path=str(runs),
        train_engine_name="trl",
        name="resumed",
        sweep={
            "trials": 1,
            "sampler": "random",
            "seed": 0,
            "pruner": "none",
            "objective": {"metric": "reward", "direction": "maximize"},
            "params": {"learning_rate": [1e-3]},
        },
    )
    sweep.start()
    wait_for(lambda: effective_status(sweep.sweep_dir)["state"] in (FINISHED, "failed"), timeout=600, what="the sweep")
    [trial] = sweep.summary()["trials"]
    assert trial["state"] == "failed" and effective_status(sweep.sweep_dir)["state"] == FINISHED
    run = RunDir(runs / trial["run_id"])
    assert run.read_status()["state"] == "failed" and [p.name for p in run.checkpoints()] == ["checkpoint-2"]

    (tmp_path / "crash").unlink()
    cli = [sys.executable, "-m", "engines"]
    done = subprocess.run([*cli, "resume", str(run.path)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert run.read_status()["state"] == FINISHED and run.read_status()["attempt"] == 2
    done = subprocess.run(
        [*cli, "sweep-resume", str(sweep.sweep_dir.path)], capture_output=True, text=True, timeout=600, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = sweep.summary()
    failed, resumed = summary["trials"]
    assert failed["state"] == "failed" and resumed["state"] == "complete" and resumed["resumes_trial"] == 0
    assert resumed["run_id"] == run.run_id and resumed["params"] == failed["params"]
    rewards = [r["reward"] for r in run.read_jsonl("metrics.jsonl") if "reward" in r]
    assert resumed["value"] == rewards[-1] and summary["best"]["number"] == 1
    assert effective_status(sweep.sweep_dir)["state"] == FINISHED
    events = [e for e in sweep.sweep_dir.read_jsonl("events.jsonl") if e["event"] == "trial_resumed"]
    assert [(e["trial"], e["resumes"], e["attempt"]) for e in events] == [(1, 0, 2)]
