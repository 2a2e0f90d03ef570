"""The probe's cost (issue 44): wall time of ``AgentTrainer.probe`` for 64 prompts × 8 samples on the letters demo
(goal ≤ 15 s on 2 CPU cores).

    python -m benchmarks.probe_cost [--rounds 3] [--prompts 64] [--samples 8]

The demo's training set has 24 rows, so the benchmark writes a 64-row one of the demo's prompts (rows repeated in
turn) and probes all of it. Each round probes afresh (``refresh``): the isolated child, the model's load, sampling,
scoring, the timed training pass, the statistics and the stored report; the checks (``AgentTrainer``'s
construction) are timed apart. A stored report read back is timed too. Results: benchmarks/results/probe_cost.json.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.results_file import write_result

ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 15.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--samples", type=int, default=8)
    a = ap.parse_args()
    from engines import AgentTrainer
    from testing import letters_demo as d

    work = Path(tempfile.mkdtemp(prefix="probe-cost-"))
    lines = Path(d.TRAIN).read_text(encoding="utf-8").splitlines()
    train = work / "train64.jsonl"
    train.write_text("\n".join(lines[i % len(lines)] for i in range(a.prompts)) + "\n", encoding="utf-8")
    t0 = time.perf_counter()
    trainer = AgentTrainer(
        agent=d.AGENT,
        train_dataset=str(train),
        reward_func=d.REWARD,
        config=str(ROOT / "assets/configs/letters_grpo.yaml"),
        run_path=str(work / "runs"),
        train_engine_name="trl",
    )
    checks = time.perf_counter() - t0
    walls, reports = [], []
    for _ in range(a.rounds):
        t1 = time.perf_counter()
        result = trainer.probe(prompts=a.prompts, samples=a.samples, refresh=True)
        walls.append(time.perf_counter() - t1)
        reports.append(result.report)
    t2 = time.perf_counter()
    stored = trainer.probe(prompts=a.prompts, samples=a.samples)
    reread = time.perf_counter() - t2
    last = reports[-1]
    summary = {
        "what": f"AgentTrainer.probe, {a.prompts} prompts × {a.samples} samples, letters demo (trl), fresh each round",
        "goal_s": GOAL_S,
        "wall_s": [round(w, 3) for w in walls],
        "wall_s_median": round(statistics.median(walls), 3),
        "meets_goal": statistics.median(walls) <= GOAL_S,
        "checks_s": round(checks, 3),
        "stored_report_read_s": round(reread, 4),
        "stored_report_reused": stored.reused,
        "parts_s_last_round": {
            "model_load": last["timing"]["load_seconds"],
            "generation": last["timing"]["generate_seconds"],
            "scoring": last["timing"]["score_seconds"],
            "training_pass": (last["timing"].get("training_pass") or {}).get("forward_backward_seconds"),
        },
        "tokens_per_second_last_round": round(last["forecast"]["tokens_per_second"] or 0, 1),
        "completions": last["samples"],
    }
    path = write_result("probe_cost.json", summary)
    print(path.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
