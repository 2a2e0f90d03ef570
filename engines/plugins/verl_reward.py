"""The reward bridge of a verl run (``reward.custom_reward_function.path=<run>/verl/reward_bridge.py``,
``name=compute_score``; installed by :func:`engines.verl.bridge.write_reward_bridge`). It needs only the standard
library and the snapshot of the studio's reward code beside it, so it loads on any node that has the run directory
(Ray ships it as the job's working_dir).

Parameters (``reward_bridge.json``): ``spec`` (Reward.to_spec() entries, files relative to the run directory),
``columns`` (the dataset's columns a reward may ask for), ``final_answer_only`` (with tools: score the text after
the last tool response, the whole response as ``trajectory``), ``tokenizer`` (the model's folder, for rewards that
read ``completion_ids``).
"""

from __future__ import annotations

import os
from typing import Any

from ..rewards import load_reward
from .files import resolved

REWARD_FN = "compute_score"
TOOL_END = "</tool_response>"


class LazyTokenizer:
    """The model's tokenizer, loaded on first use (for rewards that read completion_ids)."""

    def __init__(self, path: str):
        self.path, self._tok = path, None

    def __call__(self, *args, **kwargs):
        if self._tok is None:
            from transformers import AutoTokenizer

            self._tok = AutoTokenizer.from_pretrained(self.path)
        return self._tok(*args, **kwargs)


def final_answer(solution_str: str | None) -> str:
    """With tools, verl's solution_str is the whole multi-turn response (tool calls and tool results included);
    the agent's answer is what follows the last tool response."""
    text = solution_str or ""
    cut = text.rfind(TOOL_END)
    if cut < 0:
        return text
    tail = text[cut + len(TOOL_END) :].lstrip()
    for role in ("assistant\n", "assistant"):
        if tail.startswith(role):
            tail = tail[len(role) :]
            break
    return tail.strip()


class Bridge:
    """verl's ``compute_score`` over the studio's Reward (a weighted mix of terms), loaded on first call."""

    def __init__(self, run_dir: str, params: dict[str, Any]):
        self.run_dir, self.params, self._reward = run_dir, params, None

    @property
    def reward(self):
        if self._reward is None:
            self._reward = load_reward([resolved(i, self.run_dir) for i in self.params["spec"]])
            if self.params.get("tokenizer"):
                self._reward.tokenizer = LazyTokenizer(self.params["tokenizer"])
        return self._reward

    def compute_score(self, data_source, solution_str, ground_truth, extra_info=None, **kwargs):
        info = extra_info if isinstance(extra_info, dict) else {}
        columns = {k: info[k] for k in self.params["columns"] if k in info}
        columns.update(kwargs)
        completion = solution_str
        if self.params.get("final_answer_only"):
            columns.setdefault("trajectory", solution_str)
            completion = final_answer(solution_str)
        return self.reward.verl_compute_score(data_source, completion, ground_truth, extra_info, **columns)


def start(folder: str, params: dict[str, Any]) -> dict[str, Any]:
    """``compute_score`` for the bridge in ``folder`` (``<run>/verl``)."""
    bridge = Bridge(os.path.dirname(folder), params)

    def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
        return bridge.compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)

    return {REWARD_FN: compute_score}
