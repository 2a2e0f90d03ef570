"""Reward specs → :class:`Reward`: built-in names, ``file.py:fn`` / ``module:fn`` references, factories
with arguments, callables, reward models, LLM judges and weighted mixes of them.

A spec entry (Python, run.yaml, the studio) is one of::

    exact_match                                        # a built-in
    path/to/file.py:fn   |   module:fn                 # a function (any calling convention)
    "trl.rewards:get_soft_overlong_punishment(max_completion_len=512, soft_punish_cache=64)"
    {ref: module:factory, args: {...}, weight: 0.5}    # a factory and its arguments
    {name|ref: ..., weight: 1.0, kwargs: {...}}        # kwargs: passed to every call
    {reward_model: path-or-cached-hub-id, ...}         # see reward_model.py
    {judge: {url, model, prompt, ...}}                 # see judge.py
    {pickle: code/reward_0.pkl, name: ...}             # a callable saved by cloudpickle
    swift:accuracy                                     # ms-swift's own ORM: the swift engine only (native.py)

``REF(k=v, ...)`` binds arguments: a factory (a callable that does not take what a reward takes)
is called with them to build the reward; any other reward gets them as call kwargs.
"""

from __future__ import annotations

import ast
import math
import os
from pathlib import Path
from typing import Any, Callable

from ..results.check_result import CheckError, did_you_mean
from ..inputs.loading import ReferenceError_, load_object, object_ref, resolve_path
from .builtins import BUILTIN_REWARDS
from .calling import looks_like_reward, params_of, short
from .mix import Reward, RewardTerm
from .native import native_name, refusal
from .requirements import missing_requirements

SCORER_KEYS = ("reward_model", "judge")


#: the most characters of a reward reference an error message repeats (the rest is counted, not echoed)
SHOWN = 120


def shown_item(item: str) -> str:
    """A reward reference as an error message quotes it: whole when short, else its start and end and its length."""
    if len(item) <= SHOWN:
        return f"'{item}'"
    return f"'{item[:80]}…{item[-20:]}' ({len(item):,} characters)"


def parse_call(text: str) -> tuple[str, dict[str, Any] | None]:
    """``"mod:fn(a=1, b='x')"`` → ``("mod:fn", {"a": 1, "b": "x"})``; no parentheses → ``(text, None)``."""
    text = text.strip()
    ref, paren, inner = text.partition("(")
    if not paren or not ref.strip() or (not text.endswith(")") and ":" not in ref):
        return text, None
    try:
        call = ast.parse(f"f({inner}", mode="eval").body
        if not isinstance(call, ast.Call) or call.args:
            raise ValueError("write key=value pairs")
        args = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg}
    except (SyntaxError, ValueError) as e:
        raise CheckError(
            "reward",
            f"cannot read the arguments of reward '{text}': {e}",
            "write REF(key=value, ...) with Python literals, e.g. "
            "trl.rewards:get_soft_overlong_punishment(max_completion_len=512, soft_punish_cache=64)",
        )
    return ref.strip(), args


def format_call(ref: str, args: dict[str, Any] | None) -> str:
    """The inverse of :func:`parse_call`."""
    if args is None:
        return ref
    return f"{ref}({', '.join(f'{k}={v!r}' for k, v in args.items())})"


def parse_cli_reward(value: str) -> list[dict[str, Any]]:
    """One ``--reward`` value → spec entries: ``NAME``, ``REF``, ``REF(k=v, ...)``, each with an optional
    ``@WEIGHT``; ``{judge: {...}}`` / ``{reward_model: ...}`` (inline YAML); or a .yaml/.json file of entries."""
    import yaml

    text = value.strip()
    if text.lower().endswith((".yaml", ".yml", ".json")) and Path(text).is_file():
        loaded = yaml.safe_load(Path(text).read_text(encoding="utf-8"))
        if isinstance(loaded, dict) and "reward" in loaded:
            loaded = loaded["reward"]
        return list(loaded) if isinstance(loaded, list) else [loaded]
    from ..files.yaml_input import load_yaml_text
    from .reward_text import RewardTextError, check_size, checked_weight

    try:
        check_size(text)
        if text.startswith("{"):
            head, at, tail = text.rpartition("@")
            weight = None
            if at and head.rstrip().endswith("}"):  # {judge: {...}}@0.5
                text, weight = head.rstrip(), checked_weight(tail, text)
            try:  # the guarded loader: caps on size, nesting and aliases
                loaded = load_yaml_text(text, module="reward", where=f"the inline reward {text[:60]!r}")
            except CheckError as e:
                raise CheckError(
                    "reward",
                    f"the reward {text[:60]!r} is not a valid YAML mapping: {e.result.message}",
                    "write it as {judge: {url: http://host/v1, model: NAME, prompt: ...}}",
                )
            return [{**loaded, "weight": weight} if weight is not None and isinstance(loaded, dict) else loaded]
        ref, weight = text, 1.0
        head, at, tail = text.rpartition("@")
        if at and ")" not in tail:
            ref, weight = head, checked_weight(tail, text)
    except RewardTextError as e:
        raise CheckError("reward", str(e))
    name = ref.partition("(")[0]
    return [{"name" if ":" not in name else "ref": ref, "weight": weight}]


def entry_weight(item: dict) -> float:
    weight = item.get("weight", 1.0)
    try:
        weight = float(weight)
    except (TypeError, ValueError):
        raise CheckError("reward", f"reward weight {weight!r} is not a number")
    from .reward_text import MAX_WEIGHT

    if not math.isfinite(weight) or abs(weight) > MAX_WEIGHT:
        raise CheckError(
            "reward",
            f"reward weight {weight:g} is out of range: a weight is a number between "
            f"-{MAX_WEIGHT:g} and {MAX_WEIGHT:g}",
            "e.g. NAME@0.5",
        )
    return weight


def _scorer_term(item: dict, weight: float, kwargs: dict) -> RewardTerm:
    if "reward_model" in item:
        from .reward_model import RewardModelScorer

        scorer = RewardModelScorer.from_spec(item["reward_model"], kwargs)
        return RewardTerm(scorer.name, scorer, weight, {}, scorer_spec={"reward_model": scorer.to_spec()})
    from .judge import JudgeScorer

    scorer = JudgeScorer.from_spec(item["judge"])
    return RewardTerm(scorer.name, scorer, weight, {}, scorer_spec={"judge": scorer.to_spec()})


def inline_entry(value: Any) -> dict | None:
    """A reward entry written as inline YAML (``{judge: {...}}``: the CLI's ``--reward`` form, and how the
    studio's reward picker holds a reward model, a judge or a pickled callable); None for anything else."""
    if not isinstance(value, str) or not value.lstrip().startswith("{"):
        return None
    from ..files.yaml_input import load_yaml_text

    loaded = load_yaml_text(value, module="reward", where=f"reward {value[:60]!r}")  # guarded: user text
    if not isinstance(loaded, dict):
        raise CheckError(
            "reward", f"reward {value[:60]!r} is not a mapping", "write {judge: {...}} or {reward_model: PATH}"
        )
    return loaded


def _term_from(item: Any, base_dir: str | os.PathLike | None) -> RewardTerm:
    weight, kwargs, args, explicit_factory = 1.0, {}, None, False
    inline = inline_entry(item.get("ref") if isinstance(item, dict) else item)
    if inline is not None:  # {ref: "{judge: ...}", weight: 0.5} (the studio) or "{judge: ...}"
        item = {**inline, **{k: v for k, v in item.items() if k != "ref"}} if isinstance(item, dict) else inline
    if isinstance(item, dict):
        weight = entry_weight(item)
        kwargs = dict(item.get("kwargs") or {})
        if any(k in item for k in SCORER_KEYS):
            return _scorer_term(item, weight, kwargs)
        if "pickle" in item:
            import cloudpickle

            fn = cloudpickle.loads(Path(item["pickle"]).read_bytes())
            return RewardTerm(item.get("name") or getattr(fn, "__name__", "reward"), fn, weight, kwargs)
        if item.get("args") is not None:
            args = dict(item["args"])
            explicit_factory = True
        if item.get("factory"):
            explicit_factory, args = True, dict(item.get("args") or {})
        item = item.get("factory") or item.get("name") or item.get("ref") or item.get("func")
        if item is None:
            raise CheckError(
                "reward",
                "a reward entry needs `name` (built-in), `ref` ('file.py:function'), "
                "`factory`, `reward_model` or `judge`",
            )
    if callable(item):
        name = getattr(item, "__name__", None) or type(item).__name__
        _check_signature(item, name)
        return RewardTerm(name, item, weight, kwargs, ref=object_ref(item))
    if not isinstance(item, str) or not item.strip():
        raise CheckError(
            "reward", f"reward {item!r} must be a built-in name, 'file.py:function', 'module:function' or a callable"
        )
    if native_name(item) is not None:
        raise refusal(item)
    item, call_args = parse_call(item)
    if call_args is not None and args is None:
        args = call_args
    if item in BUILTIN_REWARDS:
        if args:  # bound arguments of a built-in are call kwargs
            kwargs = {**args, **kwargs}
        return RewardTerm(item, BUILTIN_REWARDS[item], weight, kwargs, builtin=item)
    if ":" not in item:
        from .catalog import builtin_names

        raise CheckError(
            "reward",
            f"unknown reward {shown_item(item)}{did_you_mean(item, BUILTIN_REWARDS) if len(item) <= SHOWN else ''}",
            f"built-ins: {', '.join(builtin_names())}; or give 'file.py:function' or 'module:function'",
        )
    target, _, attr = item.rpartition(":")
    if target.endswith(".py"):
        item = f"{resolve_path(target, base_dir)}:{attr}"
    missing = missing_requirements(item)
    if missing:
        raise CheckError(
            "reward",
            f"reward '{item}' needs {', '.join(p for p, _ in missing)}, which "
            f"{'is' if len(missing) == 1 else 'are'} not installed",
            "pip install " + " ".join(p for p, _ in missing),
        )
    try:
        obj = load_object(item, base_dir)
    except ReferenceError_ as e:
        from .requirements import install_hint

        raise CheckError("reward", f"cannot load reward '{item}': {e}", install_hint(e))
    if not callable(obj):
        raise CheckError("reward", f"'{item}' is not callable", "point at a function")
    name = attr.split(".")[-1]
    if args is not None and (explicit_factory or not looks_like_reward(obj)):
        fn = _build(obj, item, args)
        name = getattr(fn, "__name__", None) or name
        _check_signature(fn, name)
        return RewardTerm(name, fn, weight, kwargs, ref=item, args=args)
    if args:
        kwargs = {**args, **kwargs}
    _check_signature(obj, name)
    return RewardTerm(name, obj, weight, kwargs, ref=item)


def _build(factory: Callable, ref: str, args: dict[str, Any]) -> Callable:
    """``factory(**args)``: the reward a factory makes, with a clear message when the arguments are wrong."""
    try:
        fn = factory(**args)
    except TypeError as e:
        params = ", ".join(
            f"{n}={p.default!r}" if p.default is not p.empty else n
            for n, p in params_of(factory).items()
            if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        )
        raise CheckError(
            "reward", f"reward factory '{ref}' rejected its arguments {args}: {e}", f"its parameters: {params}"
        )
    except Exception as e:  # noqa: BLE001 - user code
        raise CheckError(
            "reward",
            f"reward factory '{format_call(ref, args)}' raised {type(e).__name__}: {e}",
            "fix the factory's arguments",
        )
    if not callable(fn):
        raise CheckError(
            "reward",
            f"'{ref}' called with {args} returned {short(fn, 80)}, not a reward function",
            "point at a factory that returns a function, or drop the arguments",
        )
    return fn


def _check_signature(fn: Callable, name: str) -> None:
    if hasattr(fn, "score_batch"):
        return
    if not params_of(fn):
        raise CheckError(
            "reward",
            f"reward '{name}' takes no arguments",
            "accept at least the completion: def reward(completion, answer, **kwargs) -> float",
        )


def load_reward(spec: Any, base_dir: str | os.PathLike | None = None) -> Reward:
    if isinstance(spec, Reward):
        return spec
    if spec is None or (isinstance(spec, (str, list, tuple, dict)) and len(spec) == 0):
        raise CheckError(
            "reward",
            "no reward function given",
            f"pick a built-in ({', '.join(BUILTIN_REWARDS)}) or give 'file.py:function'",
        )
    if isinstance(spec, dict) and "mix" in spec:
        spec = spec["mix"]
    items = list(spec) if isinstance(spec, (list, tuple)) else [spec]
    return Reward([_term_from(i, base_dir) for i in items])
