#!/usr/bin/env python
"""Bare TRL GRPO on the shipped demo assets -- no project code, only trl/transformers/datasets/torch.

Proves the letters demo learns fast on CPU and that the tool demo really calls its tool:

    python benchmarks/bare_trl_grpo.py                             # letters task, 90 s budget, seed 0
    python benchmarks/bare_trl_grpo.py --seed 1 --out r.json
    python benchmarks/bare_trl_grpo.py --beta 0.04                 # KL to the initial model: no letter gets stuck
    python benchmarks/bare_trl_grpo.py --task calc --max-steps 5   # tool-calling check (jmespath on transformers<5.13)

Letters: conversational prompts [system (from agents/letters_agent.yaml), user], reward assets/rewards/letter_reward.py,
GRPO 8 prompts x 16 completions per step, 2 new tokens, lr 1e-3 constant, beta 0 (unless --beta). Greedy and sampled
accuracy on the held-out phrasings (datasets/letters_test.jsonl) before and after. Prints one JSON summary (also
written to --out): time_to_reward_0.8_s (wall time since the start of step 1), cpu_s_to_reward_0.8, steps_per_s,
first_reward, final_reward, test_before, test_after, peak_rss_mb, per-step rewards/times, the GRPO config.

Calc: GRPOTrainer(..., tools=[add]) with agents/calc_agent.yaml; reports TRL's tools/call_frequency per step.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import torch  # noqa: E402
import yaml  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback  # noqa: E402
from transformers.trainer_callback import PrinterCallback, ProgressCallback  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def load_fn(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def final_text(completion) -> str:
    """Conversational completion (list of messages) -> content of the last assistant message."""
    if isinstance(completion, str):
        return completion
    for msg in reversed(completion):
        if msg.get("role") == "assistant":
            return msg.get("content") or ""
    return ""


class Recorder(TrainerCallback):
    """Per-step log rows with wall time since the start of step 1; stops on a time budget."""

    def __init__(self, seconds: float | None, stop_at_reward: float | None = None):
        self.seconds = seconds
        self.stop_at_reward = stop_at_reward
        self.t0 = None
        self.rows = []

    def on_step_begin(self, args, state, control, **kw):
        if self.t0 is None:
            self.t0 = time.perf_counter()
            self.c0 = time.process_time()

    def on_log(self, args, state, control, logs=None, **kw):
        if not logs or "reward" not in logs:
            return
        row = {
            "step": state.global_step,
            "t": round(time.perf_counter() - self.t0, 3),
            "cpu_s": round(time.process_time() - self.c0, 3),  # process CPU time (all threads): robust to a busy box
        }
        row.update({k: (round(v, 4) if isinstance(v, float) else v) for k, v in logs.items()})
        self.rows.append(row)
        print(
            f"step {row['step']:4d}  t={row['t']:7.2f}s  reward={logs['reward']:.3f}"
            + (f"  tools/call_frequency={logs['tools/call_frequency']:.2f}" if "tools/call_frequency" in logs else ""),
            flush=True,
        )
        if self.seconds is not None and row["t"] >= self.seconds:
            control.should_training_stop = True
        if self.stop_at_reward is not None and logs["reward"] >= self.stop_at_reward:
            control.should_training_stop = True


@torch.no_grad()
def evaluate_letters(model, tok, rows, system, samples: int, seed: int):
    """Greedy accuracy and sampled (temperature 1) accuracy on held-out prompts, via the chat template."""
    model.eval()
    convs = [[{"role": "system", "content": system}, {"role": "user", "content": r["prompt"]}] for r in rows]
    enc = tok.apply_chat_template(
        convs, add_generation_prompt=True, padding=True, return_tensors="pt", return_dict=True
    )
    answers = [r["answer"] for r in rows]

    def acc(out):
        texts = tok.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        return sum(t.lstrip()[:1] == a for t, a in zip(texts, answers)) / len(rows), texts

    greedy, texts = acc(model.generate(**enc, max_new_tokens=2, do_sample=False))
    torch.manual_seed(seed)
    sampled = 0.0
    for _ in range(samples):
        sampled += acc(model.generate(**enc, max_new_tokens=2, do_sample=True, temperature=1.0, top_k=0))[0]
    model.train()
    return greedy, sampled / samples, texts


CONFIG_KEYS = (
    "per_device_train_batch_size",
    "num_generations",
    "max_completion_length",
    "learning_rate",
    "lr_scheduler_type",
    "beta",
    "scale_rewards",
    "loss_type",
    "temperature",
    "disable_dropout",
    "use_cpu",
    "bf16",
    "gradient_checkpointing",
    "max_tool_calling_iterations",
)


def config_summary(cfg) -> dict:
    return {k: getattr(cfg, k) for k in CONFIG_KEYS}


def grpo_args(args, out_dir, **over):
    base = dict(
        output_dir=out_dir,
        # 8 prompts x 16 completions per step (batch size counts completions)
        per_device_train_batch_size=128,
        num_generations=16,
        max_completion_length=2,
        learning_rate=1e-3,
        lr_scheduler_type="constant",
        warmup_steps=0,
        beta=0.0,
        temperature=1.0,
        disable_dropout=True,
        use_cpu=True,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        max_steps=args.max_steps,
        seed=args.seed,
        data_seed=args.seed,
        dataloader_num_workers=0,
    )
    base.update(over)
    return GRPOConfig(**base)


def run_letters(args) -> dict:
    agent = yaml.safe_load((ASSETS / "agents" / "letters_agent.yaml").read_text())
    system = agent["system_prompt"]
    model_path = (ASSETS / "agents" / agent["model"]).resolve()
    letter_reward = load_fn(ASSETS / "rewards" / "letter_reward.py", "letter_reward")
    train = read_jsonl(ASSETS / "datasets" / "letters_train.jsonl")
    test = read_jsonl(ASSETS / "datasets" / "letters_test.jsonl")

    ds = Dataset.from_list(
        [
            {
                "prompt": [{"role": "system", "content": system}, {"role": "user", "content": r["prompt"]}],
                "answer": r["answer"],
            }
            for r in train
        ]
    )

    def reward_fn(prompts, completions, answer, **kw):
        return [letter_reward(final_text(c), a) for c, a in zip(completions, answer)]

    reward_fn.__name__ = "letter_reward"

    torch.manual_seed(args.seed)
    tok = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    test_before, test_before_sampled, _ = evaluate_letters(model, tok, test, system, args.eval_samples, args.seed)

    cfg = grpo_args(
        args,
        "/tmp/bare_trl_grpo_letters",
        max_completion_length=agent.get("max_tokens", 2),
        temperature=agent.get("temperature", 1.0),
        learning_rate=args.lr,
        scale_rewards=args.scale_rewards,
        beta=args.beta,
    )
    rec = Recorder(args.seconds, args.stop_at_reward)
    trainer = GRPOTrainer(model=model, reward_funcs=reward_fn, args=cfg, train_dataset=ds, processing_class=tok)
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(rec)
    t_train = time.perf_counter()
    trainer.train()
    train_wall = time.perf_counter() - t_train
    test_after, test_after_sampled, texts = evaluate_letters(
        trainer.model, tok, test, system, args.eval_samples, args.seed
    )

    rows = rec.rows
    hit = next((r for r in rows if r["reward"] >= 0.8), None)
    last_t = rows[-1]["t"] if rows else float("nan")
    return {
        "task": "letters",
        "seed": args.seed,
        "grpo_config": config_summary(cfg),
        "model": str(model_path.relative_to(ROOT)),
        "time_to_reward_0.8_s": hit["t"] if hit else None,
        "cpu_s_to_reward_0.8": hit["cpu_s"] if hit else None,
        "step_to_reward_0.8": hit["step"] if hit else None,
        "steps": len(rows),
        "steps_per_s": round((len(rows) - 1) / (last_t - rows[0]["t"]), 2) if len(rows) > 1 else None,
        "train_wall_s": round(train_wall, 2),
        "first_reward": rows[0]["reward"] if rows else None,
        "final_reward": rows[-1]["reward"] if rows else None,
        "final_reward_mean_last5": round(sum(r["reward"] for r in rows[-5:]) / len(rows[-5:]), 4) if rows else None,
        "test_before": test_before,
        "test_after": test_after,
        "test_before_sampled": round(test_before_sampled, 4),
        "test_after_sampled": round(test_after_sampled, 4),
        "test_after_greedy_outputs": texts,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "torch_threads": torch.get_num_threads(),
        "rewards": [r["reward"] for r in rows],
        "times": [r["t"] for r in rows],
    }


def run_calc(args) -> dict:
    agent = yaml.safe_load((ASSETS / "agents" / "calc_agent.yaml").read_text())
    system = agent["system_prompt"]
    model_path = (ASSETS / "agents" / agent["model"]).resolve()
    tools = []
    for ref in agent["tools"]:
        file, _, name = ref.rpartition(":")
        tools.append(load_fn((ASSETS / "agents" / file).resolve(), name))
    calc_reward = load_fn(ASSETS / "rewards" / "calc_reward.py", "calc_reward")
    train = read_jsonl(ASSETS / "datasets" / "calc_train.jsonl")
    ds = Dataset.from_list(
        [
            {
                "prompt": [{"role": "system", "content": system}, {"role": "user", "content": r["prompt"]}],
                "answer": r["answer"],
            }
            for r in train
        ]
    )
    samples = []

    def reward_fn(prompts, completions, answer, **kw):
        if len(samples) < 3:
            samples.append(completions[0])
        return [calc_reward(final_text(c), a) for c, a in zip(completions, answer)]

    reward_fn.__name__ = "calc_reward"

    torch.manual_seed(args.seed)
    tok = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    cfg = grpo_args(
        args,
        "/tmp/bare_trl_grpo_calc",
        per_device_train_batch_size=args.calc_batch,
        num_generations=args.calc_generations,
        max_completion_length=agent.get("max_tokens", 48),
        temperature=agent.get("temperature", 1.0),
        max_tool_calling_iterations=max(1, int(agent.get("max_steps", 3)) - 1),
        learning_rate=args.calc_lr,
    )
    rec = Recorder(args.seconds, None)
    trainer = GRPOTrainer(
        model=model, reward_funcs=reward_fn, args=cfg, train_dataset=ds, processing_class=tok, tools=tools
    )
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(rec)
    t_train = time.perf_counter()
    trainer.train()
    rows = rec.rows
    freq = [r.get("tools/call_frequency", 0.0) for r in rows]
    return {
        "task": "calc",
        "seed": args.seed,
        "grpo_config": config_summary(cfg),
        "frac_reward_zero_std": [r.get("frac_reward_zero_std") for r in rows],
        "model": str(model_path.relative_to(ROOT)),
        "steps": len(rows),
        "train_wall_s": round(time.perf_counter() - t_train, 2),
        "steps_per_s": round((len(rows) - 1) / (rows[-1]["t"] - rows[0]["t"]), 2) if len(rows) > 1 else None,
        "rewards": [r["reward"] for r in rows],
        "tools/call_frequency": freq,
        "tools/failure_frequency": [r.get("tools/failure_frequency", 0.0) for r in rows],
        "tool_call_frequency_mean": round(sum(freq) / max(1, len(freq)), 4),
        "completion_mean_length": [r.get("completions/mean_length") for r in rows],
        "sample_completions": samples,
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", choices=["letters", "calc"], default="letters")
    ap.add_argument("--max-steps", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=90.0, help="training time budget (since step 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="write the JSON summary here")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    ap.add_argument("--eval-samples", type=int, default=8, help="sampled passes over the test set")
    ap.add_argument("--stop-at-reward", type=float, default=None, help="stop once a step's mean reward reaches this")
    ap.add_argument("--lr", type=float, default=1e-3, help="letters learning rate (constant schedule)")
    ap.add_argument("--beta", type=float, default=0.0, help="KL coefficient (>0 loads a reference model)")
    ap.add_argument("--scale-rewards", default="group", choices=["group", "batch", "none"])
    ap.add_argument("--calc-batch", type=int, default=16)
    ap.add_argument("--calc-generations", type=int, default=8)
    ap.add_argument("--calc-lr", type=float, default=1e-4)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    summary = run_letters(args) if args.task == "letters" else run_calc(args)
    text = json.dumps(summary, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
