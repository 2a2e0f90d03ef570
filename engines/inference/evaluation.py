"""Evaluation: score models (the agent's base model, checkpoints) on a dataset with the reward, through
the agent's own generation loop (tools run, as in training), in an evaluation directory that follows the
run-directory contract.

``<run>/evals/<eval_id>/`` (written by the evaluation process; readers only read it):

- ``eval.yaml``          what is evaluated: the models, the dataset, the reward, the sampling settings
- ``predictions.jsonl``  one row per sample: model, prompt, answer, completion, trajectory (tool calls and
                         results), each reward's value, the total
- ``metrics.json``       per model: ``reward`` (mean total), ``rewards/<name>``, ``samples``, ``prompts``,
                         ``pass@k`` (k > 1 samples per prompt), ``tool_calls``
- ``status.json``, ``events.jsonl``, ``eval.log``   as a training run's (state, progress, failure cause)

``prepare_eval`` checks everything and writes ``eval.yaml`` (state ``queued``); ``run_eval`` (the process
``aworld-train eval --dir <eval_dir>``) reads only that and evaluates.
"""

from __future__ import annotations

import gc
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..agents.agent_spec import AgentSpec, load_agent
from ..results.check_result import CheckError
from .checkpoints import ModelRef, resolve
from ..inputs.data import ColumnMap, load_datasets, prompt_messages, row_answer, save_for_spec
from ..rewards import Reward, load_reward
from ..rewards.native import COUNTERPARTS, PREFIX, split_native
from ..runs.causes import Cause, classify_failure
from ..runs.rundir import FAILED, FINISHED, QUEUED, RUNNING, RunDir, atomic_write_text, new_run_id

EVALS_DIR = "evals"
EVAL_SPEC = "eval.yaml"
PREDICTIONS = "predictions.jsonl"
METRICS = "metrics.json"
EVAL_LOG = "eval.log"
#: rewards that need no reference answer (every other one does)
ANSWER_FREE = {"answer_format", "length_penalty"}


@dataclass
class InferenceResult:
    """What ``inference()`` returns: the metrics, one prediction per sample, and where they were written."""

    metrics: dict[str, Any]
    predictions: list[dict] = field(default_factory=list)
    path: Path | None = None
    model: str = ""

    def __repr__(self) -> str:
        return f"InferenceResult(model={self.model!r}, metrics={self.metrics!r}, predictions={len(self.predictions)})"


# -- metrics --------------------------------------------------------------------------------------------
def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimate for a prompt with ``c`` correct among ``n`` samples."""
    if n - c < k:
        return 1.0
    return 1.0 - math.prod((n - c - i) / (n - i) for i in range(k))


def metrics_of(predictions: list[dict], reward_names: list[str], samples: int, threshold: float = 1.0) -> dict:
    totals = [p["reward"] for p in predictions]
    out: dict[str, Any] = {
        "reward": sum(totals) / len(totals) if totals else 0.0,
        "samples": len(predictions),
        "prompts": len({p["index"] for p in predictions}),
        "tool_calls": sum(p.get("tool_calls", 0) for p in predictions) / max(1, len(predictions)),
    }
    for name in reward_names:
        values = [p["rewards"].get(name) for p in predictions if p["rewards"].get(name) is not None]
        out[f"rewards/{name}"] = sum(values) / len(values) if values else None
    if samples > 1:
        by_prompt: dict[int, list[bool]] = {}
        for p in predictions:
            by_prompt.setdefault(p["index"], []).append(p["reward"] >= threshold)
        for k in sorted({1, samples} | ({2} if samples > 2 else set())):
            out[f"pass@{k}"] = sum(pass_at_k(len(v), sum(v), k) for v in by_prompt.values()) / max(1, len(by_prompt))
    return out


# -- the core ----------------------------------------------------------------------------------------------
def load_generator(ref: ModelRef, agent: AgentSpec):
    """The model of ``ref`` loaded, with the agent's loop (its tools) around it: an ``AgentGenerator``."""
    from .checkpoints import load
    from .rollout import AgentGenerator

    model, tokenizer = load(ref)
    return AgentGenerator(
        model, tokenizer, agent.tool_callables() if agent.has_tools else [], agent.tool_schemas, agent.max_steps
    )


def evaluate_model(
    ref: ModelRef,
    agent: AgentSpec,
    rows: list[dict],
    columns: ColumnMap,
    reward: Reward,
    samples: int = 1,
    temperature: float = 0.0,
    top_p: float = 1.0,
    max_new_tokens: int | None = None,
    batch_size: int = 32,
    progress: Callable[[int, int], None] | None = None,
    generator=None,
) -> list[dict]:
    """Generate ``samples`` completions per row with the agent's loop and score them; returns the
    predictions. ``generator``: an already loaded ``AgentGenerator`` (else the model is loaded here)."""
    from ..rewards.calling import Batch

    own = generator is None
    if own:
        generator = load_generator(ref, agent)
    reward.tokenizer = generator.tokenizer
    max_new = int(max_new_tokens or agent.max_tokens)
    prompts = [prompt_messages(r, columns, agent.system_prompt) for r in rows]
    work = [(i, s) for i in range(len(rows)) for s in range(samples)]
    predictions: list[dict] = []
    for start in range(0, len(work), batch_size):
        chunk = work[start : start + batch_size]
        trajs = generator.run([prompts[i] for i, _ in chunk], max_new, temperature, top_p, batch_size=batch_size)
        answers = [row_answer(rows[i], columns) for i, _ in chunk]
        cols = {k: [rows[i].get(k) for i, _ in chunk] for k in rows[0] if k != columns.prompt}
        totals, parts = reward.score_batch(
            Batch(
                [t.messages for t in trajs],
                answers,
                [prompts[i] for i, _ in chunk],
                cols,
                conversational=True,
                tokenizer=generator.tokenizer,
            )
        )
        for j, ((i, s), traj) in enumerate(zip(chunk, trajs)):
            predictions.append(
                {
                    "model": ref.label,
                    "index": i,
                    "sample": s,
                    "prompt": prompts[i],
                    "answer": answers[j],
                    "completion": traj.completion,
                    "trajectory": traj.messages,
                    "rewards": {n: v[j] for n, v in parts.items()},
                    "reward": totals[j],
                    "tool_calls": traj.tool_calls,
                    "tool_errors": traj.tool_errors,
                    "truncated": traj.truncated,
                    "completion_tokens": traj.tokens,
                    "turns": traj.turns,
                }
            )
        if progress is not None:
            progress(len(predictions), len(work))
    if own:
        del generator
        gc.collect()
    return predictions


# -- the evaluation directory -----------------------------------------------------------------------------
def _needs_answers(reward: Reward) -> list[str]:
    import inspect

    needy = []
    for t in reward.terms:
        if t.builtin:
            if t.builtin not in ANSWER_FREE:
                needy.append(t.name)
            continue
        try:
            params = inspect.signature(t.fn).parameters
        except (TypeError, ValueError):
            continue
        if any(p in params for p in ("answer", "ground_truth", "solution", "reference", "target", "label")):
            needy.append(t.name)
    return needy


def prepare_eval(
    run_dir: str | os.PathLike,
    checkpoints: list[str] | None = None,
    dataset: Any = None,
    columns: dict | None = None,
    reward: Any = None,
    samples: int = 1,
    temperature: float = 0.0,
    max_samples: int | None = None,
    max_new_tokens: int | None = None,
    pass_threshold: float = 1.0,
) -> RunDir:
    """Check an evaluation of ``run_dir``'s agent and write its directory (``eval.yaml``, state
    ``queued``). ``checkpoints``: names (``base``, ``latest``, ``checkpoint-N``) or folders; default
    ``latest``. ``dataset``/``reward`` default to the run's test set (else its train set) and reward.
    Raises :class:`CheckError` naming what is wrong."""
    run = RunDir(run_dir)
    spec = run.read_spec()
    if not spec:
        raise CheckError("run", f"{run.path} has no run.yaml", "give the directory of a run")
    agent = load_agent(spec["agent"])
    data = spec.get("data") or {}
    if dataset is None:
        dataset = data.get("test") or data.get("train")
        columns = columns or data.get("columns")
    if not isinstance(samples, int) or samples < 1 or samples > 1024:
        raise CheckError("config", f"samples per prompt must be 1-1024, got {samples!r}")
    if not (0.0 <= float(temperature) <= 5.0):
        raise CheckError("config", f"temperature must be between 0 and 5, got {temperature}")
    if samples > 1 and float(temperature) == 0.0:
        raise CheckError(
            "config",
            "several samples per prompt with temperature 0 are all the same completion",
            "set a temperature above 0 (e.g. 1.0) or samples to 1",
        )
    bundle = load_datasets(dataset, None, columns)
    left_out: list[str] = []
    if reward is None:  # the run's reward, less ms-swift's own (they run only inside ms-swift's training)
        reward, natives = split_native(spec.get("reward"))
        left_out = [PREFIX + name for name, _ in natives]
        if natives and not reward:
            counterparts = [COUNTERPARTS[n] for n, _ in natives if n in COUNTERPARTS]
            raise CheckError(
                "reward",
                f"this run's rewards ({', '.join(left_out)}) are ms-swift's own: they run "
                "only inside ms-swift's training, not in an evaluation",
                "evaluate with another reward" + (f", e.g. {', '.join(counterparts)}" if counterparts else ""),
            )
    reward_obj = load_reward(reward)
    needy = _needs_answers(reward_obj)
    if needy and not bundle.columns.answer:
        raise CheckError(
            "dataset",
            f"the dataset has no reference-answer column, and the reward {', '.join(needy)} needs one",
            "use a dataset with an answer column (or map one), or a reward that needs no answer",
        )
    refs = [resolve(c, agent.model, run) for c in (checkpoints or ["latest"])]
    labels = [r.label for r in refs]
    if len(set(labels)) != len(labels):
        raise CheckError("checkpoint", f"the same model is picked twice ({', '.join(labels)})")
    eval_dir = RunDir(run.path / EVALS_DIR / new_run_id("eval"))
    eval_dir.path.mkdir(parents=True)
    source = bundle.train_source or save_for_spec(bundle.train, eval_dir.path, "dataset")
    doc = {
        "eval_id": eval_dir.run_id,
        "run_id": run.run_id,
        "run_dir": str(run.path),
        "engine": spec.get("engine"),
        "agent": spec["agent"],
        "models": [r.to_dict() for r in refs],
        "dataset": {"path": source, "columns": bundle.columns.to_dict(), "rows": len(bundle.train)},
        "reward": reward_obj.to_spec(pickle_dir=eval_dir.path / "code"),
        "samples": samples,
        "temperature": float(temperature),
        "max_samples": max_samples,
        "max_new_tokens": max_new_tokens,
        "pass_threshold": pass_threshold,
    }
    if left_out:
        doc["rewards_left_out"] = {"rewards": left_out, "why": "ms-swift's own: they run only inside ms-swift"}
    import yaml

    atomic_write_text(eval_dir.file(EVAL_SPEC), yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    eval_dir.write_status(state=QUEUED, kind="eval", created=time.time(), models=labels)
    eval_dir.event("created", models=labels)
    return eval_dir


def read_eval(eval_dir: str | os.PathLike) -> dict:
    import yaml

    path = Path(eval_dir) / EVAL_SPEC
    return yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else {}


def run_eval(eval_dir: str | os.PathLike) -> list[InferenceResult]:
    """Execute a prepared evaluation directory (reads only its eval.yaml)."""
    out = RunDir(eval_dir)
    doc = read_eval(out.path)
    if not doc:
        raise ValueError(f"{out.path} has no {EVAL_SPEC}")
    out.mark_process(RUNNING, started=time.time())
    out.event("started", models=[m["label"] for m in doc["models"]])
    try:
        results = _evaluate_doc(doc, out)
    except BaseException as e:
        cause = (
            Cause.REWARD_ERROR
            if "RewardError" in type(e).__name__
            else Cause.KILLED
            if isinstance(e, KeyboardInterrupt)
            else classify_failure(f"{type(e).__name__}: {e}")
        )
        message = f"{type(e).__name__}: {e}"
        out.write_status(state=FAILED, cause=cause, error=message, ended=time.time())
        out.event("failed", cause=cause, message=message)
        raise
    finally:
        _stop_tool_servers()
    out.write_status(state=FINISHED, ended=time.time())
    out.event("finished", metrics={r.model: r.metrics.get("reward") for r in results})
    return results


def _stop_tool_servers() -> None:
    """The MCP servers the evaluation's tool calls started stop with it: an in-process ``inference()`` leaves
    none running. (Only when MCP tools were used: the module is not imported otherwise.)"""
    engines = __package__.rpartition(".")[0]  # engines (or the name of a snapshot of it)
    client = sys.modules.get(f"{engines}.tools.mcp_client")
    if client is not None:
        client.close_default_pool()


def _evaluate_doc(doc: dict, out: RunDir) -> list[InferenceResult]:
    from ..inputs.data import load_table

    agent = load_agent(doc["agent"])
    cols = doc["dataset"]["columns"]
    table = load_table(doc["dataset"]["path"])
    columns = ColumnMap(prompt=cols["prompt"], answer=cols.get("answer"))
    n = len(table) if not doc.get("max_samples") else min(len(table), int(doc["max_samples"]))
    rows = [table[i] for i in range(n)]
    reward = load_reward(doc["reward"])
    refs = [ModelRef(**m) for m in doc["models"]]
    total = len(refs) * n * doc["samples"]
    done_before = 0
    results = []
    all_metrics: dict[str, Any] = {}
    for ref in refs:

        def progress(done: int, _total: int, base=done_before) -> None:
            out.write_status(step=base + done, total_steps=total, model=ref.label, durable=False)  # noqa: B023

        t0 = time.time()
        generator = load_generator(ref, agent)  # timed apart: a big model's load is not its generation
        t_loaded = time.time()
        preds = evaluate_model(
            ref,
            agent,
            rows,
            columns,
            reward,
            doc["samples"],
            doc["temperature"],
            max_new_tokens=doc.get("max_new_tokens"),
            progress=progress,
            generator=generator,
        )
        del generator  # one model in memory at a time
        gc.collect()
        with open(out.file(PREDICTIONS), "a", encoding="utf-8") as f:
            for p in preds:
                f.write(json.dumps(p, ensure_ascii=False, default=str) + "\n")
        metrics = metrics_of(preds, reward.names, doc["samples"], doc.get("pass_threshold", 1.0))
        t_end = time.time()
        metrics["load_seconds"] = round(t_loaded - t0, 2)
        metrics["generate_seconds"] = round(t_end - t_loaded, 2)  # the agent's loop and the reward, every sample
        metrics["seconds"] = round(t_end - t0, 2)
        all_metrics[ref.label] = metrics
        atomic_write_text(out.file(METRICS), json.dumps({"models": all_metrics}, indent=1, default=str))
        out.event("model_done", model=ref.label, reward=metrics["reward"])
        done_before += len(preds)
        results.append(InferenceResult(metrics, preds, out.path, ref.label))
    return results


def list_evals(run_dir: str | os.PathLike) -> list[RunDir]:
    """A run's evaluations, newest first."""
    base = Path(run_dir) / EVALS_DIR
    if not base.is_dir():
        return []
    found = [RunDir(p) for p in base.iterdir() if p.is_dir() and (p / EVAL_SPEC).exists()]
    return sorted(found, key=lambda r: r.run_id, reverse=True)


def read_metrics(eval_dir: str | os.PathLike) -> dict:
    try:
        return json.loads((Path(eval_dir) / METRICS).read_text(encoding="utf-8")).get("models", {})
    except (OSError, json.JSONDecodeError):
        return {}
