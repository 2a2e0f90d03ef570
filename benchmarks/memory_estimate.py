"""The memory estimate of the `trl` engine's config check vs the measured peak RSS of the run.

For each case, the estimate comes from ``check_all`` (the same check the studio and ``aworld-train
check`` show); the run is ``python -m engines run <run_dir>`` in a wrapper process that reads the
peak RSS of its descendants (``RUSAGE_CHILDREN``: the largest training process). Cases: the two demo
models (letters: plain GRPO with the demo's KL reference model; calc: a tool-using agent), each with
full fine-tuning and LoRA, and a wider model built here (random weights, ~74 M parameters), where
weights, gradients and optimizer states are most of the memory rather than the Python runtime.

    python -m benchmarks.memory_estimate [--only letters-full ...]

Goal: every case within ±35 % of the measured peak. Results: benchmarks/results/memory_estimate.json.
"""

from __future__ import annotations

from engines.core.modules import Modules

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.results_file import machine, write_result

ROOT = Path(__file__).resolve().parent.parent
A = ROOT / "assets"
LETTERS = dict(
    agent=A / "agents/letters_agent.yaml",
    train=A / "datasets/letters_train.jsonl",
    reward=f"{A / 'rewards/letter_reward.py'}:letter_reward",
)
CALC = dict(
    agent=A / "agents/calc_agent.yaml",
    train=A / "datasets/calc_train.jsonl",
    reward=f"{A / 'rewards/calc_reward.py'}:calc_reward",
)
DEMO = {
    "learning_rate": 1e-3,
    "prompts_per_step": 8,
    "num_generations": 16,
    "beta": 0.04,
    "max_completion_length": 2,
    "eval_steps": 0,
    "save_steps": 10**6,
}
LORA = {"use_peft": True, "lora_r": 8, "lora_alpha": 16}
GOAL = 0.35

WRAPPER = (
    "import resource, subprocess, sys\n"
    "rc = subprocess.run([sys.executable, '-m', 'engines', 'run', sys.argv[1]]).returncode\n"
    "print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def wide_model(folder: Path) -> Path:
    """A Qwen2 model of ~74 M parameters with the letters tokenizer (random weights: memory only)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen2Config

    tok = AutoTokenizer.from_pretrained(A / "models/tiny-letters")
    cfg = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=768,
        intermediate_size=2048,
        num_hidden_layers=12,
        num_attention_heads=12,
        num_key_value_heads=3,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    AutoModelForCausalLM.from_config(cfg).save_pretrained(folder)
    for f in (A / "models/tiny-letters").iterdir():
        if f.name.startswith(("tokenizer", "chat_template", "generation_config")):
            shutil.copy(f, folder / f.name)
    return folder


def cases(wide: Path) -> list[dict]:
    letters = {**DEMO, "max_steps": 30}
    calc = {
        "learning_rate": 1e-5,
        "prompts_per_step": 2,
        "num_generations": 8,
        "max_steps": 6,
        "eval_steps": 0,
        "save_steps": 10**6,
    }
    wide_cfg = {
        **DEMO,
        "model": str(wide),
        "prompts_per_step": 2,
        "num_generations": 8,
        "max_completion_length": 8,
        "max_steps": 4,
    }
    return [
        {"name": "letters-full", **LETTERS, "config": letters},
        {"name": "letters-lora", **LETTERS, "config": {**letters, **LORA}},
        {"name": "calc-full", **CALC, "config": calc},
        {"name": "calc-lora", **CALC, "config": {**calc, **LORA}},
        {"name": "wide74m-full", **LETTERS, "config": wide_cfg},
        {"name": "wide74m-lora", **LETTERS, "config": {**wide_cfg, **LORA}},
    ]


def measure(case: dict, runs: Path) -> dict:
    from engines.core.checks import check_all
    from engines.core.prepare import prepare_run

    results = {
        r.module: r
        for r in check_all(Modules(str(case["agent"]), str(case["train"]), None, case["reward"], case["config"], "trl"))
    }
    config = results["config"]
    assert config.status != "error", config.message
    memory = config.details["memory"]
    run = prepare_run(
        Modules(str(case["agent"]), str(case["train"]), None, case["reward"], case["config"], "trl"), runs_dir=str(runs)
    )
    t0 = time.time()
    out = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(run.path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    rc, peak_kb = (int(x) for x in out.stdout.split()[-2:])
    assert rc == 0, run.log_path.read_text()[-3000:]
    peak = peak_kb * 1024
    estimate = memory["per_process"]
    return {
        "name": case["name"],
        "estimate_mb": round(estimate / 2**20, 1),
        "measured_peak_rss_mb": round(peak / 2**20, 1),
        "error": round(estimate / peak - 1, 3),
        "within_goal": abs(estimate / peak - 1) <= GOAL,
        "parts_mb": {k: round(v / 2**20, 1) for k, v in memory["parts"].items()},
        "total_params": memory["total_params"],
        "trainable_params": memory["trainable_params"],
        "steps": run.read_status().get("step"),
        "seconds": round(time.time() - t0, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--out", default="memory_estimate.json")
    a = ap.parse_args()
    start = machine()
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        wide = wide_model(Path(tmp) / "wide74m")
        rows = []
        for case in cases(wide):
            if a.only and case["name"] not in a.only:
                continue
            row = measure(case, Path(tmp) / "runs")
            print(json.dumps(row), flush=True)
            rows.append(row)
    summary = {
        "goal": f"estimate within ±{GOAL:.0%} of the measured peak RSS of the training process (CPU)",
        "cases": rows,
        "passed": all(r["within_goal"] for r in rows),
        "machine": {**start, "load_avg_1m_end": machine()["load_avg_1m"]},
    }
    path = write_result(a.out, summary)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
