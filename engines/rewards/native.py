"""Rewards that exist only in one engine's own environment: ms-swift's ORMs, named ``swift:<name>`` in a reward
spec (``swift:accuracy``, ``{ref: swift:format, weight: 0.5}``, ``swift:format@0.5`` in the CLI and the studio).

The ``swift`` engine takes them out of the spec before loading the rest (:func:`split_native`) and hands them
to ms-swift by name (:mod:`engines.swift.orms`); any other engine meets them in :func:`load_reward
<engines.rewards.spec.load_reward>`, which refuses them with :func:`refusal`.
"""

from __future__ import annotations

from typing import Any

from ..results.check_result import CheckError

PREFIX = "swift:"
#: TRL's rewards that score what an ms-swift ORM scores, on the trl and verl engines (and on swift those its
#: environment's trl 0.29 has: accuracy, think_format, soft_overlong)
COUNTERPARTS = {
    "accuracy": "trl.rewards:accuracy_reward",
    "format": "trl.rewards:think_format_reward",
    "soft_overlong": "trl.rewards:get_soft_overlong_punishment",
    "repetition": "trl.rewards:get_repetition_penalty_reward",
    "cosine": "trl.rewards:get_cosine_scaled_reward",
}


def native_name(item: Any) -> str | None:
    """``"format"`` for ``"swift:format"`` or ``{ref|name: "swift:format", ...}``; else None."""
    if isinstance(item, dict):
        item = item.get("ref") or item.get("name")
    if isinstance(item, str) and item.strip().startswith(PREFIX):
        return item.strip()[len(PREFIX) :].strip()
    return None


def refusal(item: Any) -> CheckError:
    name = native_name(item) or str(item)
    counterpart = COUNTERPARTS.get(name)
    return CheckError(
        "reward",
        f"'{PREFIX}{name}' is one of ms-swift's own rewards: it runs only on the swift engine, inside ms-swift",
        "choose the swift engine"
        + (f", or use {counterpart}, which scores the same on the trl and verl engines" if counterpart else ""),
    )


def split_native(spec: Any) -> tuple[Any, list[tuple[str, Any]]]:
    """``spec`` without its ``swift:`` entries, and those entries as (name, the entry). A spec with none comes
    back as it is (a callable, a Reward, ...); one with some comes back as a list (maybe empty)."""
    items = spec.get("mix") if isinstance(spec, dict) and "mix" in spec else spec
    listed = list(items) if isinstance(items, (list, tuple)) else [items]
    natives = [(native_name(i), i) for i in listed if native_name(i) is not None]
    if not natives:
        return spec, []
    return [i for i in listed if native_name(i) is None], natives
