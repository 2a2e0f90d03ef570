"""Benchmarks of the `trl` engine on the shipped demo (2-core CPU), written to benchmarks/results/trl_engine.json.

(a) learning: mean reward per step from the first step to >= 0.8, and held-out (test) reward before/after;
(b) throughput: steady-state steps/s through our engine vs a bare TRL script with identical GRPO settings,
    alternated A/B/A/B in one run on one machine (ratio of medians, goal >= 0.97);
(c) peak memory (max RSS) of the training process.

    python -m benchmarks.trl_engine [--rounds 4] [--steps 200] [--seconds 90] [--skip-learning]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
AGENT = ASSETS / "agents/letters_agent.yaml"
TRAIN = ASSETS / "datasets/letters_train.jsonl"
TEST = ASSETS / "datasets/letters_test.jsonl"
REWARD = f"{ASSETS / 'rewards/letter_reward.py'}:letter_reward"
CONFIG = ASSETS / "configs/letters_grpo.yaml"
WARMUP_STEPS = 10


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_ours(a) -> dict:
    """Train through AgentTrainer (the engine's whole path: checks, run dir, callbacks, samples, TensorBoard)."""
    import yaml

    from engines import AgentTrainer

    cfg = yaml.safe_load(CONFIG.read_text())
    cfg.update(max_steps=a.steps, seed=a.seed, save_steps=10**6)
    if a.mode == "throughput":
        cfg.update(eval_steps=0)
    trainer = AgentTrainer(str(AGENT), str(TRAIN), str(TEST), REWARD, cfg, run_path=a.runs, train_engine_name="trl")
    run = trainer.train_processor.run
    if a.seconds:  # a watchdog asks for a stop once the time budget since the first step is spent

        def watchdog():
            while True:
                rows = [r for r in run.read_jsonl("metrics.jsonl") if "loss" in r]
                if rows and time.time() - (rows[0]["time"] - rows[0]["step_time"]) > a.seconds:
                    run.request_stop("time budget")
                    return
                time.sleep(0.5)

        threading.Thread(target=watchdog, daemon=True).start()
    trainer.train()
    rows = run.read_jsonl("metrics.jsonl")
    steps = [r for r in rows if "loss" in r]
    ends = [r["time"] for r in steps]
    start = steps[0]["time"] - steps[0]["step_time"]
    out = {
        "steps": len(steps),
        "step_end_times": [t - start for t in ends],
        "num_tokens": steps[-1].get("num_tokens"),
        "rewards": [r["reward"] for r in steps],
        "eval": [{"step": r["step"], "reward": r["eval/reward"]} for r in rows if "eval/reward" in r],
        "peak_rss_mb": peak_rss_mb(),
        "run_dir": str(run.path),
    }
    return out


def child_bare(a) -> dict:
    """The same GRPO settings straight into TRL: no project code at all."""
    import yaml
    from datasets import Dataset
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    cfg = yaml.safe_load(CONFIG.read_text())
    agent = yaml.safe_load(AGENT.read_text())
    model = str((AGENT.parent / agent["model"]).resolve())
    rows = [json.loads(line) for line in TRAIN.read_text().splitlines() if line.strip()]
    ds = Dataset.from_list(
        [
            {
                "prompt": [
                    {"role": "system", "content": agent["system_prompt"]},
                    {"role": "user", "content": r["prompt"]},
                ],
                "answer": r["answer"],
            }
            for r in rows
        ]
    )

    def letter_reward(prompts, completions, answer, **kw):
        out = []
        for c, ans in zip(completions, answer):
            t = c[-1]["content"].lstrip() if isinstance(c, list) else c.lstrip()
            out.append(1.0 if t[:1] == ans else 0.2 if t[:1].isupper() else 0.0)
        return out

    times: list[float] = []
    tokens: list[float] = []

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            times.append(time.time())

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "num_tokens" in logs:
                tokens.append(logs["num_tokens"])

    out_dir = tempfile.mkdtemp(prefix="bare-trl-")
    args = GRPOConfig(
        output_dir=out_dir,
        max_steps=a.steps,
        learning_rate=cfg["learning_rate"],
        lr_scheduler_type=cfg["lr_scheduler_type"],
        per_device_train_batch_size=cfg["prompts_per_step"] * cfg["num_generations"],
        num_generations=cfg["num_generations"],
        max_completion_length=cfg["max_completion_length"],
        beta=cfg["beta"],
        temperature=1.0,
        top_p=1.0,
        disable_dropout=True,
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=a.seed,
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    tok = AutoTokenizer.from_pretrained(model)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[letter_reward],
        args=args,
        train_dataset=ds,
        processing_class=tok,
        callbacks=[Clock()],
    )
    import transformers

    trainer.remove_callback(transformers.PrinterCallback)
    t0 = time.time()
    trainer.train()
    return {
        "steps": len(times),
        "step_end_times": [t - t0 for t in times],
        "peak_rss_mb": peak_rss_mb(),
        "num_tokens": tokens[-1] if tokens else None,
    }


def steady_rate(end_times: list[float]) -> float:
    """Steps per second after the warm-up steps (imports, first allocations)."""
    t = end_times[WARMUP_STEPS - 1 :]
    return (len(t) - 1) / (t[-1] - t[0])


def spawn(kind: str, mode: str, steps: int, seconds: float, runs: str, seed: int) -> dict:
    with tempfile.NamedTemporaryFile("r", suffix=".json", delete=False) as f:
        out = f.name
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.trl_engine",
        "_child",
        kind,
        "--mode",
        mode,
        "--steps",
        str(steps),
        "--seconds",
        str(seconds),
        "--runs",
        runs,
        "--seed",
        str(seed),
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
    ap.add_argument("kind", nargs="?")
    ap.add_argument("--mode", default="learning")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=90.0)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", default=None)
    ap.add_argument("--skip-learning", action="store_true", help="throughput and memory only")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/trl_engine.json"))
    a = ap.parse_args()
    if a._child == "_child":
        result = child_ours(a) if a.kind == "ours" else child_bare(a)
        Path(a.out).write_text(json.dumps(result))
        return

    runs = a.runs or tempfile.mkdtemp(prefix="bench-runs-")
    report: dict = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_avg_1m_start": os.getloadavg()[0],
        },
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
    }

    # (a) learning, one run per seed, 90 s budget
    learning = []
    for seed in () if a.skip_learning else (0, 1, 2):
        r = spawn("ours", "learning", 2000, a.seconds, runs, seed)
        t_08 = next((t for t, x in zip(r["step_end_times"], r["rewards"]) if x >= 0.8), None)
        learning.append(
            {
                "seed": seed,
                "first_reward": r["rewards"][0],
                "time_to_reward_0.8_s": t_08,
                "steps": r["steps"],
                "final_reward_last10": statistics.mean(r["rewards"][-10:]),
                "heldout_reward_before": r["eval"][0]["reward"],
                "heldout_reward_after": r["eval"][-1]["reward"],
                "peak_rss_mb": round(r["peak_rss_mb"], 1),
                "curve": [[round(t, 2), round(x, 3)] for t, x in zip(r["step_end_times"], r["rewards"])][::5],
            }
        )
    if learning:
        report["learning"] = {
            "goal": "mean reward from <= 0.2 to >= 0.8 within 90 s of training; held-out prompts improve",
            "runs": learning,
            "passed": all(
                r["first_reward"] <= 0.2
                and r["time_to_reward_0.8_s"] is not None
                and r["time_to_reward_0.8_s"] <= 90
                and r["heldout_reward_after"] > r["heldout_reward_before"]
                for r in learning
            ),
        }

    # (b) throughput, alternating ours/bare in ABBA blocks with identical settings
    rates = {"ours": [], "bare": []}
    rss = {"ours": [], "bare": []}
    tokens = {"ours": [], "bare": []}
    order = []
    for i in range(a.rounds):
        order += ["ours", "bare"] if i % 2 == 0 else ["bare", "ours"]
    for kind in order:
        r = spawn(kind, "throughput", a.steps, 0, runs, 0)
        rates[kind].append(steady_rate(r["step_end_times"]))
        rss[kind].append(r["peak_rss_mb"])
        tokens[kind].append(r["num_tokens"])
    ratio = statistics.median(rates["ours"]) / statistics.median(rates["bare"])
    pair_ratios = [o / b for o, b in zip(rates["ours"], rates["bare"])]  # round i: the two adjacent runs
    report["throughput"] = {
        "goal": "ours / bare >= 0.97",
        "steps_per_run": a.steps,
        "warmup_steps_excluded": WARMUP_STEPS,
        "order": order,
        "steps_per_s": {k: [round(x, 2) for x in v] for k, v in rates.items()},
        "tokens_seen_per_run": tokens,  # same prompts and sampling: equal totals show identical work
        "round_ratios": [round(x, 3) for x in pair_ratios],
        "ratio_of_medians": round(ratio, 3),
        "median_round_ratio": round(statistics.median(pair_ratios), 3),
        "passed": ratio >= 0.97,
    }
    report["memory"] = {"peak_rss_mb": {k: [round(x, 1) for x in v] for k, v in rss.items()}}
    report["machine"]["load_avg_1m_end"] = os.getloadavg()[0]
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(report, indent=1))
    summary = {k: v for k, v in report.items() if k != "learning"}
    summary["learning"] = [{k: v for k, v in r.items() if k != "curve"} for r in learning]
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
