"""The ``trl`` engine's settings (validated by engines.config)."""
from __future__ import annotations

from typing import Any

from ..check_result import CheckError
from ..config import ConfigField

FIELDS: list[ConfigField] = [
    ConfigField("mode", str, "grpo", "grpo (reinforcement learning) or sft (supervised fine-tuning)",
                choices=("grpo", "sft"), main=True),
    ConfigField("max_steps", int, 100, "optimizer steps to train", min=1, max=10_000_000, main=True),
    ConfigField("learning_rate", float, 1e-5, "peak learning rate", min=0.0, max=1.0, main=True),
    ConfigField("prompts_per_step", int, 4, "prompts per optimizer step (per device)", min=1, max=100_000, main=True),
    ConfigField("num_generations", int, 8, "GRPO: completions sampled per prompt (the group)", min=2, max=1024,
                main=True),
    ConfigField("beta", float, 0.0, "GRPO: KL coefficient (0 = no reference model)", min=0.0, max=100.0, main=True),
    ConfigField("max_completion_length", int, 256, "tokens per completion (defaults to the agent's max_tokens)",
                min=1, max=1_000_000, main=True),
    ConfigField("temperature", float, 1.0, "sampling temperature (defaults to the agent's)", min=0.0, max=5.0),
    ConfigField("top_p", float, 1.0, "nucleus sampling (defaults to the agent's)", min=0.0, max=1.0),
    ConfigField("lr_scheduler_type", str, "constant", "learning-rate schedule",
                choices=("constant", "linear", "cosine", "constant_with_warmup")),
    ConfigField("warmup_steps", int, 0, "learning-rate warmup steps", min=0, max=10_000_000),
    ConfigField("gradient_accumulation_steps", int, 1, "micro-batches per optimizer step", min=1, max=4096),
    ConfigField("weight_decay", float, 0.0, "AdamW weight decay", min=0.0, max=1.0),
    ConfigField("max_grad_norm", float, 1.0, "gradient clipping", min=0.0, max=1e6),
    ConfigField("seed", int, 42, "random seed", min=0, max=2**31 - 1),
    ConfigField("device", str, "auto", "auto (CUDA if present), cpu or cuda", choices=("auto", "cpu", "cuda")),
    ConfigField("precision", str, "auto", "auto (bf16 on a GPU that has it, else fp32), fp32, bf16 or fp16",
                choices=("auto", "fp32", "bf16", "fp16")),
    ConfigField("gradient_checkpointing", bool, False, "trade compute for memory on large models"),
    ConfigField("logging_steps", int, 1, "log metrics every N steps", min=1, max=1_000_000),
    ConfigField("save_steps", int, 50, "checkpoint every N steps (and always at the end or on stop)", min=1,
                max=10_000_000),
    ConfigField("save_total_limit", int, 2, "checkpoints kept", min=1, max=1000),
    ConfigField("samples_per_step", int, 2, "rollouts written to samples.jsonl per step", min=0, max=1000),
    ConfigField("eval_steps", int, 0, "score the test set with the reward every N steps (0 = only at the end)",
                min=0, max=10_000_000),
    ConfigField("eval_samples", int, 32, "test prompts scored per evaluation", min=1, max=100_000),
    ConfigField("resume_from_checkpoint", str, None, "a checkpoint folder (of this or another run) to resume",
                nullable=True),
    ConfigField("disable_dropout", bool, True, "GRPO: turn dropout off (recommended for RL)"),
    ConfigField("mask_truncated_completions", bool, False, "GRPO: no loss on completions cut at the length limit"),
]


def cross_check(cfg: dict[str, Any]) -> list[str]:
    warnings: list[str] = []
    if cfg["mode"] == "grpo" and cfg["num_generations"] < 2:
        raise CheckError("config", "`num_generations` must be at least 2 for GRPO",
                         "GRPO compares completions within a group")
    if cfg["mode"] == "grpo" and cfg["num_generations"] < 8:
        warnings.append("fewer than 8 generations per prompt: groups often have zero reward spread (no gradient)")
    if cfg["lr_scheduler_type"] != "constant" and cfg["max_steps"] < 20:
        warnings.append("a decaying schedule over few steps drops the learning rate fast")
    if cfg["device"] == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise CheckError("config", "`device: cuda` but no CUDA GPU is visible", "use device: auto or cpu")
    if cfg["precision"] in ("bf16", "fp16") and cfg["device"] == "cpu":
        raise CheckError("config", f"`precision: {cfg['precision']}` needs a GPU here", "use precision: auto or fp32")
    return warnings
