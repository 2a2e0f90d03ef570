"""Steps/s of the letters demo with 2 training processes (``num_processes: 2``: accelerate launch, gloo
on CPU) vs 1, on this shared 2-core machine — reported as measured, whatever it shows.

Variants (GRPO, the demo config otherwise):

* ``1 process``            — prompts_per_step 8 → 128 completions per step;
* ``2 processes, same batch`` — prompts_per_step 4 on each → the same 128 completions per step;
* ``2 processes, 2× batch``   — prompts_per_step 8 on each → 256 completions per step.

Each run is a real run directory started like the studio starts one (``python -m engines run``), for
``--steps`` steps; steps/s counts the steps after the first ``--warmup`` (imports, process start,
first allocations), from metrics.jsonl. Completions/s = steps/s × completions per step. The variants
alternate over ``--rounds`` rounds.

    python -m benchmarks.trl_processes [--rounds 2] [--steps 80] [--warmup 10]

Results: benchmarks/results/trl_processes.json.
"""

from __future__ import annotations

from engines.core.modules import Modules

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.results_file import machine, write_result

ROOT = Path(__file__).resolve().parent.parent
A = ROOT / "assets"
VARIANTS = {"1 process": (1, 8), "2 processes, same batch": (2, 4), "2 processes, 2x batch": (2, 8)}
GENERATIONS = 16


def one_run(name: str, a, runs: Path) -> dict:
    import yaml

    from engines.core.prepare import prepare_run

    processes, prompts = VARIANTS[name]
    cfg = yaml.safe_load((A / "configs/letters_grpo.yaml").read_text())
    cfg.update(
        num_processes=processes,
        prompts_per_step=prompts,
        num_generations=GENERATIONS,
        max_steps=a.steps,
        save_steps=10**6,
        eval_steps=0,
        samples_per_step=2,
    )
    run = prepare_run(
        Modules(
            str(A / "agents/letters_agent.yaml"),
            str(A / "datasets/letters_train.jsonl"),
            None,
            f"{A / 'rewards/letter_reward.py'}:letter_reward",
            cfg,
            "trl",
        ),
        runs_dir=str(runs),
    )
    t0 = time.time()
    rc = subprocess.run(
        [sys.executable, "-m", "engines", "run", str(run.path)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    ).returncode
    assert rc == 0 and run.read_status().get("state") == "finished", run.log_path.read_text()[-3000:]
    steps = [r for r in run.read_jsonl("metrics.jsonl") if "loss" in r]
    assert [r["step"] for r in steps] == list(range(1, a.steps + 1))
    ends = [r["time"] for r in steps][a.warmup - 1 :]
    rate = (len(ends) - 1) / (ends[-1] - ends[0])
    per_step = processes * prompts * GENERATIONS
    return {
        "variant": name,
        "processes": processes,
        "completions_per_step": per_step,
        "steps_per_s": round(rate, 3),
        "completions_per_s": round(rate * per_step, 1),
        "wall_s_incl_start": round(time.time() - t0, 1),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--out", default="trl_processes.json")
    a = ap.parse_args()
    start = machine()
    names = list(VARIANTS)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-procs-") as tmp:
        for i in range(a.rounds):
            for name in names if i % 2 == 0 else names[::-1]:
                row = one_run(name, a, Path(tmp))
                print(json.dumps(row), flush=True)
                rows.append(row)
    summary = {}
    for name in names:
        mine = [r for r in rows if r["variant"] == name]
        summary[name] = {
            "median_steps_per_s": statistics.median(r["steps_per_s"] for r in mine),
            "median_completions_per_s": statistics.median(r["completions_per_s"] for r in mine),
        }
    base = summary["1 process"]
    for name in names[1:]:
        summary[name]["steps_per_s_vs_1_process"] = round(
            summary[name]["median_steps_per_s"] / base["median_steps_per_s"], 3
        )
        summary[name]["completions_per_s_vs_1_process"] = round(
            summary[name]["median_completions_per_s"] / base["median_completions_per_s"], 3
        )
    write_result(
        a.out,
        {
            "what": "letters demo GRPO steps/s: 2 processes (accelerate launch, gloo) vs 1, on 2 CPU cores",
            "steps": a.steps,
            "warmup_steps_excluded": a.warmup,
            "summary": summary,
            "runs": rows,
            "machine": {**start, "load_avg_1m_end": machine()["load_avg_1m"]},
        },
    )


if __name__ == "__main__":
    main()
