"""Call reward functions exactly as TRL's GRPOTrainer does (``_calculate_rewards`` in trl 1.16): every
input column but prompt/completion/completion_ids as a list, ``trainer_state``, ``log_extra``,
``log_metric``; prompts and completions conversational when the prompts are chat."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable


def call_like_grpo(
    funcs: list[Callable], inputs: list[dict], completion_texts: list[str], tokenizer: Any
) -> tuple[list[list[Any]], dict[str, list], dict[str, list]]:
    """``inputs``: the training rows (one per completion). Returns (values per function, logged extra
    columns, logged metrics)."""
    from transformers import TrainerState

    prompts = [x["prompt"] for x in inputs]
    chat = isinstance(prompts[0], list)
    completions = [[{"role": "assistant", "content": t}] if chat else t for t in completion_texts]
    completion_ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in completion_texts]
    keys = [k for k in inputs[0] if k not in ("prompt", "completion", "completion_ids")]
    kwargs: dict[str, Any] = {k: [x[k] for x in inputs] for k in keys}
    extra: dict[str, list] = defaultdict(list)
    metrics: dict[str, list] = defaultdict(list)
    kwargs["trainer_state"] = TrainerState()
    kwargs["log_extra"] = lambda column, values: extra[column].extend(values)
    kwargs["log_metric"] = lambda name, value: metrics[name].append(value)
    out = [f(prompts=prompts, completions=completions, completion_ids=completion_ids, **kwargs) for f in funcs]
    return out, dict(extra), dict(metrics)
