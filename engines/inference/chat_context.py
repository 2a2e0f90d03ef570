"""How much of a chat conversation the model can be shown: its earlier turns (tool calls and their results
among them) go into the chat template for as long as the prompt plus the reply fit the model's context; when
they no longer do, the oldest whole turns are left out, and the caller says so.

A *turn* is a user message and everything after it up to the next user message (the model's replies, its
tool calls, the tools' results). The system prompt and the turn being answered are never left out.
"""

from __future__ import annotations

from typing import Callable

#: tokenizers without a real limit report a huge ``model_max_length`` (``int(1e30)``)
_NO_LIMIT = 10**7


class ContextFull(ValueError):
    """The message being answered does not fit the model's context even alone."""


def context_limit(model, tokenizer) -> int | None:
    """The model's context length in tokens: the smaller of its position embeddings and its tokenizer's
    ``model_max_length`` (None when neither says)."""
    limits = []
    config = getattr(model, "config", None)
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            limits.append(value)
            break
    value = getattr(tokenizer, "model_max_length", None)
    if isinstance(value, int) and 0 < value < _NO_LIMIT:
        limits.append(value)
    return min(limits) if limits else None


def split_turns(messages: list[dict]) -> tuple[list[dict], list[list[dict]]]:
    """(the leading system messages, the turns in order)."""
    head = 0
    while head < len(messages) and messages[head].get("role") == "system":
        head += 1
    turns: list[list[dict]] = []
    for m in messages[head:]:
        if m.get("role") == "user" or not turns:
            turns.append([])
        turns[-1].append(m)
    return list(messages[:head]), turns


def fit(messages: list[dict], count_tokens: Callable[[list[dict]], int], budget: int | None) -> tuple[list[dict], int]:
    """``messages`` without as many of the oldest turns as must go for ``count_tokens(messages) <= budget``;
    returns (the messages kept, how many turns were left out). Raises :class:`ContextFull` when the last turn
    alone (with the system prompt) is over the budget."""
    if budget is None:
        return list(messages), 0
    system, turns = split_turns(messages)
    dropped = 0
    while True:
        kept = system + [m for turn in turns[dropped:] for m in turn]
        used = count_tokens(kept)
        if used <= budget:
            return kept, dropped
        if dropped >= len(turns) - 1:
            raise ContextFull(
                f"your message and the system prompt take {used} tokens, more than the {budget} the "
                f"model's context leaves for the prompt: write a shorter message"
            )
        dropped += 1
