"""A run on a Ray cluster vs the same run here, on the shipped letters demo (trl engine, CPU), written to
benchmarks/results/cluster_overhead.json. The cluster is a Ray head on this machine (testing/ray_head.py), so the
difference is what the cluster path adds: the job's start, the mirror, the Stop watcher.

(a) steady-state steps/s (metrics.jsonl's own stamps, after a warm-up), local and as a Ray job alternated
    ABBA in one process; ratio of medians. The job asks for ``--job-cpus`` (default 2, what the local run has
    here): Ray sets a job's OMP_NUM_THREADS to the CPUs it asked for, so a 1-CPU job trains on one thread;
(b) the time from starting the run process (as the studio does) to the first logged step, here and as a job
    (submission, Ray's runtime env, the job's copy and checks);
(c) a metric row's stamp where it was written → the moment it is in the studio's run directory (polled every
    20 ms): for a local run the polling alone, for a job the mirror through its log; p50 / p95.

    python -m benchmarks.cluster_overhead [--rounds 2] [--steps 60]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import yaml

from benchmarks.results_file import pct, write_result
from engines.core.modules import Modules
from engines.runs.rundir import METRICS_FILE, TERMINAL_STATES
from engines.runs.json_lines import JsonlTail
from testing.letters_demo import AGENT, ASSETS, REWARD, TEST, TRAIN
from testing.ray_head import RayHead

WARMUP_STEPS = 5


def config(steps: int, **extra) -> dict:
    cfg = yaml.safe_load((ASSETS / "configs/letters_grpo.yaml").read_text())
    cfg.update(max_steps=steps, save_steps=10**6, eval_steps=0, samples_per_step=2, **extra)
    return cfg


def one_run(tmp: str, steps: int, address: str | None, job_cpus: int = 2) -> dict:
    """The run as the studio starts it (``prepare_run`` + ``spawn_run``: its own process), watched from here."""
    from engines.runs.lifecycle import spawn_run
    from engines.core.prepare import prepare_run

    extra = {"ray_address": address, "ray_storage": f"{tmp}/cluster", "ray_resources": {"num_cpus": job_cpus}}
    extra = extra if address else {}
    run = prepare_run(
        Modules(AGENT, TRAIN, TEST, REWARD, config(steps, **extra), train_engine_name="trl"), runs_dir=f"{tmp}/runs"
    )
    seen: dict[int, float] = {}  # step → when its row was in this run directory
    tail = JsonlTail(run.file(METRICS_FILE))
    t0 = time.time()
    spawn_run(run.path)
    while run.read_status().get("state") not in TERMINAL_STATES:
        now = time.time()
        for row in tail.read_new():
            seen.setdefault(row["step"], now)
        time.sleep(0.02)
    assert run.read_status()["state"] == "finished", run.read_status()
    rows = [r for r in run.read_jsonl(METRICS_FILE) if "reward" in r and r["step"] > WARMUP_STEPS]
    return {
        "steps_per_s": (rows[-1]["step"] - rows[0]["step"]) / (rows[-1]["time"] - rows[0]["time"]),
        "to_first_step_s": min(r["time"] for r in run.read_jsonl(METRICS_FILE)) - t0,
        "seen_after_s": [seen[r["step"]] - r["time"] for r in run.read_jsonl(METRICS_FILE) if r["step"] in seen],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--job-cpus", type=int, default=2, help="ray_resources.num_cpus (Ray sets OMP_NUM_THREADS to it)")
    a = ap.parse_args()
    results: dict[str, list[dict]] = {"local": [], "ray": []}
    with tempfile.TemporaryDirectory(prefix="cluster-overhead-") as tmp, RayHead(num_cpus=max(2, a.job_cpus)) as head:
        for r in range(a.rounds):
            for kind in ("local", "ray", "ray", "local"):  # ABBA
                res = one_run(tmp, a.steps, head.address if kind == "ray" else None, a.job_cpus)
                results[kind].append(res)
                print(
                    f"round {r} {kind}: {res['steps_per_s']:.2f} steps/s, first step after "
                    f"{res['to_first_step_s']:.1f} s",
                    flush=True,
                )
    speed = {k: [x["steps_per_s"] for x in v] for k, v in results.items()}
    first = {k: [x["to_first_step_s"] for x in v] for k, v in results.items()}
    seen = {k: [d for x in v for d in x["seen_after_s"]] for k, v in results.items()}
    summary = {
        "steps": a.steps,
        "rounds": a.rounds,
        "job_cpus": a.job_cpus,
        "steps_per_s": {k: [round(x, 3) for x in v] for k, v in speed.items()},
        "ratio_ray_over_local": round(statistics.median(speed["ray"]) / statistics.median(speed["local"]), 4),
        "to_first_step_s": {k: [round(x, 2) for x in v] for k, v in first.items()},
        # a row's stamp where it was written → in the studio's run directory (local: the polling alone)
        "row_seen_after_s": {
            k: {"p50": round(pct(v, 0.5), 3), "p95": round(pct(v, 0.95), 3), "rows": len(v)} for k, v in seen.items()
        },
    }
    out = write_result("cluster_overhead.json", summary)
    print(summary, f"written to {out}", sep="\n")


if __name__ == "__main__":
    main()
