"""How the ``trl`` engine's settings (its current keys, engines/trl/config.py) consume data: the
:class:`~engines.fit.data_fit.DataFit` its processor hands to the engine-neutral checks.

GRPO (TRL's ``RepeatSampler``): one optimizer step generates for ``prompts_per_step ×
gradient_accumulation_steps`` distinct prompts and drops an incomplete last batch, so fewer usable
rows than that train 0 steps. SFT: a step takes ``prompts_per_step × gradient_accumulation_steps``
rows, a partial last batch included. The memory floor is the fp32 logits of one forward batch
(``prompts_per_step × num_generations`` sequences for GRPO) over the vocabulary.
"""

from __future__ import annotations

from typing import Any

from ..fit.data_fit import DataFit

LOGIT_BYTES = 4  # TRL computes log-probabilities from fp32 logits


def trl_data_fit(cfg: dict[str, Any], vocab_size: int | None, memory_bytes: int | None, memory_where: str) -> DataFit:
    pps, ga = int(cfg["prompts_per_step"]), int(cfg["gradient_accumulation_steps"])
    grpo = cfg["mode"] == "grpo"
    gens = int(cfg["num_generations"]) if grpo else 1
    fit = DataFit(
        prompts_per_step=pps * ga,
        step_explain=f"prompts_per_step={pps} × gradient_accumulation_steps={ga}",
        step_keys=["prompts_per_step", "gradient_accumulation_steps"] if ga > 1 else ["prompts_per_step"],
        drop_last=grpo,
        max_steps=int(cfg["max_steps"]),
        completion_tokens=int(cfg["max_completion_length"]) if grpo else None,
        completion_key="max_completion_length",
    )
    if vocab_size and memory_bytes:
        fit.sequences = pps * gens
        fit.sequences_explain = (
            f"prompts_per_step={pps} × num_generations={gens} = {pps * gens:,}" if grpo else f"prompts_per_step={pps}"
        )
        fit.sequence_keys = (
            ["prompts_per_step", "num_generations", "max_completion_length"] if grpo else ["prompts_per_step"]
        )
        fit.bytes_per_token = vocab_size * LOGIT_BYTES
        fit.bytes_explain = f"{vocab_size:,} logits × {LOGIT_BYTES} bytes"
        fit.memory_bytes, fit.memory_where = memory_bytes, memory_where
    return fit
