"""Which of our rewards ms-swift's environment can run, and a clear refusal for those it cannot.

The plugin calls our reward code inside ms-swift's environment (:mod:`.plugin`), so a term runs on the swift
engine only when what it imports is installed there. ms-swift brings ``openai`` (LLM judges) and the setup's
pins add ``math-verify`` (TRL's accuracy rewards, ms-swift's own ``accuracy``); reward models need torch and
transformers, which it has. verl's scorers need ``verl``, which cannot be installed beside ms-swift (verl 0.9.1
pins ``transformers<5.11``, ms-swift's environment has 5.19): they are refused before anything runs.
"""

from __future__ import annotations

from typing import Any

from ..results.check_result import CheckError
from ..rewards.native import native_name

#: reward modules that cannot run in ms-swift's environment → why, and what scores the same there
UNRUNNABLE = {
    "verl": (
        "verl cannot be installed in ms-swift's environment (verl 0.9.1 pins transformers<5.11; ms-swift's has 5.19)",
        "train it on the trl or verl engine; on swift, score the answer with math_match (the last number, "
        "'#### 7' included) or trl.rewards:accuracy_reward (\\boxed{} answers, math-verify)",
    ),
}


def _ref(item: Any) -> str | None:
    if isinstance(item, dict):
        item = item.get("factory") or item.get("ref") or item.get("name") or item.get("func")
    return item.strip() if isinstance(item, str) else None


def refuse_unrunnable(spec: Any) -> None:
    """Raise the reward check's error for the first entry of ``spec`` ms-swift's environment cannot run."""
    items = spec.get("mix") if isinstance(spec, dict) and "mix" in spec else spec
    for item in items if isinstance(items, (list, tuple)) else [items]:
        ref = _ref(item)
        if not ref or native_name(item) is not None or ":" not in ref:
            continue
        module = ref.partition("(")[0].rpartition(":")[0]
        if module.endswith(".py"):
            continue
        why = UNRUNNABLE.get(module.split(".")[0])
        if why:
            raise CheckError(
                "reward",
                f"reward '{ref.partition('(')[0]}' cannot run on the swift engine: it needs "
                f"{module.split('.')[0]}, and {why[0]}",
                why[1],
            )
