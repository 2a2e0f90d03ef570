"""ms-swift's outputs → the run directory's rows (pure functions, tested on recorded real output).

* ``logging.jsonl`` (one object per log, rank 0): Transformers' logs plus ``global_step/max_steps`` ("N/M"),
  ``elapsed_time``, ``remaining_time``, ``train_speed(s/it)``; GRPO adds ``reward``, ``reward_std``,
  ``rewards/<Class>/mean|std``, ``kl``, ``completions/mean_length``, ``clip_ratio/*``, ``step_time``. Every
  numeric key is kept; the canonical names are added next to them. The closing summary (``train_runtime``)
  and the final line (``last_model_checkpoint``) are not steps.
* ``completions.jsonl`` (``--log_completions true``): one object per logged step holding lists — ``step``,
  ``prompt`` (rendered text), ``completion``, one list per reward function (named after its class),
  ``advantages``, ``solution``. It holds no group id: the groups are taken as ``num_generations`` rollouts in
  a row (the order TRL's sampler gives, which ms-swift's GRPO trainer extends).
"""

from __future__ import annotations

import time
from typing import Any

from ..runs.sample_groups import grouped_rows, step_summary
from ..runs.rundir import EVAL_REWARD, TRAINER_LOG_KEYS, canonical_row

#: ms-swift logs through Transformers' Trainer and TRL's GRPO: their keys, and its evaluation's
CANONICAL = {**TRAINER_LOG_KEYS, "eval_reward": EVAL_REWARD, "eval_loss": "eval/loss"}
STEP_KEY = "global_step/max_steps"
SUMMARY_KEYS = ("train_runtime", "last_model_checkpoint")


def parse_step(record: dict) -> tuple[int | None, int | None]:
    """``"12/400"`` → (12, 400)."""
    text = record.get(STEP_KEY)
    if isinstance(text, str) and "/" in text:
        a, _, b = text.partition("/")
        try:
            return int(a), int(b)
        except ValueError:
            return None, None
    step = record.get("step") or record.get("global_step")
    return (int(step), None) if isinstance(step, (int, float)) else (None, None)


def is_summary(record: dict) -> bool:
    return any(k in record for k in SUMMARY_KEYS)


def normalize(record: dict) -> tuple[int, int | None, dict[str, Any]] | None:
    """A logging.jsonl record → (step, total steps, metrics with canonical names), or None (not a step)."""
    if is_summary(record):
        return None
    step, total = parse_step(record)
    if step is None:
        return None
    out = canonical_row(record, CANONICAL, skip=(STEP_KEY,))
    if not out:
        return None
    return step, total, out


def _terms(record: dict, reward_terms: list[tuple[str, float]], i: int) -> dict[str, float]:
    terms = {}
    for name, _ in reward_terms:
        values = record.get(name)
        if isinstance(values, list) and i < len(values) and isinstance(values[i], (int, float)):
            terms[name] = float(values[i])
    return terms


def _total(terms: dict[str, float], reward_terms: list[tuple[str, float]]) -> float | None:
    return sum(w * terms[n] for n, w in reward_terms if n in terms) if terms else None


def samples_from_completions(
    record: dict, reward_terms: list[tuple[str, float]], limit: int, prompt_lookup=None, group_size: int = 0
) -> list[dict]:
    """A completions.jsonl record as samples.jsonl rows. ``reward_terms``: (name, weight) in order; the total
    is their weighted sum, as ms-swift computes ``reward``. ``prompt_lookup(text)`` may turn the rendered
    prompt back into the row's messages. With ``group_size`` (``num_generations``), the first ``limit``
    prompt groups whole (ms-swift orders the batch as TRL does: each prompt's completions in a row), with
    ms-swift's advantages and the step's group statistics (:mod:`..runs.sample_groups`); else the first
    ``limit`` rollouts."""
    completions = record.get("completion") or []
    steps = record.get("step") or []
    prompts = record.get("prompt") or []
    solutions = record.get("solution") or []
    advantages = record.get("advantages")
    n = min(limit * group_size if group_size > 0 else limit, len(completions))
    # every completion's terms and total when the step's group statistics need them, else the rows' only
    terms_of = [_terms(record, reward_terms, i) for i in range(len(completions) if group_size > 0 else n)]
    totals = [_total(terms, reward_terms) for terms in terms_of]
    out = []
    for i in range(n):
        terms = terms_of[i]
        try:
            step = int(steps[i]) if i < len(steps) else None
        except (TypeError, ValueError):
            step = None
        prompt_text = prompts[i] if i < len(prompts) else None
        messages = prompt_lookup(prompt_text) if prompt_lookup and prompt_text else None
        sample = {
            "step": step,
            "time": time.time(),
            "prompt": messages or prompt_text,
            "completion": [{"role": "assistant", "content": completions[i]}],
            "answer": solutions[i] if i < len(solutions) else None,
            "rewards": terms,
            "reward": totals[i],
        }
        if messages:
            sample["rendered_prompt"] = prompt_text
        if isinstance(advantages, list) and i < len(advantages):
            sample["advantage"] = advantages[i]
        out.append(sample)
    if group_size > 0:
        out = grouped_rows(out, group_size, limit, step_summary(totals, group_size))
    return out


class PromptLookup:
    """Rendered prompt text → the dataset row's messages: the row whose last user message the text holds
    (remembered per text; prompts repeat ``num_generations`` times)."""

    def __init__(self, rows: list[list[dict]], max_rows: int = 50_000):
        self.rows = rows[:max_rows]
        self._seen: dict[str, list[dict] | None] = {}

    @classmethod
    def from_jsonl(cls, path) -> "PromptLookup":
        import json

        rows = []
        try:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    if line.strip():
                        rows.append(json.loads(line).get("messages") or [])
        except (OSError, ValueError):
            pass
        return cls(rows)

    def __call__(self, text: str) -> list[dict] | None:
        if text in self._seen:
            return self._seen[text]
        best, best_len = None, -1
        for messages in self.rows:
            users = [m.get("content") for m in messages if m.get("role") == "user" and m.get("content")]
            if users and users[-1] in text and len(users[-1]) > best_len:
                best, best_len = messages, len(users[-1])
        if best is not None:
            best = [m for m in best if m.get("role") != "assistant"]
        self._seen[text] = best
        return best
