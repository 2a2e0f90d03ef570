"""Demo learning with LoRA beside full fine-tuning (the `trl` engine, 2-core CPU).

Both variants train the shipped letters demo (assets/configs/letters_grpo.yaml) from the same random
initial weights, alternating full / LoRA per seed so that both meet the same machine load:

* ``full`` — the demo config as shipped (every weight trains);
* ``lora`` — the same plus ``use_peft: true`` with TRL's ModelConfig names (``lora_r``, ``lora_alpha``,
  ``lora_target_modules: all-linear``, ``lora_modules_to_save: [lm_head]``) and a learning rate raised for
  adapters (``--lora-lr``). Without ``lm_head`` in ``modules_to_save`` LoRA did not move the random-init
  demo model at all (mean reward 0.05-0.08 and entropy at its maximum after 280 steps).

Per run: steps and seconds until the step's mean reward first reaches 0.8 (seconds from the start of
the first step), steps/s, trainable parameters, the held-out reward at the end, peak RSS. Steps to
0.8 do not depend on how busy the shared machine is; seconds do (the load is recorded).

    python -m benchmarks.trl_lora [--seeds 0 1 2] [--max-steps 600] [--seconds 900] [--lora-lr 0.005]

Results: benchmarks/results/trl_lora.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.results_file import machine, write_result

ROOT = Path(__file__).resolve().parent.parent
A = ROOT / "assets"
TARGET = 0.8
#: adapters on every linear layer; the output head trains in full (``modules_to_save``): the demo model's
#: random-init head gives near-uniform logits that adapters inside the blocks barely move
LORA = {
    "use_peft": True,
    "lora_r": 16,
    "lora_alpha": 32,
    "lora_dropout": 0.0,
    "lora_target_modules": "all-linear",
    "lora_modules_to_save": ["lm_head"],
}
AFTER_TARGET_STEPS = 10  # keep training a little past the target (is it held?), then stop


def child(a) -> dict:
    import yaml

    from engines import AgentTrainer

    cfg = yaml.safe_load((A / "configs/letters_grpo.yaml").read_text())
    cfg.update(max_steps=a.max_steps, seed=a.seed, save_steps=10**6, eval_steps=0)
    if a.variant == "lora":
        cfg.update(LORA, learning_rate=a.lora_lr)
    trainer = AgentTrainer(
        str(A / "agents/letters_agent.yaml"),
        str(A / "datasets/letters_train.jsonl"),
        str(A / "datasets/letters_test.jsonl"),
        f"{A / 'rewards/letter_reward.py'}:letter_reward",
        cfg,
        run_path=a.runs,
        train_engine_name="trl",
    )
    run = trainer.train_processor.run

    def watchdog():
        reached = None
        while True:
            rows = [r for r in run.read_jsonl("metrics.jsonl") if "loss" in r]
            if rows:
                if reached is None and any(r["reward"] >= TARGET for r in rows):
                    reached = next(r["step"] for r in rows if r["reward"] >= TARGET)
                over_time = time.time() - (rows[0]["time"] - rows[0]["step_time"]) > a.seconds
                if over_time or (reached is not None and rows[-1]["step"] >= reached + AFTER_TARGET_STEPS):
                    run.request_stop("benchmark budget")
                    return
            time.sleep(0.5)

    threading.Thread(target=watchdog, daemon=True).start()
    trainer.train()
    rows = run.read_jsonl("metrics.jsonl")
    steps = [r for r in rows if "loss" in r]
    start = steps[0]["time"] - steps[0]["step_time"]
    hit = next((r for r in steps if r["reward"] >= TARGET), None)
    evals = [r["eval/reward"] for r in rows if "eval/reward" in r]
    status = run.read_status()
    return {
        "variant": a.variant,
        "seed": a.seed,
        "steps": len(steps),
        "steps_to_0.8": hit["step"] if hit else None,
        "seconds_to_0.8": round(hit["time"] - start, 1) if hit else None,
        "steps_per_s": round(len(steps) / (steps[-1]["time"] - start), 2),
        "first_reward": round(steps[0]["reward"], 3),
        "last10_reward": round(statistics.mean(r["reward"] for r in steps[-10:]), 3),
        "heldout_before": evals[0] if evals else None,
        "heldout_after": evals[-1] if evals else None,
        "trainable_params": status.get("trainable_params"),
        "total_params": status.get("total_params"),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "curve": [[round(r["time"] - start, 1), r["step"], round(r["reward"], 3)] for r in steps][::10],
    }


def spawn(variant: str, seed: int, a, runs: str) -> dict:
    with tempfile.NamedTemporaryFile("r", suffix=".json", delete=False) as f:
        out = f.name
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.trl_lora",
        "_child",
        variant,
        "--seed",
        str(seed),
        "--runs",
        runs,
        "--max-steps",
        str(a.max_steps),
        "--seconds",
        str(a.seconds),
        "--lora-lr",
        str(a.lora_lr),
        "--out",
        out,
    ]
    subprocess.run(
        cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ)
    )
    return json.loads(Path(out).read_text())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("_child", nargs="?")
    ap.add_argument("variant", nargs="?")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    ap.add_argument("--max-steps", type=int, default=600)
    ap.add_argument("--seconds", type=float, default=900.0)
    ap.add_argument("--lora-lr", type=float, default=0.005)
    ap.add_argument("--runs", default=None)
    ap.add_argument("--out", default="trl_lora.json")
    a = ap.parse_args()
    if a._child == "_child":
        Path(a.out).write_text(json.dumps(child(a)))
        return
    start = machine()
    runs = a.runs or tempfile.mkdtemp(prefix="bench-lora-")
    results = []
    for i, seed in enumerate(a.seeds):
        for variant in ("full", "lora") if i % 2 == 0 else ("lora", "full"):
            r = spawn(variant, seed, a, runs)
            print(json.dumps({k: v for k, v in r.items() if k != "curve"}), flush=True)
            results.append(r)

    def summary(variant: str) -> dict:
        mine = [r for r in results if r["variant"] == variant]
        hit = [r for r in mine if r["steps_to_0.8"] is not None]
        return {
            "reached_0.8": f"{len(hit)}/{len(mine)}",
            "median_steps_to_0.8": statistics.median(r["steps_to_0.8"] for r in hit) if hit else None,
            "median_seconds_to_0.8": statistics.median(r["seconds_to_0.8"] for r in hit) if hit else None,
            "median_steps_per_s": statistics.median(r["steps_per_s"] for r in mine),
            "trainable_params": mine[0]["trainable_params"],
            "total_params": mine[0]["total_params"],
        }

    write_result(
        a.out,
        {
            "what": "letters demo, GRPO from random init: steps and seconds until a step's mean reward reaches 0.8",
            "lora_settings": {**LORA, "learning_rate": a.lora_lr},
            "summary": {"full": summary("full"), "lora": summary("lora")},
            "runs": results,
            "machine": {**start, "load_avg_1m_end": machine()["load_avg_1m"]},
        },
    )


if __name__ == "__main__":
    main()
