"""A reward: a weighted mix of terms, usable per sample (verl, evaluation), batch-wise (TRL) and
written back into a self-contained run spec."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..results.check_result import CheckError
from .calling import TRL_EXTRAS, Batch, RewardError, call_term, detect_style, params_of


@dataclass
class RewardTerm:
    name: str
    fn: Callable[..., Any]
    weight: float = 1.0
    #: keyword arguments of every call
    kwargs: dict[str, Any] = field(default_factory=dict)
    builtin: str | None = None
    ref: str | None = None
    #: the factory's arguments when ``ref`` names a factory (``fn = ref(**args)``)
    args: dict[str, Any] | None = None
    #: a reward model's or judge's spec ({"reward_model": {...}} / {"judge": {...}})
    scorer_spec: dict[str, Any] | None = None
    style: str = "sample"

    def __post_init__(self) -> None:
        self.style = detect_style(self.fn)

    @property
    def params(self) -> dict:
        return params_of(self.fn)

    def score_batch(self, batch: Batch) -> list[float | None]:
        return call_term(self, batch)

    def __call__(self, completion: Any, answer: Any, prompt: Any = None, /, **columns: Any) -> float | None:
        batch = Batch([completion], [answer], [prompt], {k: [v] for k, v in columns.items()})
        return self.score_batch(batch)[0]

    def to_spec(self) -> dict[str, Any]:
        if self.scorer_spec is not None:
            d: dict[str, Any] = dict(self.scorer_spec)
        elif self.builtin:
            d = {"name": self.builtin}
        else:
            d = {"ref": self.ref}
        d["weight"] = self.weight
        if self.args is not None:
            d["args"] = dict(self.args)
        if self.kwargs:
            d["kwargs"] = dict(self.kwargs)
        return d


class Reward:
    """A weighted mix of reward terms. A term's ``None`` ("does not apply") counts as TRL counts it:
    left out of the weighted sum."""

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
        #: the model's tokenizer, for terms that read completion_ids when the engine gives none
        self.tokenizer: Any = None

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.terms]

    @property
    def weights(self) -> list[float]:
        return [t.weight for t in self.terms]

    def total(self, parts: dict[str, float | None]) -> float:
        return sum(t.weight * parts[t.name] for t in self.terms if parts.get(t.name) is not None)

    def _term_batch(self, term: RewardTerm, batch: Batch) -> list[float | None]:
        if batch.tokenizer is None:
            batch.tokenizer = self.tokenizer
        try:
            return term.score_batch(batch)
        except CheckError:
            raise
        except Exception as e:
            raise RewardError(f"reward function '{term.name}' raised {type(e).__name__}: {e}") from e

    def score_batch(self, batch: Batch) -> tuple[list[float], dict[str, list[float | None]]]:
        parts = {t.name: self._term_batch(t, batch) for t in self.terms}
        totals = [self.total({n: v[i] for n, v in parts.items()}) for i in range(len(batch))]
        return totals, parts

    def score(
        self, completion: Any, answer: Any, prompt: Any = None, /, **columns: Any
    ) -> tuple[float, dict[str, float | None]]:
        batch = Batch([completion], [answer], [prompt], {k: [v] for k, v in columns.items()})
        totals, parts = self.score_batch(batch)
        return totals[0], {n: v[0] for n, v in parts.items()}

    # -- TRL ------------------------------------------------------------------------------------
    def trl_functions(self, answer_key: str | None) -> list[Callable[..., list[float | None]]]:
        """One TRL reward function per term (use with ``reward_weights=self.weights``). Each gets
        what GRPOTrainer passes — prompts, completions (message lists for chat prompts),
        completion_ids, every dataset column, trainer_state, log_extra, log_metric — and calls its
        term the term's own way; the reference answer is read from the ``answer_key`` column."""
        funcs = []
        for term in self.terms:

            def fn(prompts, completions, completion_ids=None, _term=term, **kwargs):
                n = len(completions)
                extras = {k: kwargs.pop(k) for k in TRL_EXTRAS if k in kwargs}
                columns = {k: v for k, v in kwargs.items() if isinstance(v, (list, tuple)) and len(v) == n}
                answers = columns.pop(answer_key, None) if answer_key else None
                answers = [None if a is None else str(a) for a in (answers or [None] * n)]
                batch = Batch(
                    list(completions),
                    answers,
                    list(prompts) if prompts is not None else None,
                    columns,
                    completion_ids=completion_ids,
                    extras=extras,
                )
                return self._term_batch(_term, batch)

            fn.__name__ = term.name
            funcs.append(fn)
        return funcs

    # -- verl -----------------------------------------------------------------------------------
    def verl_compute_score(
        self,
        data_source: str,
        solution_str: str,
        ground_truth: Any,
        extra_info: dict | None = None,
        prompt: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """verl's per-sample call. verl's prompts are chat, so TRL-style terms get message lists."""
        columns = {"data_source": [data_source], "extra_info": [extra_info], **{k: [v] for k, v in kwargs.items()}}
        answer = None if ground_truth is None else str(ground_truth)
        batch = Batch([solution_str], [answer], [prompt], columns, conversational=True)
        totals, parts = self.score_batch(batch)
        return {"score": totals[0], **{f"reward_{k}": (0.0 if v[0] is None else v[0]) for k, v in parts.items()}}

    # -- spec -----------------------------------------------------------------------------------
    def to_spec(self, pickle_dir: str | os.PathLike | None = None) -> list[dict[str, Any]]:
        out = []
        for i, t in enumerate(self.terms):
            if t.builtin or t.ref or t.scorer_spec is not None:
                out.append(t.to_spec())
                continue
            if pickle_dir is None:
                raise CheckError(
                    "reward",
                    f"reward '{t.name}' cannot be written to a run spec",
                    "define it at module level in a .py file and pass 'file.py:function'",
                )
            import cloudpickle

            path = Path(pickle_dir) / f"reward_{i}_{t.name}.pkl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(cloudpickle.dumps(t.fn))
            out.append(
                {"pickle": str(path), "name": t.name, "weight": t.weight, **({"kwargs": t.kwargs} if t.kwargs else {})}
            )
        return out
