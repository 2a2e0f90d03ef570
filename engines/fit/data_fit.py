"""Whether the settings fit the data and the model, checked before anything trains (engine-neutral).

An engine describes how its settings consume data in a :class:`DataFit` (its
``StandardProcessor.data_fit`` hook, e.g. :mod:`engines.trl.data_fit`); :func:`check_data_fit`
then refuses what would not train, with the keys to change:

* **steps** — the optimizer steps the usable rows support for the batch settings; a run that
  would train 0 steps (fewer rows than one step consumes) is refused;
* **lengths** — the longest prompts, in tokens as the engine renders them (the rows named by
  their line in the file), against the model's context (``config.json``, no weights loaded) and the
  engine's prompt limit, with the completion length on top;
* **memory** — a floor, not an estimate: what one step must hold at least (e.g. the logits of one
  forward batch) against the memory there is. A setting whose floor alone exceeds it is refused.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Callable

from ..results.check_result import CheckError
from ..inputs.data import prompt_text
from ..inputs.row_location import locate_rows

GB = 1 << 30
#: prompts measured in tokens (the longest by characters; the longest in tokens is among them)
MEASURED_PROMPTS = 8
#: rows scanned for prompt lengths (characters); beyond this, the rest is not measured
SCAN_ROWS = 500_000


@dataclass
class DataFit:
    """How an engine's settings use the data (all counts per optimizer step unless said otherwise)."""

    prompts_per_step: int  # distinct prompts one optimizer step consumes
    step_explain: str  # e.g. "prompts_per_step=4 × gradient_accumulation_steps=1"
    step_keys: list[str]  # the keys that set it
    drop_last: bool = True  # a last partial batch is dropped (no step from it)
    max_steps: int | None = None  # optimizer steps asked for
    completion_tokens: int | None = None  # tokens generated per completion
    completion_key: str | None = None
    prompt_limit: int | None = None  # the engine's own limit on prompt tokens (None: none)
    prompt_limit_key: str | None = None
    prompt_limit_fails: bool = True  # a longer prompt stops training (else it is truncated)
    # the memory floor: ``sequences`` sequences of (longest prompt + completion) tokens held at once, each
    # token taking at least ``bytes_per_token`` bytes, against ``memory_bytes`` (None: not checked)
    sequences: int = 0
    sequences_explain: str = ""
    sequence_keys: list[str] = field(default_factory=list)
    bytes_per_token: float = 0.0
    bytes_explain: str = ""
    memory_bytes: int | None = None
    memory_where: str = "this machine"


@dataclass
class PromptLength:
    row: int  # 0-based index in the dataset
    tokens: int
    where: str  # "line 7", "row 3"


def usable_rows(bundle: Any) -> int:
    """Training rows with a non-empty prompt (engines skip the empty ones)."""
    report = (bundle.report or {}).get("train") or {}
    return int(report.get("rows", len(bundle.train))) - int(report.get("empty_prompts", 0))


def steps_per_epoch(rows: int, fit: DataFit) -> int:
    if fit.drop_last:
        return rows // fit.prompts_per_step
    return -(-rows // fit.prompts_per_step) if rows else 0


def longest_prompts(bundle: Any, count_tokens: Callable[[dict], int], n: int = 3) -> list[PromptLength]:
    """The ``n`` longest training prompts in tokens (measured: the longest by characters), with their place."""
    ds, col = bundle.train, bundle.columns.prompt
    by_chars: list[tuple[int, int]] = []
    for start in range(0, min(len(ds), SCAN_ROWS), 10_000):
        for i, value in enumerate(ds[start : start + 10_000][col]):
            item = (len(prompt_text(value)), start + i)
            if len(by_chars) < MEASURED_PROMPTS:
                heapq.heappush(by_chars, item)
            elif item > by_chars[0]:
                heapq.heapreplace(by_chars, item)
    measured = []
    for _, row in by_chars:
        try:
            measured.append((count_tokens(ds[row]), row))
        except Exception:  # noqa: BLE001 - a row the template cannot render is the dataset check's business
            continue
    measured.sort(reverse=True)
    top = measured[:n]
    where = locate_rows(bundle.train_source, [r for _, r in top])
    return [PromptLength(r, t, where[r]) for t, r in top]


def _lengths_text(prompts: list[PromptLength]) -> str:
    return ", ".join(f"{p.where}: {p.tokens:,} tokens" for p in prompts)


def check_data_fit(
    fit: DataFit,
    bundle: Any,
    count_tokens: Callable[[dict], int] | None = None,
    context: int | None = None,
    context_source: str = "max_position_embeddings",
) -> dict[str, Any]:
    """Raise a CheckError (module ``config``, naming the keys) for settings the data or model cannot
    support; return what was measured (``steps_per_epoch``, ``longest_prompts``, ...) for the report."""
    out: dict[str, Any] = {}
    if bundle is None:
        return out
    rows = usable_rows(bundle)
    per_epoch = steps_per_epoch(rows, fit)
    out.update(usable_rows=rows, prompts_per_step=fit.prompts_per_step, steps_per_epoch=per_epoch)
    if per_epoch == 0:
        raise CheckError(
            "config",
            f"the training set has {rows} usable row(s) but one optimizer step takes "
            f"{fit.prompts_per_step} prompts ({fit.step_explain}): training would run 0 steps",
            f"lower {' or '.join(fit.step_keys)} so one step takes at most {rows} prompt(s), or add rows",
            keys=fit.step_keys,
            rows=rows,
        )
    if fit.max_steps:
        out["epochs"] = round(fit.max_steps / per_epoch, 2)

    longest: list[PromptLength] = []
    if count_tokens is not None:
        longest = longest_prompts(bundle, count_tokens)
        out["longest_prompts"] = [{"row": p.row, "where": p.where, "tokens": p.tokens} for p in longest]
    top = longest[0].tokens if longest else 0
    src = f"{bundle.train_source.rsplit('/', 1)[-1]} " if getattr(bundle, "train_source", None) else ""
    if longest and context and top >= context:
        over = [p for p in longest if p.tokens >= context]
        raise CheckError(
            "config",
            f"the longest training prompts do not fit the model's context of {context:,} tokens "
            f"({context_source} in its config.json): {src}{_lengths_text(over)}",
            "shorten or drop those rows (the model cannot read past its context)",
            keys=[],
            rows=[p.row for p in over],
        )
    if longest and fit.prompt_limit and top > fit.prompt_limit and fit.prompt_limit_fails:
        over = [p for p in longest if p.tokens > fit.prompt_limit]
        raise CheckError(
            "config",
            f"{fit.prompt_limit_key}={fit.prompt_limit:,} but the longest training prompts are "
            f"longer: {src}{_lengths_text(over)}",
            f"raise {fit.prompt_limit_key} to at least {top:,}, or shorten those rows",
            keys=[fit.prompt_limit_key],
            rows=[p.row for p in over],
        )
    if context and fit.completion_tokens and top + fit.completion_tokens > context:
        room = max(0, context - top)
        raise CheckError(
            "config",
            f"{fit.completion_key}={fit.completion_tokens:,} plus the longest prompt ({top:,} "
            f"tokens{', ' + longest[0].where if longest else ''}) exceeds the model's context of "
            f"{context:,} tokens ({context_source})",
            f"set {fit.completion_key} to at most {room:,}" if room else "shorten the prompts",
            keys=[fit.completion_key],
        )

    if fit.sequences and fit.bytes_per_token and fit.memory_bytes:
        out["memory_floor_gb"] = check_memory_floor(
            fit.sequences,
            top + (fit.completion_tokens or 0),
            fit.bytes_per_token,
            fit.memory_bytes,
            fit.sequences_explain,
            fit.bytes_explain,
            fit.memory_where,
            fit.sequence_keys,
        )
    return out


def check_memory_floor(
    sequences: int,
    tokens: int,
    bytes_per_token: float,
    memory_bytes: int,
    sequences_explain: str,
    bytes_explain: str,
    memory_where: str,
    keys: list[str],
) -> float:
    """Refuse settings whose memory floor (``sequences × tokens × bytes_per_token``: what one step must hold
    at the least) exceeds ``memory_bytes``; returns the floor in GB."""
    floor = sequences * max(tokens, 1) * bytes_per_token
    if floor > memory_bytes:
        raise CheckError(
            "config",
            f"one step must hold at least {_gb(floor)} ({sequences_explain} sequences × "
            f"{tokens:,} tokens × {bytes_explain}) but {memory_where} has {_gb(memory_bytes)}",
            f"lower {' or '.join(keys)}",
            keys=keys,
        )
    return round(floor / GB, 3)


def gpu_memory_bytes() -> int | None:
    """Memory of the first CUDA GPU: from torch when it is imported already, else ``nvidia-smi`` (no torch
    import for a check); None without one."""
    import shutil
    import subprocess
    import sys

    if sys.modules.get("torch") is not None:
        from .gpus import cuda_devices

        gpus = cuda_devices()  # without initializing CUDA in this process (it may fork checks or runs after)
        return gpus[0]["total_memory"] if gpus else None
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.split()
        return int(float(out[0]) * (1 << 20)) if out else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def _gb(n: float) -> str:
    return f"{n / GB:,.0f} GB" if n >= 10 * GB else f"{n / GB:,.1f} GB"
