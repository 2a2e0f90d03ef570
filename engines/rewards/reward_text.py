"""The reward text of the studio and the API (``exact_match@1, r.py:fn@0.5, {judge: {url: ..., model: m}}``)
split into its items in one pass: linear in its length whatever it holds (the old split regex looked
ahead to the end of the text at every comma: ``","*80000`` froze the studio for 38 s).

Items are separated by commas and new lines outside brackets; a factory's arguments ``REF(k=v, k2=v2)``
and an inline YAML mapping ``{judge: {url: ..., model: ...}}`` keep theirs. A text longer than
:data:`MAX_REWARD_TEXT` characters, or with more than :data:`MAX_ITEMS` items, is refused before it is read.
"""

from __future__ import annotations

import math

MAX_REWARD_TEXT = 64 * 1024
MAX_ITEMS = 64
#: a reward weight's bound: a weighted sum of scores must stay finite
MAX_WEIGHT = 1e6
_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}


class RewardTextError(ValueError):
    """What is wrong with a reward text, said for the person who wrote it."""


def check_size(text: str) -> None:
    if len(text) > MAX_REWARD_TEXT:
        raise RewardTextError(
            f"the reward text is {len(text):,} characters; at most {MAX_REWARD_TEXT:,} are read — "
            "name the rewards (NAME@WEIGHT, file.py:fn@WEIGHT), or put long settings in a reward "
            ".yaml file"
        )


def split_items(text: str) -> list[str]:
    """The items of a reward text, stripped, empty ones left out (one pass, a stack of brackets)."""
    check_size(text or "")
    items: list[str] = []
    depth: list[str] = []
    quote = ""
    start = 0
    for i, ch in enumerate(text or ""):
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\n":
                quote = ""  # a quote never spans lines here: an unclosed one ends with its line
            continue
        if ch in "'\"" and depth:  # quotes matter inside brackets only (YAML values, factory arguments)
            quote = ch
        elif ch in _OPEN:
            depth.append(ch)
        elif ch in _CLOSE:
            if depth and depth[-1] == _CLOSE[ch]:
                depth.pop()
        elif ch == "\n" or (ch == "," and not depth):
            if ch == "\n" and depth and depth[0] == "{":
                continue  # an inline mapping may span lines
            items.append(text[start:i])
            start = i + 1
            depth.clear()
        if len(items) > MAX_ITEMS * 4:  # (empty items included) stop early on a flood of separators
            break
    else:
        items.append((text or "")[start:])
    out = [s.strip() for s in items if s.strip()]
    if len(out) > MAX_ITEMS or len(items) > MAX_ITEMS * 4:
        raise RewardTextError(
            f"the reward text names more than {MAX_ITEMS} rewards (or holds a flood of commas); "
            f"a mix has at most {MAX_ITEMS} terms"
        )
    return out


def checked_weight(value: float | str, item: str) -> float:
    """A weight as a number within ±:data:`MAX_WEIGHT` (finite)."""
    try:
        weight = float(value)
    except (TypeError, ValueError):
        raise RewardTextError(f"reward weight in '{item[:80]}' is not a number (write NAME@0.5)")
    if not math.isfinite(weight):
        raise RewardTextError(f"reward weight {value} must be finite (in '{item[:80]}'; e.g. NAME@0.5)")
    if abs(weight) > MAX_WEIGHT:
        raise RewardTextError(
            f"reward weight {value} in '{item[:80]}' is out of range: a weight is a number between "
            f"-{MAX_WEIGHT:g} and {MAX_WEIGHT:g} (e.g. NAME@0.5)"
        )
    return weight
