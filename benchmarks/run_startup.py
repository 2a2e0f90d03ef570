"""Launch → first step, and a sweep's gap between trials: runs forked from the preloaded fork server
(engines/runs/launcher.py) against fresh interpreters (``AWORLD_FORK_SERVER=0``), in one process on one machine,
alternating. Written to benchmarks/results/run_startup.json.

(a) the studio's Launch of the shipped demo (``Studio.launch``: the check worker prepares the run — its checks, its
    run.yaml — then the run process starts) to the run's first logged step (its first metrics row's stamp), the
    studio up and idle, the machine slot free: its first launch (which starts the fork server, and is a fresh
    interpreter whichever way) apart, then forked and fresh alternating;
(b) a sweep of the demo (``AgentSweep.run``: the driver in this process, trials differing in seed): from each
    trial's end (its status' ``ended``) to the next trial's first logged step, the driver's launcher on and off.

    python -m benchmarks.run_startup [--rounds 5] [--trials 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.results_file import write_result
from engines.runs.rundir import TERMINAL_STATES, RunDir

STEPS = 2


def first_step_at(run: RunDir, timeout_s: float = 300.0) -> float:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        rows = [r for r in run.read_jsonl("metrics.jsonl") if "step" in r and "time" in r]
        if rows:
            return float(rows[0]["time"])
        if run.read_status().get("state") in TERMINAL_STATES:
            raise RuntimeError(f"{run.run_id} ended before a step: {run.read_status()}")
        time.sleep(0.02)
    raise TimeoutError(f"{run.run_id}: no step within {timeout_s} s")


def wait_ended(run: RunDir, timeout_s: float = 600.0) -> dict:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        st = run.read_status()
        if st.get("state") in TERMINAL_STATES:
            return st
        time.sleep(0.2)
    raise TimeoutError(f"{run.run_id} did not end")


def studio_launches(rounds: int) -> dict:
    """Launch → first step through a Studio, forked vs fresh, alternating (ABBA)."""
    from aworld_gui.core import inputs as inp
    from aworld_gui.core.studio import Studio

    out: dict[str, list[float]] = {"forked": [], "exec": []}
    how_seen: dict[str, list[str]] = {"forked": [], "exec": []}
    with tempfile.TemporaryDirectory() as tmp:
        studio = Studio(Path(tmp) / "runs")
        studio.start()
        assert studio.worker.wait_ready(300), "the check worker did not start"
        si = inp.demo_inputs()
        import yaml

        config = yaml.safe_load(si.config_text or "") or {}
        config.update(max_steps=STEPS, save_steps=1000, eval_steps=0)
        si.config_text = yaml.safe_dump(config, sort_keys=False)
        t0 = time.time()
        res = studio.launch(si)  # the studio's first launch starts its fork server
        assert res.get("ok"), res
        first = RunDir(res["run_dir"])
        first_launch = {"s": round(first_step_at(first) - t0, 2), "spawned": first.read_status().get("spawned")}
        assert wait_ended(first)["state"] == "finished", first.read_status()
        assert studio.launcher._settled.wait(300) and studio.launcher.ready(), studio.launcher._failed
        order = []
        for i in range(rounds):
            order += ["forked", "exec"] if i % 2 == 0 else ["exec", "forked"]
        try:
            for how in order:
                if how == "exec":
                    os.environ["AWORLD_FORK_SERVER"] = "0"  # the launcher starts a fresh interpreter
                t0 = time.time()
                res = studio.launch(si)
                assert res.get("ok"), res
                run = RunDir(res["run_dir"])
                out[how].append(first_step_at(run) - t0)
                how_seen[how].append(run.read_status().get("spawned"))
                assert wait_ended(run)["state"] == "finished", run.read_status()
                os.environ.pop("AWORLD_FORK_SERVER", None)
        finally:
            studio.close()
    assert all(h == "forked" for h in how_seen["forked"]) and all(h == "exec" for h in how_seen["exec"]), how_seen
    return {"first_launch": first_launch} | {
        how: {
            "median_s": round(statistics.median(v), 2),
            "min_s": round(min(v), 2),
            "max_s": round(max(v), 2),
            "n": len(v),
            "all_s": [round(x, 2) for x in v],
        }
        for how, v in out.items()
    }


def sweep_gaps(trials: int, fork_server: bool) -> dict:
    """A sweep of ``trials`` demo runs (2 steps each, differing in seed) driven in this process; the gaps from
    each trial's end to the next one's first step."""
    import yaml

    from engines.sweeps import AgentSweep
    from testing import letters_demo as d

    if not fork_server:
        os.environ["AWORLD_FORK_SERVER"] = "0"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cfg = yaml.safe_load((Path(d.ASSETS) / "configs/letters_grpo.yaml").read_text())
            cfg.update(max_steps=STEPS, save_steps=1000, eval_steps=0)
            runs = f"{tmp}/runs"
            s = AgentSweep(
                d.AGENT,
                d.TRAIN,
                d.TEST,
                d.REWARD,
                cfg,
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
            by_number = {t["number"]: RunDir(Path(runs) / t["run_id"]) for t in s.summary()["trials"]}
            spawned = [by_number[n].read_status().get("spawned") for n in sorted(by_number)]
            gaps = [
                first_step_at(by_number[n + 1]) - float(by_number[n].read_status()["ended"])
                for n in sorted(by_number)
                if n + 1 in by_number
            ]
            return {
                "gaps_s": [round(g, 2) for g in gaps],
                "median_s": round(statistics.median(gaps), 2),
                "spawned": spawned,
            }
    finally:
        os.environ.pop("AWORLD_FORK_SERVER", None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--trials", type=int, default=3)
    a = ap.parse_args()
    summary = {"launch_to_first_step": studio_launches(a.rounds)}
    summary["sweep_trial_gap"] = {
        "forked": sweep_gaps(a.trials, True),
        "exec": sweep_gaps(a.trials, False),
    }
    summary["goal"] = "Launch -> first step <= 3 s on a quiet machine; trial-to-trial gap <= 3 s (issue 40)"
    print(write_result("run_startup.json", summary).read_text())


if __name__ == "__main__":
    main()
