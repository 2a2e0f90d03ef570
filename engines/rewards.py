"""Rewards: a registry of built-ins, user functions by reference, and a weighted mix of several.

One adapter makes any reward usable per sample (verl: ``data_source, solution_str, ground_truth,
extra_info``) and batch-wise (TRL: ``prompts, completions, **columns``). User functions may be
written in any of three styles, told apart by their parameters:

* per sample — ``fn(completion, answer, **kwargs)`` (aliases: response/output/prediction;
  ground_truth/reference/solution/target/label); may also take ``prompt``, ``trajectory`` and
  any dataset column by name;
* TRL batch — ``fn(prompts, completions, **kwargs) -> list[float]``;
* verl — ``fn(data_source, solution_str, ground_truth, extra_info=None, **kwargs)``, returning a
  number or a dict with ``score``.
"""
from __future__ import annotations

import inspect
import math
import os
import re
import string
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .check_result import CheckError, CheckResult, did_you_mean
from .loading import ReferenceError_, load_object, object_ref


class RewardError(RuntimeError):
    """A reward function failed during training (classified as cause "reward error")."""


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


# -- the adapter ---------------------------------------------------------------------------------
COMPLETION_NAMES = ("completion", "response", "output", "prediction", "text")
ANSWER_NAMES = ("answer", "ground_truth", "reference", "solution", "target", "label")


def message_text(completion: Any) -> str:
    """Text of a completion: a string, or the last assistant message of a conversation."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        for m in reversed(completion):
            if isinstance(m, dict) and m.get("role", "assistant") == "assistant" and m.get("content"):
                return str(m["content"])
        return ""
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    return "" if completion is None else str(completion)


def _as_score(value: Any, who: str) -> float:
    if isinstance(value, dict) and "score" in value:
        value = value["score"]
    if isinstance(value, bool):
        return float(value)
    if hasattr(value, "item") and not isinstance(value, (list, tuple, str)):
        value = value.item()
    if not isinstance(value, (int, float)):
        raise CheckError("reward", f"reward '{who}' returned {value!r} ({type(value).__name__}); "
                         "a reward must return a number", "return a float (e.g. 1.0 or 0.0)")
    value = float(value)
    if not math.isfinite(value):
        raise CheckError("reward", f"reward '{who}' returned {value}; rewards must be finite",
                         "guard divisions and logs so the function never returns NaN or infinity")
    return value


@dataclass
class RewardTerm:
    name: str
    fn: Callable[..., Any]
    weight: float = 1.0
    kwargs: dict[str, Any] = field(default_factory=dict)
    builtin: str | None = None
    ref: str | None = None
    style: str = "sample"  # sample | batch | verl

    def __post_init__(self) -> None:
        params = _params(self.fn)
        if "completions" in params:
            self.style = "batch"
        elif "solution_str" in params:
            self.style = "verl"
        else:
            self.style = "sample"

    def __call__(self, completion: Any, answer: str | None, prompt: Any = None, /, **columns: Any) -> float:
        text = message_text(completion)
        if self.style == "batch":
            batch = {k: [v] for k, v in columns.items()}
            # a reference parameter the columns do not carry (verl passes it as ground_truth) gets the answer
            params = _params(self.fn)
            for name in ANSWER_NAMES:
                if name in params and name not in batch:
                    batch[name] = [answer]
            out = self.fn(prompts=[prompt], completions=[completion], **batch, **self.kwargs)
            if not isinstance(out, (list, tuple)) or len(out) != 1:
                raise CheckError("reward", f"reward '{self.name}' (TRL style) must return a list with one value per "
                                 f"completion, got {out!r}")
            return _as_score(out[0], self.name)
        if self.style == "verl":
            out = self.fn(data_source=columns.get("data_source", "aworld"), solution_str=text, ground_truth=answer,
                          extra_info=columns.get("extra_info"), **self.kwargs)
            return _as_score(out, self.name)
        return _as_score(_call_per_sample(self.fn, text, answer, prompt, columns, self.kwargs), self.name)

    def to_spec(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.builtin} if self.builtin else {"ref": self.ref}
        d["weight"] = self.weight
        if self.kwargs:
            d["kwargs"] = dict(self.kwargs)
        return d


def _params(fn: Callable) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return {}


def _call_per_sample(fn: Callable, text: str, answer: Any, prompt: Any, columns: dict, kwargs: dict) -> Any:
    params = _params(fn)
    var_kw = any(p.kind == p.VAR_KEYWORD for p in params.values())
    positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    call: dict[str, Any] = {}
    args: list[Any] = []
    comp_name = next((n for n in COMPLETION_NAMES if n in params), None)
    ans_name = next((n for n in ANSWER_NAMES if n in params), None)
    if comp_name:
        call[comp_name] = text
    elif positional:
        args.append(text)
    if ans_name:
        call[ans_name] = answer
    elif len(positional) >= 2 and not comp_name:
        args.append(answer)
    extras = {"prompt": prompt, **columns, **kwargs}
    for k, v in extras.items():
        if k in call or (k in ANSWER_NAMES and ans_name) or (args and positional and k in
                                                               [p.name for p in positional[:len(args)]]):
            continue
        if k in params or var_kw:
            call[k] = v
    return fn(*args, **call)


class Reward:
    """A weighted mix of reward terms."""

    def __init__(self, terms: list[RewardTerm]):
        if not terms:
            raise CheckError("reward", "no reward function given", "pick a built-in (e.g. exact_match) or a file.py:fn")
        names = Counter(t.name for t in terms)
        seen: Counter = Counter()
        for t in terms:  # unique display names
            if names[t.name] > 1:
                seen[t.name] += 1
                t.name = f"{t.name}_{seen[t.name]}"
        self.terms = terms

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.terms]

    @property
    def weights(self) -> list[float]:
        return [t.weight for t in self.terms]

    def score(self, completion: Any, answer: str | None, prompt: Any = None, /, **columns: Any
              ) -> tuple[float, dict[str, float]]:
        parts: dict[str, float] = {}
        for t in self.terms:
            try:
                parts[t.name] = t(completion, answer, prompt, **columns)
            except CheckError:
                raise
            except Exception as e:
                raise RewardError(f"reward function '{t.name}' raised {type(e).__name__}: {e}") from e
        total = sum(t.weight * parts[t.name] for t in self.terms)
        return total, parts

    # -- TRL ------------------------------------------------------------------------------------
    def trl_functions(self, answer_key: str | None) -> list[Callable[..., list[float]]]:
        """One TRL reward function per term (use with ``reward_weights=self.weights``)."""
        funcs = []
        for term in self.terms:
            def fn(prompts, completions, _term=term, **kwargs):
                columns = {k: v for k, v in kwargs.items() if isinstance(v, list) and len(v) == len(completions)}
                answers = columns.pop(answer_key, [None] * len(completions)) if answer_key else [None] * len(completions)
                out = []
                for i, completion in enumerate(completions):
                    row = {k: v[i] for k, v in columns.items()}
                    try:
                        out.append(_term(completion, None if answers[i] is None else str(answers[i]),
                                         prompts[i] if prompts else None, **row))
                    except Exception as e:
                        raise RewardError(f"reward function '{_term.name}' raised {type(e).__name__}: {e}") from e
                return out
            fn.__name__ = term.name
            funcs.append(fn)
        return funcs

    # -- verl -----------------------------------------------------------------------------------
    def verl_compute_score(self, data_source: str, solution_str: str, ground_truth: Any,
                           extra_info: dict | None = None, **kwargs: Any) -> dict[str, float]:
        columns = {"data_source": data_source, "extra_info": extra_info, **kwargs}
        total, parts = self.score(solution_str, None if ground_truth is None else str(ground_truth), None,
                                  **columns)
        return {"score": total, **{f"reward_{k}": v for k, v in parts.items()}}

    # -- spec -----------------------------------------------------------------------------------
    def to_spec(self, pickle_dir: str | os.PathLike | None = None) -> list[dict[str, Any]]:
        out = []
        for i, t in enumerate(self.terms):
            if t.builtin or t.ref:
                out.append(t.to_spec())
                continue
            if pickle_dir is None:
                raise CheckError("reward", f"reward '{t.name}' cannot be written to a run spec",
                                 "define it at module level in a .py file and pass 'file.py:function'")
            import cloudpickle

            path = Path(pickle_dir) / f"reward_{i}_{t.name}.pkl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(cloudpickle.dumps(t.fn))
            out.append({"pickle": str(path), "name": t.name, "weight": t.weight, **({"kwargs": t.kwargs} if t.kwargs else {})})
        return out


def _term_from(item: Any, base_dir: str | os.PathLike | None) -> RewardTerm:
    weight, kwargs = 1.0, {}
    if isinstance(item, dict):
        weight = item.get("weight", 1.0)
        kwargs = dict(item.get("kwargs") or {})
        try:
            weight = float(weight)
        except (TypeError, ValueError):
            raise CheckError("reward", f"reward weight {weight!r} is not a number")
        if not math.isfinite(weight):
            raise CheckError("reward", f"reward weight {weight} must be finite")
        if "pickle" in item:
            import cloudpickle

            fn = cloudpickle.loads(Path(item["pickle"]).read_bytes())
            return RewardTerm(item.get("name") or getattr(fn, "__name__", "reward"), fn, weight, kwargs)
        item = item.get("name") or item.get("ref") or item.get("func")
        if item is None:
            raise CheckError("reward", "a reward entry needs `name` (built-in) or `ref` ('file.py:function')")
    if callable(item):
        _check_signature(item, getattr(item, "__name__", "reward"))
        return RewardTerm(getattr(item, "__name__", "reward"), item, weight, kwargs, ref=object_ref(item))
    if not isinstance(item, str) or not item.strip():
        raise CheckError("reward", f"reward {item!r} must be a built-in name, 'file.py:function', "
                         "'module:function' or a callable")
    item = item.strip()
    if item in BUILTIN_REWARDS:
        return RewardTerm(item, BUILTIN_REWARDS[item], weight, kwargs, builtin=item)
    if ":" not in item:
        raise CheckError("reward", f"unknown reward '{item}'{did_you_mean(item, BUILTIN_REWARDS)}",
                         f"built-ins: {', '.join(BUILTIN_REWARDS)}; or give 'file.py:function'")
    target, _, attr = item.rpartition(":")
    if target.endswith(".py"):
        from .loading import resolve_path

        item = f"{resolve_path(target, base_dir)}:{attr}"
    try:
        fn = load_object(item, base_dir)
    except ReferenceError_ as e:
        raise CheckError("reward", f"cannot load reward '{item}': {e}")
    if not callable(fn):
        raise CheckError("reward", f"'{item}' is not callable", "point at a function")
    _check_signature(fn, attr)
    return RewardTerm(attr, fn, weight, kwargs, ref=item)


def _check_signature(fn: Callable, name: str) -> None:
    params = _params(fn)
    if not params:
        raise CheckError("reward", f"reward '{name}' takes no arguments",
                         "accept at least the completion: def reward(completion, answer, **kwargs) -> float")


def load_reward(spec: Any, base_dir: str | os.PathLike | None = None) -> Reward:
    if isinstance(spec, Reward):
        return spec
    if spec is None or (isinstance(spec, (str, list, tuple, dict)) and len(spec) == 0):
        raise CheckError("reward", "no reward function given",
                         f"pick a built-in ({', '.join(BUILTIN_REWARDS)}) or give 'file.py:function'")
    if isinstance(spec, dict) and "mix" in spec:
        spec = spec["mix"]
    items = list(spec) if isinstance(spec, (list, tuple)) else [spec]
    return Reward([_term_from(i, base_dir) for i in items])


def _where(bundle: Any, row: int) -> str:
    """A dataset row as its file numbers it ("line 2 of train.jsonl")."""
    from .row_location import locate_rows

    source = getattr(bundle, "train_source", None)
    return locate_rows(source, [row])[row] + (f" of {Path(source).name}" if source else "")


def dry_run_reward(reward: Reward, bundle: Any, rows: int = 3) -> CheckResult:
    """Call the reward on a few dataset rows with the reference answer and a wrong one."""
    from .data import prompt_text, row_answer

    ds = bundle.train
    n = min(rows, len(ds))
    answers = [row_answer(ds[i], bundle.columns) for i in range(min(len(ds), 50))]
    results, warnings = [], []
    for i in range(n):
        row = ds[i]
        answer = answers[i]
        wrong = next((a for a in answers if a is not None and a != answer), None) or "a wrong answer"
        # every other column, the answer's included, as training passes them (TRL keeps them all)
        columns = {k: v for k, v in row.items() if k != bundle.columns.prompt}
        prompt = row[bundle.columns.prompt]
        entry = {"row": i, "prompt": prompt_text(prompt)[:200], "answer": answer}
        for label, completion in (("reference", answer or ""), ("wrong", wrong)):
            try:
                total, parts = reward.score(completion, answer, prompt, **columns)
            except CheckError as e:
                raise CheckError("reward", f"{e.result.message} (dry run on {_where(bundle, i)}, {label} answer)")
            except RewardError as e:
                raise CheckError("reward", f"{e} (dry run on {_where(bundle, i)}, completion={completion!r:.200})",
                                 "fix the function so it handles this input") from e
            entry[label] = {"completion": completion, "total": total, "terms": parts}
        results.append(entry)
    if results and all(r["reference"]["total"] <= r["wrong"]["total"] for r in results) and bundle.columns.answer:
        warnings.append("the reward does not score the reference answer above a wrong one on the sample rows")
    names = ", ".join(f"{t.name}×{t.weight:g}" for t in reward.terms)
    msg = f"{names}; dry run on {n} row(s): reference → " + \
          ", ".join(f"{r['reference']['total']:.2f}" for r in results) + "; wrong → " + \
          ", ".join(f"{r['wrong']['total']:.2f}" for r in results)
    return CheckResult("reward", "warning" if warnings else "ok", msg,
                       details={"terms": [t.to_spec() | {"name": t.name} for t in reward.terms], "dry_run": results},
                       warnings=warnings)
