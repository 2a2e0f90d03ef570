"""The probe's samples: ``k`` completions for each of ``N`` training prompts (a seeded random choice) from the base
model through the agent's own loop, scored with the run's reward — the evaluation's ``evaluate_model``
(engines/inference/evaluation.py), not a second rollout — with the generation timed apart from the model's load, and
one training pass (forward and backward) timed on a few of the sampled sequences.

Runs in the probe's isolated child (engines/probe/run.py): it loads the model and calls user code (reward, tools)."""

from __future__ import annotations

import random
import time
from typing import Any

from ..inference.checkpoints import ModelRef
from ..inference.evaluation import evaluate_model, load_generator
from ..isolation.sandbox import report_progress
from .settings import ProbeSettings

#: a sample's completion is kept up to this many characters in the stored report
KEPT_CHARS = 2000
#: sequences the training pass is timed on (then scaled to a step's)
TIMED_SEQUENCES = 8


def pick_rows(n_rows: int, prompts: int, seed: int) -> list[int]:
    """``prompts`` row indices of the training set, a seeded random choice (every row when it has fewer), in order."""
    if prompts >= n_rows:
        return list(range(n_rows))
    return sorted(random.Random(seed).sample(range(n_rows), prompts))


class TimedGenerator:
    """An ``AgentGenerator`` whose rollouts are timed (what the evaluation calls ``generator``)."""

    def __init__(self, generator: Any):
        self.inner, self.seconds = generator, 0.0

    @property
    def tokenizer(self) -> Any:
        return self.inner.tokenizer

    def run(self, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return self.inner.run(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t0


def sample(
    settings: ProbeSettings, agent: Any, table: Any, columns: Any, reward: Any, rows: list[int], samples: int, seed: int
) -> dict[str, Any]:
    """Sample and score; returns plain data: ``samples`` (one per completion), ``timing``."""
    import torch

    torch.manual_seed(seed)
    report_progress("probe", f"loading {settings.model}")
    t0 = time.perf_counter()
    ref = ModelRef("base", settings.model, settings.model)
    generator = TimedGenerator(load_generator(ref, agent))
    loaded = time.perf_counter() - t0
    total = len(rows) * samples

    def progress(done: int, _total: int) -> None:
        report_progress("probe", f"{done} of {total} completions sampled and scored")

    t1 = time.perf_counter()
    predictions = evaluate_model(
        ref,
        agent,
        [table[i] for i in rows],
        columns,
        reward,
        samples=samples,
        temperature=settings.temperature,
        top_p=settings.top_p,
        max_new_tokens=settings.max_completion_length,
        batch_size=64,
        progress=progress,
        generator=generator,
    )
    scored = time.perf_counter() - t1
    out = [
        {
            "row": rows[p["index"]],
            "sample": p["sample"],
            "completion": str(p["completion"])[:KEPT_CHARS],
            "reward": p["reward"],
            "rewards": p["rewards"],
            "tokens": p.get("completion_tokens", 0),
            "truncated": bool(p["truncated"]),
            "tool_calls": p.get("tool_calls", 0),
            "tool_errors": p.get("tool_errors", 0),
            "turns": p.get("turns", 1),
        }
        for p in predictions
    ]
    timing = {
        "load_seconds": round(loaded, 3),
        "generate_seconds": round(generator.seconds, 3),
        "score_seconds": round(max(0.0, scored - generator.seconds), 3),
        "generated_tokens": sum(s["tokens"] for s in out),
        "completions": len(out),
        "device": str(getattr(generator.inner.model, "device", "cpu")),
        "threads": torch.get_num_threads(),
    }
    if settings.engine != "verl":  # verl trains on GPUs with its own workers: nothing timed here predicts it
        report_progress("probe", "timing one training pass")
        timing["training_pass"] = training_pass(generator.inner, predictions)
    return {"samples": out, "timing": timing}


def training_pass(generator: Any, predictions: list[dict]) -> dict[str, Any] | None:
    """One forward and backward of the policy, and one forward without gradients (a reference model's), timed on up
    to :data:`TIMED_SEQUENCES` sampled sequences (prompt and completion); no optimizer step, the weights unchanged."""
    import torch

    picked = predictions[:TIMED_SEQUENCES]
    if not picked:
        return None
    tok, model = generator.tokenizer, generator.model
    texts = [generator.render(p["prompt"]) + str(p["completion"]) for p in picked]
    side = tok.padding_side
    tok.padding_side = "right"
    try:
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
    finally:
        tok.padding_side = side
    t0 = time.perf_counter()
    with torch.no_grad():
        model(**enc)
    forward = time.perf_counter() - t0
    was_training = model.training
    model.train()
    try:
        t1 = time.perf_counter()
        loss = model(**enc, labels=enc["input_ids"]).loss
        loss.backward()
        backward = time.perf_counter() - t1
    finally:
        model.zero_grad(set_to_none=True)
        model.train(was_training)
    return {
        "sequences": len(picked),
        "tokens": int(enc["input_ids"].numel()),
        "forward_seconds": round(forward, 4),
        "forward_backward_seconds": round(backward, 4),
    }
