"""The reward's dry run: every term scores a few dataset rows — the reference answer and a wrong one —
called exactly as training calls it (chat prompts, TRL's shapes, dataset columns, completion_ids from
the model's tokenizer, trainer_state, log_extra/log_metric), and reports what each term received and
returned so a user sees why a reward scores 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..results.check_result import CheckError, CheckResult
from ..isolation.sandbox import report_progress
from .calling import TRL, Batch, RewardError, Trace
from .catalog import aspect_of, example_for
from .mix import Reward
from .requirements import install_hint

WRONG_FALLBACK = "a wrong answer"


def _trainer_state() -> Any:
    try:
        from transformers import TrainerState

        return TrainerState()
    except Exception:  # noqa: BLE001 - transformers missing: TRL-style rewards get None, as outside a trainer
        return None


def completion_template(reward: Reward, data_source: str | None = None) -> str | None:
    """How a correct completion looks to the picked rewards (catalog examples, composed: answer
    formats such as ``#### {answer}`` inside wrappers such as ``<think>…</think>{answer}``)."""
    templates = [example_for(t.builtin or t.ref, data_source) for t in reward.terms]
    templates = [t for t in templates if t]
    if not templates:
        return None
    wrappers = [t for t in templates if not t.startswith("{") and t.endswith("{answer}") and "\n" in t]
    answers = [t for t in templates if t not in wrappers]
    out = answers[0] if answers else "{answer}"
    for w in wrappers:
        if w.replace("{answer}", "") not in out:
            out = w.replace("{answer}", out)
    return out


def _fill(template: str | None, answer: str) -> str:
    return template.replace("{answer}", answer) if template else answer


def _where(bundle: Any, row: int) -> str:
    """A dataset row as its file numbers it ("line 2 of train.jsonl")."""
    from ..inputs.row_location import locate_rows

    source = getattr(bundle, "train_source", None)
    return locate_rows(source, [row])[row] + (f" of {Path(source).name}" if source else "")


def _calling(term: Any, n: int, bundle: Any) -> tuple[str, str]:
    """Which user code the dry run calls now and on what, for a check that hangs, exits or dies in it
    ("score() from reward.py", "3 sample row(s) of train.jsonl")."""
    file, _, fn = (term.ref or "").rpartition(":")
    what = f"{fn}() from {Path(file).name}" if file.endswith(".py") else (term.ref or f"reward '{term.name}'")
    source = getattr(bundle, "train_source", None)
    return what, f"{n} sample row(s)" + (f" of {Path(source).name}" if source else "")


def dry_run_reward(
    reward: Reward, bundle: Any, rows: int = 3, system_prompt: str | None = None, tokenizer: Any = None
) -> CheckResult:
    """Call the reward on a few dataset rows with the reference answer and a wrong one."""
    from ..inputs import data as D

    ds = bundle.train
    n = min(rows, len(ds))
    answers = [D.row_answer(ds[i], bundle.columns) for i in range(min(len(ds), 50))]
    completions, refs, prompts, columns, meta = [], [], [], {}, []
    for i in range(n):
        row = ds[i]
        answer = answers[i]
        wrong = next((a for a in answers if a is not None and a != answer), None) or WRONG_FALLBACK
        source = row.get("data_source") if isinstance(row.get("data_source"), str) else None
        template = completion_template(reward, source)
        # TRL keeps every column but the prompt; the engines' prompts are chat messages
        cols = {k: v for k, v in row.items() if k != "prompt"}
        prompt = D.prompt_messages(row, bundle.columns, system_prompt)
        for label, text in (("reference", _fill(template, answer or "")), ("wrong", _fill(template, wrong))):
            completions.append(text)
            refs.append(answer)
            prompts.append(prompt)
            for k, v in cols.items():
                columns.setdefault(k, []).append(v)
            meta.append((i, label))
    trace = Trace()
    # TRL passes trainer_state; making one imports torch (about a second), so only for TRL-style terms
    trl_terms = any(t.style == TRL for t in reward.terms)
    extras = {"trainer_state": _trainer_state()} if trl_terms else {}
    batch = Batch(
        completions,
        refs,
        prompts,
        columns,
        extras=extras,
        conversational=True,
        tokenizer=tokenizer or reward.tokenizer,
        trace=trace,
    )
    extras_log: dict[str, Any] = {}
    batch.extras["log_extra"] = lambda column, values: extras_log.__setitem__(column, list(values))
    batch.extras["log_metric"] = lambda name, value: extras_log.__setitem__(name, value)
    parts: dict[str, list] = {}
    for term in reward.terms:
        what, on = _calling(term, n, bundle)
        report_progress("reward", f"calling {what} on {on}")  # named if the call hangs or kills the check
        try:
            parts[term.name] = reward._term_batch(term, batch)
        except SystemExit as e:
            raise CheckError(
                "reward",
                f"the reward module's code called sys.exit({e.code!r}) in {what} (dry run on {on})",
                "user code must not exit the check: return a value or raise an exception",
                calls=trace.to_dict(),
            ) from None
        except CheckError as e:
            j = getattr(e, "aworld_sample", None)
            where = f"{_where(bundle, meta[j][0])}, {meta[j][1]} answer" if j is not None else f"{n} sample row(s)"
            problem, tail = e.result.message, f" — {e.hint}"
            problem = problem[: -len(tail)] if e.hint and problem.endswith(tail) else problem
            raise CheckError(
                "reward",
                f"{problem} (dry run on {where})",
                e.hint if problem != e.result.message else None,
                calls=trace.to_dict(),
            )
        except RewardError as e:
            cause = e.__cause__ or e
            hint = install_hint(cause) if isinstance(cause, ImportError) else getattr(cause, "hint", None)
            j = getattr(cause, "aworld_sample", None)
            where = (
                f"{_where(bundle, meta[j][0])}, completion={completions[j]!r:.200}"
                if j is not None
                else f"{n} sample row(s), completions {completions[:2]!r}…"
            )
            raise CheckError(
                "reward",
                f"{e} (dry run on {where})",
                hint or "fix the function so it handles this input",
                calls=trace.to_dict(),
            ) from e
    results: list[dict[str, Any]] = []
    for j, (i, label) in enumerate(meta):
        if label == "reference":
            results.append({"row": i, "prompt": D.prompt_text(ds[i][bundle.columns.prompt])[:200], "answer": refs[j]})
        terms = {name: values[j] for name, values in parts.items()}
        results[-1][label] = {"completion": completions[j], "total": reward.total(terms), "terms": terms}
    warnings = []
    for name, values in parts.items():
        if values and all(v is None for v in values):
            warnings.append(
                f"'{name}' returned None for every sample row: it does not apply to them "
                "(TRL leaves such rows out of the reward)"
            )
    graders = [t for t in reward.terms if aspect_of(t.builtin or t.ref) == "answer"]

    def graded(side: dict) -> float:
        return sum(t.weight * side["terms"][t.name] for t in graders if side["terms"][t.name] is not None)

    if (
        graders
        and results
        and bundle.columns.answer
        and all(graded(r["reference"]) <= graded(r["wrong"]) for r in results)
    ):
        warnings.append("the reward does not score the reference answer above a wrong one on the sample rows")
    names = ", ".join(f"{t.name}×{t.weight:g}" for t in reward.terms)
    template = completion_template(reward, next(iter(columns.get("data_source") or []), None))
    msg = (
        f"{names}; dry run on {n} row(s): reference → "
        + ", ".join(f"{r['reference']['total']:.2f}" for r in results)
        + "; wrong → "
        + ", ".join(f"{r['wrong']['total']:.2f}" for r in results)
    )
    if template:
        msg += f" (completions written as {template!r})"
    calls = trace.to_dict()
    if extras_log:
        calls.setdefault("_logged", {}).update({k: repr(v)[:160] for k, v in extras_log.items()})
    return CheckResult(
        "reward",
        "warning" if warnings else "ok",
        msg,
        details={
            "terms": [t.to_spec() | {"name": t.name} for t in reward.terms],
            "dry_run": results,
            "calls": calls,
            "completion_template": template,
        },
        warnings=warnings,
    )
