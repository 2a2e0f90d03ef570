"""The studio's own rewards, written per sample: ``fn(completion, answer, **kwargs) -> float``."""

from __future__ import annotations

import inspect
import re
import string
from collections import Counter
from typing import Any, Callable

# -- helpers shared by the built-ins -----------------------------------------------------------
ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.S | re.I)
NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?(?:/\d+)?")
BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


def extract_answer(text: str) -> str:
    """The content of the last ``<answer>…</answer>`` tag, else the whole text."""
    found = ANSWER_TAG.findall(text or "")
    return (found[-1] if found else (text or "")).strip()


def _norm(text: str) -> str:
    text = (text or "").casefold().strip()
    text = "".join(ch for ch in text if ch not in string.punctuation)
    return " ".join(text.split())


def _to_number(text: str) -> float | None:
    text = text.replace(",", "").strip()
    try:
        if "/" in text:
            a, b = text.split("/", 1)
            return float(a) / float(b)
        return float(text)
    except (ValueError, ZeroDivisionError):
        return None


def _last_number(text: str) -> float | None:
    boxed = BOXED.findall(text or "")
    if boxed:
        value = _to_number(boxed[-1])
        if value is not None:
            return value
    nums = NUMBER.findall(extract_answer(text))
    return _to_number(nums[-1]) if nums else None


# -- built-ins (per-sample style) ----------------------------------------------------------------
def exact_match(completion: str, answer: str | None, **kwargs: Any) -> float:
    """1.0 when the answer (inside <answer> tags if present) equals the reference, ignoring case,
    punctuation and spacing; else 0.0."""
    if answer is None:
        return 0.0
    return float(_norm(extract_answer(completion)) == _norm(str(answer)))


def math_match(completion: str, answer: str | None, tolerance: float = 1e-6, **kwargs: Any) -> float:
    """1.0 when the last number in the completion (or its \\boxed{}) equals the numeric reference."""
    if answer is None:
        return 0.0
    want = _last_number(str(answer))
    got = _last_number(completion)
    if want is None or got is None:
        return 0.0
    return float(abs(got - want) <= tolerance * max(1.0, abs(want)))


def contains(completion: str, answer: str | None, **kwargs: Any) -> float:
    """1.0 when the reference appears in the completion (case-insensitive)."""
    if not answer:
        return 0.0
    return float(str(answer).casefold().strip() in (completion or "").casefold())


def regex_match(completion: str, answer: str | None = None, pattern: str | None = None, **kwargs: Any) -> float:
    """1.0 when `pattern` (or, without one, the reference as a pattern) matches the completion."""
    pat = pattern if pattern is not None else (str(answer) if answer is not None else None)
    if not pat:
        return 0.0
    return float(re.search(pat, completion or "") is not None)


def token_f1(completion: str, answer: str | None, **kwargs: Any) -> float:
    """SQuAD-style token F1 between the answer and the reference (0.0–1.0)."""
    if answer is None:
        return 0.0
    pred, ref = _norm(extract_answer(completion)).split(), _norm(str(answer)).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def answer_format(completion: str, answer: str | None = None, **kwargs: Any) -> float:
    """1.0 when the completion holds exactly one non-empty <answer>…</answer> block; else 0.0."""
    found = ANSWER_TAG.findall(completion or "")
    return float(len(found) == 1 and bool(found[0].strip()))


def length_penalty(completion: str, answer: str | None = None, target_chars: int = 200, **kwargs: Any) -> float:
    """0.0 up to `target_chars` characters, falling linearly to -1.0 at twice that length."""
    extra = max(0, len(completion or "") - int(target_chars))
    return -min(1.0, extra / max(1, int(target_chars))) if extra else 0.0


BUILTIN_REWARDS: dict[str, Callable[..., float]] = {
    "exact_match": exact_match,
    "math_match": math_match,
    "contains": contains,
    "regex": regex_match,
    "token_f1": token_f1,
    "answer_format": answer_format,
    "length_penalty": length_penalty,
}


def builtin_descriptions() -> dict[str, str]:
    return {name: " ".join((inspect.getdoc(fn) or "").split()) for name, fn in BUILTIN_REWARDS.items()}
