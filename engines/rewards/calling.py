"""Calling conventions: each reward is called the way its own framework calls it.

A reward function's parameters tell which framework it was written for:

* **TRL** (``prompts``, ``completions`` or ``completion_ids`` among its parameters) — called once per
  batch as ``GRPOTrainer`` calls it: ``fn(prompts=, completions=, completion_ids=, **columns,
  trainer_state=, log_extra=, log_metric=)``; completions are message lists when the prompts are
  chat; every dataset column is a keyword argument, and the reference answer is also there under the
  names TRL's and verl's built-ins read (``solution``, ``ground_truth``) when the dataset has no column
  of that name; a ``None`` in the result means "does not apply" (TRL's NaN); may be ``async``.
* **verl** (``solution_str``, ``predict_str``, ``model_output`` or ``data_source``) — called per
  sample with exactly the parameters its signature accepts among ``data_source, solution_str,
  ground_truth, extra_info`` and the spec's kwargs (verl's own scorers such as
  ``gsm8k.compute_score(solution_str, ground_truth)`` take only two); a dict result is read as verl
  reads it (``score``; the other keys are kept as extra information); may be ``async``.
* **verl batched** (``solution_strs``) — verl's BatchRewardManager convention.
* **per sample** (anything else) — ``fn(completion, answer, **kwargs)`` with aliases
  (response/output/prediction; ground_truth/reference/solution/target/label), ``prompt`` and any
  dataset column by name.
* **scorers** (reward models, LLM judges) — objects with ``score_batch(batch)``.

Every call goes through :func:`call_term` with a :class:`Batch`, in training and in the dry run
alike; a :class:`Trace` records what each reward received (argument names and shapes) and returned.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ..results.check_result import CheckError

COMPLETION_NAMES = ("completion", "response", "output", "prediction", "text")
ANSWER_NAMES = ("answer", "ground_truth", "reference", "solution", "target", "label")
#: names under which TRL-style functions also find the reference answer (TRL's accuracy_reward reads
#: ``solution``; verl-style code reads ``ground_truth``)
TRL_ANSWER_ALIASES = ("solution", "ground_truth")
TRL_PARAMS = ("prompts", "completions", "completion_ids")
VERL_COMPLETION_NAMES = ("solution_str", "predict_str", "model_output")
VERL_BATCH_PARAMS = ("solution_strs", "data_sources")
#: what TRL passes besides the columns (never per-row lists)
TRL_EXTRAS = ("trainer_state", "log_extra", "log_metric", "environments")
DEFAULT_DATA_SOURCE = "aworld"

SAMPLE, TRL, VERL, VERL_BATCH, SCORER = "sample", "batch", "verl", "verl_batch", "scorer"
STYLE_NAMES = {SAMPLE: "per sample", TRL: "TRL", VERL: "verl", VERL_BATCH: "verl batched", SCORER: "scorer"}


class RewardError(RuntimeError):
    """A reward function failed during training (classified as cause "reward error")."""


def params_of(fn: Callable) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return {}


def has_var_kw(params: dict[str, inspect.Parameter]) -> bool:
    return any(p.kind == p.VAR_KEYWORD for p in params.values())


def detect_style(fn: Any) -> str:
    if hasattr(fn, "score_batch"):
        return SCORER
    params = params_of(fn)
    if any(p in params for p in VERL_BATCH_PARAMS):
        return VERL_BATCH
    if any(p in params for p in TRL_PARAMS):
        return TRL
    if any(p in params for p in VERL_COMPLETION_NAMES) or "data_source" in params:
        return VERL
    return SAMPLE


def looks_like_reward(fn: Any) -> bool:
    """Whether ``fn`` takes what a reward takes (else, given arguments, it is a factory)."""
    params = params_of(fn)
    names = set(params)
    known = {
        *COMPLETION_NAMES,
        *ANSWER_NAMES,
        *TRL_PARAMS,
        *VERL_COMPLETION_NAMES,
        *VERL_BATCH_PARAMS,
        "data_source",
        "prompt",
    }
    return bool(names & known) or has_var_kw(params)


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


def is_messages(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(m, dict) and "role" in m for m in value)


# -- what a reward receives -------------------------------------------------------------------------
@dataclass
class Batch:
    """Completions to score, with what the engine knows about them (one entry per completion)."""

    completions: list[Any]
    answers: list[Any]
    prompts: list[Any] | None = None
    columns: dict[str, list[Any]] = field(default_factory=dict)
    completion_ids: list[list[int]] | None = None
    #: passed as is to TRL-style functions (trainer_state, log_extra, log_metric, environments)
    extras: dict[str, Any] = field(default_factory=dict)
    #: chat prompts (completions become message lists for TRL-style functions); None: from the prompts
    conversational: bool | None = None
    tokenizer: Any = None
    trace: "Trace | None" = None

    def __len__(self) -> int:
        return len(self.completions)

    @property
    def chat(self) -> bool:
        if self.conversational is not None:
            return self.conversational
        return any(is_messages(p) for p in self.prompts or [])

    def texts(self) -> list[str]:
        return [message_text(c) for c in self.completions]

    def prompt_list(self) -> list[Any]:
        return list(self.prompts) if self.prompts is not None else [None] * len(self)

    def trl_completions(self) -> list[Any]:
        """Completions as TRL passes them: message lists for chat prompts, text otherwise."""
        if self.chat:
            return [
                c if is_messages(c) else [{"role": "assistant", "content": message_text(c)}] for c in self.completions
            ]
        return self.texts()

    def ids(self) -> list[list[int]]:
        """Completion token ids: the engine's, else the model's tokenizer on the text."""
        if self.completion_ids is not None:
            return [list(x) for x in self.completion_ids]
        if self.tokenizer is not None:
            return [list(self.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in self.texts()]
        raise CheckError(
            "reward",
            "this reward reads completion_ids (token ids) and no tokenizer is known here",
            "check it with an agent whose model folder has tokenizer files",
        )

    def row(self, i: int) -> dict[str, Any]:
        return {k: v[i] for k, v in self.columns.items()}

    def data_source(self, i: int) -> str:
        value = self.columns.get("data_source")
        return str(value[i]) if value is not None and value[i] is not None else DEFAULT_DATA_SOURCE

    def extra_info(self, i: int) -> dict[str, Any]:
        """verl's extra_info: the row's own ``extra_info`` column, else its other columns."""
        value = self.columns.get("extra_info")
        if value is not None and isinstance(value[i], dict):
            return dict(value[i])
        skip = {"data_source", "extra_info", "reward_model", "prompt", "ability", "agent_name"}
        return {k: v for k, v in self.row(i).items() if k not in skip and not k.startswith("_")}


# -- what a reward received and returned (for the dry run) --------------------------------------------
def shape(value: Any, depth: int = 0) -> str:
    """A short description of a value's type and shape: ``list[2] of list[1] of {role, content}``."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return f"bool {value}"
    if isinstance(value, (int, float)):
        return f"{type(value).__name__} {value:g}" if isinstance(value, float) else f"int {value}"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "…"
        return f"str {text!r}"
    if isinstance(value, dict):
        keys = list(value)[:6]
        more = ", …" if len(value) > 6 else ""
        return "{" + ", ".join(map(str, keys)) + more + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return f"{type(value).__name__}[0]"
        if depth >= 2:
            return f"list[{len(value)}]"
        inner = shape(value[0], depth + 1)
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            inner = "int"
        elif all(isinstance(v, str) for v in value):
            inner = "str"
        return f"list[{len(value)}] of {inner}"
    if callable(value):
        return "callable"
    return type(value).__name__


def short(value: Any, n: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 1] + "…"


@dataclass
class Trace:
    """What each term received (first call) and returned (every call), and what it logged."""

    calls: dict[str, dict[str, Any]] = field(default_factory=dict)

    def received(self, term: str, style: str, args: dict[str, Any], described: bool = False) -> None:
        """``args``: the call's arguments (their shapes are kept), or descriptions already (scorers)."""
        entry = self.calls.setdefault(term, {"returned": [], "logged": {}})
        entry.setdefault("style", STYLE_NAMES.get(style, style))
        entry.setdefault("args", {k: (str(v) if described else shape(v)) for k, v in args.items()})

    def returned(self, term: str, value: Any) -> None:
        self.calls.setdefault(term, {"returned": [], "logged": {}})["returned"].append(short(value))

    def logged(self, term: str, kind: str, name: str, value: Any) -> None:
        self.calls.setdefault(term, {"returned": [], "logged": {}})["logged"][f"{kind} {name}"] = short(value, 120)

    def to_dict(self) -> dict[str, Any]:
        return {k: dict(v) for k, v in self.calls.items()}


# -- results ----------------------------------------------------------------------------------------
def resolve(value: Any) -> Any:
    """The value of an awaitable (async reward functions), run on a loop of its own."""
    if not inspect.isawaitable(value):
        return value

    async def wait():
        return await value

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    box: dict[str, Any] = {}

    def run():  # a loop is running in this thread (e.g. verl's reward loop): use another thread
        try:
            box["value"] = asyncio.run(wait())
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = e

    t = threading.Thread(target=run, name="aworld-async-reward")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def as_score(value: Any, who: str, allow_none: bool = False) -> float | None:
    if isinstance(value, dict) and "score" in value:
        value = value["score"]
    if value is None and allow_none:
        return None
    if isinstance(value, bool):
        return float(value)
    if hasattr(value, "item") and not isinstance(value, (list, tuple, str)):
        value = value.item()
    if callable(value):
        raise CheckError(
            "reward",
            f"reward '{who}' returned a function ({short(value, 80)}): it is a factory",
            "give its arguments so it builds the reward: {ref: 'module:factory', args: {...}} "
            "(CLI: --reward 'module:factory(key=value,...)')",
        )
    if not isinstance(value, (int, float)):
        raise CheckError(
            "reward",
            f"reward '{who}' returned {value!r} ({type(value).__name__}); a reward must return a number",
            "return a float (e.g. 1.0 or 0.0)",
        )
    value = float(value)
    if not math.isfinite(value):
        raise CheckError(
            "reward",
            f"reward '{who}' returned {value}; rewards must be finite",
            "guard divisions and logs so the function never returns NaN or infinity",
        )
    return value


def _accepted(fn: Callable, candidates: dict[str, Any], params: dict | None = None) -> dict[str, Any]:
    """The candidates the signature accepts (all of them with ``**kwargs``)."""
    params = params_of(fn) if params is None else params
    if has_var_kw(params):
        return dict(candidates)
    return {k: v for k, v in candidates.items() if k in params}


# -- one call per style -----------------------------------------------------------------------------
def call_term(term: Any, batch: Batch) -> list[float | None]:
    """Score ``batch`` with one reward term; a value per completion (``None``: TRL's "not applicable")."""
    style, name, fn = term.style, term.name, term.fn
    if style == TRL:
        return _call_trl(term, batch)
    if style == SCORER:
        return _call_scorer(term, batch)
    if style == VERL_BATCH:
        return _call_verl_batch(term, batch)
    out = []
    params, prompts = term.params, batch.prompt_list()  # once per batch: a signature is slow to read
    for i in range(len(batch)):
        if style == VERL:
            args = _verl_args(term, params, batch, i)
        else:
            args = _sample_args(term, params, prompts[i], batch, i)
        if batch.trace is not None:
            batch.trace.received(name, style, args)
        try:
            value = resolve(fn(**args))
            if batch.trace is not None:
                batch.trace.returned(name, value)
            out.append(as_score(value, name))
        except Exception as e:
            e.aworld_sample = i  # type: ignore[attr-defined]  # which completion it failed on (dry run report)
            raise
    return out


def _scores(values: list, name: str, allow_none: bool = False) -> list[float | None]:
    """A batch reward's values as scores; a bad value's error names the completion it belongs to."""
    out = []
    for i, v in enumerate(values):
        try:
            out.append(as_score(v, name, allow_none=allow_none))
        except CheckError as e:
            e.aworld_sample = i  # type: ignore[attr-defined]
            raise
    return out


def _sample_args(term: Any, params: dict, prompt: Any, batch: Batch, i: int) -> dict[str, Any]:
    var_kw = has_var_kw(params)
    text, answer = message_text(batch.completions[i]), batch.answers[i]
    positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    comp_name = next((n for n in COMPLETION_NAMES if n in params), None)
    ans_name = next((n for n in ANSWER_NAMES if n in params), None)
    call: dict[str, Any] = {}
    if comp_name is None and positional:
        comp_name = positional[0].name
    if comp_name:
        call[comp_name] = text
    if ans_name is None and comp_name in [p.name for p in positional[:1]] and len(positional) >= 2:
        ans_name = positional[1].name
    if ans_name:
        call[ans_name] = answer
    for k, v in {"prompt": prompt, **batch.row(i), **term.kwargs}.items():
        if k in call or (k in ANSWER_NAMES and ans_name) or k.startswith("_"):
            continue
        if k in params or var_kw:
            call[k] = v
    return call


def _verl_args(term: Any, params: dict, batch: Batch, i: int) -> dict[str, Any]:
    text = message_text(batch.completions[i])
    candidates = {
        "data_source": batch.data_source(i),
        "solution_str": text,
        "ground_truth": batch.answers[i],
        "extra_info": batch.extra_info(i),
    }
    for alias in VERL_COMPLETION_NAMES[1:]:
        if alias in params:
            candidates[alias] = text
    candidates.update(term.kwargs)
    args = _accepted(term.fn, candidates, params)
    # dataset columns a verl function names explicitly (verl itself passes them only inside extra_info)
    for k, v in batch.row(i).items():
        if k in params and k not in args:
            args[k] = v
    return args


def _call_verl_batch(term: Any, batch: Batch) -> list[float | None]:
    n = range(len(batch))
    candidates = {
        "data_sources": [batch.data_source(i) for i in n],
        "solution_strs": batch.texts(),
        "ground_truths": list(batch.answers),
        "extra_infos": [batch.extra_info(i) for i in n],
        **term.kwargs,
    }
    args = _accepted(term.fn, candidates, term.params)
    if batch.trace is not None:
        batch.trace.received(term.name, term.style, args)
    out = resolve(term.fn(**args))
    if batch.trace is not None:
        batch.trace.returned(term.name, out)
    _check_length(term.name, out, len(batch))
    return _scores(out, term.name)


def trl_kwargs(term: Any, batch: Batch) -> dict[str, Any]:
    """What GRPOTrainer passes a reward function, with the answer under TRL's/verl's names."""
    columns = {k: list(v) for k, v in batch.columns.items() if not k.startswith("_")}
    for alias in TRL_ANSWER_ALIASES:
        if alias not in columns:
            columns[alias] = list(batch.answers)
    args: dict[str, Any] = {"prompts": batch.prompt_list(), "completions": batch.trl_completions(), **columns}
    params = term.params
    if "completion_ids" in params or (batch.completion_ids is not None and has_var_kw(params)):
        args["completion_ids"] = batch.ids()
    args.update(batch.extras)
    args.update(term.kwargs)
    return _accepted(term.fn, args, params)


def _call_trl(term: Any, batch: Batch) -> list[float | None]:
    args = trl_kwargs(term, batch)
    if batch.trace is not None:
        for kind in ("log_extra", "log_metric"):
            if kind in args:
                args[kind] = _traced_logger(batch.trace, term.name, kind, args[kind])
        batch.trace.received(term.name, term.style, args)
    out = resolve(term.fn(**args))
    if batch.trace is not None:
        batch.trace.returned(term.name, out)
    _check_length(term.name, out, len(batch), trl=True)
    return _scores(out, term.name, allow_none=True)


def _call_scorer(term: Any, batch: Batch) -> list[float | None]:
    if batch.trace is not None:
        batch.trace.received(term.name, term.style, term.fn.describe_inputs(batch), described=True)
        log_metric = batch.extras.get("log_metric")
        extras = dict(batch.extras, log_metric=_traced_logger(batch.trace, term.name, "log_metric", log_metric))
        batch = Batch(**{**batch.__dict__, "extras": extras})
    out = term.fn.score_batch(batch)
    if batch.trace is not None:
        batch.trace.returned(term.name, out)
    _check_length(term.name, out, len(batch))
    return _scores(out, term.name, allow_none=True)


def _traced_logger(trace: Trace, term: str, kind: str, inner: Callable | None) -> Callable:
    def log(name, value):
        trace.logged(term, kind, name, value)
        if inner is not None:
            inner(name, value)

    return log


def _check_length(name: str, out: Any, n: int, trl: bool = False) -> None:
    if not isinstance(out, (list, tuple)) or len(out) != n:
        style = " (TRL style)" if trl else ""
        raise CheckError(
            "reward",
            f"reward '{name}'{style} must return a list with one value per completion ({n}), got {short(out, 120)}",
        )
