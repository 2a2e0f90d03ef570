"""What the check worker does. Runs ONLY in the worker (``aworld_gui.worker.zygote``), in a fresh
fork per call: these functions import datasets/transformers and user code (tools, rewards).

Every function takes and returns plain, picklable data.
"""

from __future__ import annotations

import inspect
import time
from pathlib import Path
from typing import Any

PREVIEW_ROWS = 8


def preload() -> str | None:
    """Import what every check needs, once, in the zygote (forks inherit it)."""
    errors = []
    try:
        import datasets  # noqa: F401
        import jinja2  # noqa: F401
        import transformers  # noqa: F401
        from transformers import AutoTokenizer  # noqa: F401

        import engines.core.prepare  # noqa: F401
        import engines.core.standard  # noqa: F401

        from . import check_inputs  # noqa: F401 - every check and launch reads its inputs with it
    except Exception as e:  # noqa: BLE001
        errors.append(f"{type(e).__name__}: {e}")
    try:  # agents with MCP servers: the SDK's clients (the agent check lists each server's tools)
        import mcp.client.sse  # noqa: F401
        import mcp.client.stdio  # noqa: F401
        import mcp.client.streamable_http  # noqa: F401
    except ImportError:
        pass  # reported by the agent check of an agent that needs it
    from engines.core.registry import get_processor_class, registered_engines

    for name in registered_engines():
        try:
            cls = get_processor_class(name)
            if callable(getattr(cls, "preload", None)):
                cls.preload()  # what the engine's checks import (forks inherit it instead of importing again)
        except Exception as e:  # noqa: BLE001 - reported per engine by catalog()
            errors.append(f"engine {name}: {type(e).__name__}: {e}")
    from engines.fit.gpus import cuda_devices

    cuda_devices()  # the GPUs, read once in a fork (never CUDA in the worker): every check inherits them
    return "; ".join(errors) or None


# -- catalog ---------------------------------------------------------------------------------------
def catalog() -> dict[str, Any]:
    """Registered engines with availability and config schema; built-in rewards and the reward catalog
    (built-ins, TRL's, verl's: engines.rewards.catalog)."""
    from engines.core.registry import registered_engines
    from engines.core.checks import engine_result
    from engines.rewards import builtin_descriptions

    engines = []
    for name in registered_engines():
        cls, result = engine_result(name)
        fields: list[dict] = []
        defaults: dict[str, Any] = {}
        try:
            watch = list(cls.environment_files()) if hasattr(cls, "environment_files") else []
        except Exception:  # noqa: BLE001 - then nothing to watch: the availability stays as read
            watch = []
        if cls is not None:
            try:
                fields = list(cls.describe_config()) if hasattr(cls, "describe_config") else []
                defaults = dict(cls.get_default_config() or {})
            except Exception as e:  # noqa: BLE001
                result.warnings.append(f"config schema unavailable: {e}")
        engines.append(
            {
                "name": name,
                "available": result.status != "error",
                "reason": result.details.get("reason") or ("" if result.status != "error" else result.message),
                "description": (getattr(cls, "description", "") or "") if cls is not None else "",
                "fields": fields,
                "defaults": defaults,
                "setup": callable(getattr(cls, "setup_environment", None)),  # python -m engines setup <name>
                "watch": watch,  # files whose change changes "available" (the studio reads it again then)
            }
        )
    try:
        from engines.rewards.catalog import catalog as reward_catalog

        rewards = reward_catalog()
    except Exception as e:  # noqa: BLE001 - the built-ins stay listed
        rewards = [
            {
                "key": "error:catalog",
                "label": "reward catalog unavailable",
                "error": True,
                "description": f"{type(e).__name__}: {e}",
            }
        ]
    from engines.fit.model_source import local_models

    try:
        models = local_models()
    except Exception:  # noqa: BLE001 - an unreadable cache offers nothing, the rest of the catalog stands
        models = []
    return {"engines": engines, "rewards": builtin_descriptions(), "reward_catalog": rewards, "models": models}


def reward_functions(path: str) -> list[dict[str, str]]:
    """Public functions defined in a reward ``.py`` file, with the first line of their docstring."""
    from engines.inputs.loading import load_module_from_file

    module = load_module_from_file(Path(path).resolve())
    out = []
    for name, obj in vars(module).items():
        if name.startswith("_") or not inspect.isfunction(obj) or obj.__module__ != module.__name__:
            continue
        doc = " ".join((inspect.getdoc(obj) or "").split("\n\n")[0].split())
        out.append({"name": name, "ref": f"{Path(path).resolve()}:{name}", "doc": doc})
    return out


# -- checks ----------------------------------------------------------------------------------------
def check(inputs: dict[str, Any]) -> dict[str, Any]:
    """Every module's check, plus what Setup previews: parsed agent, dataset rows and columns,
    the first prompt through the chat template, the reward on sample rows, the effective config."""
    from engines.core.isolated_checks import name_input_files
    from engines.core.checks import check_all

    from .check_inputs import SetupInputs

    t0 = time.perf_counter()
    si = SetupInputs.from_dict(inputs)
    modules = si.modules()
    from engines.isolation.sandbox import report_progress

    # the free space the run's checkpoints need is the studio's runs folder's, not the scratch folder's
    checked = check_all(modules, on_module=report_progress, disk_dir=inputs.get("runs_dir"))
    results = name_input_files(checked, modules)
    by_module = {r.module: r.to_dict() for r in results}
    out: dict[str, Any] = {"results": by_module}
    out["preview"] = {"train": _preview(si.train), "test": _preview(si.test) if si.test else None}
    agent = by_module.get("agent", {})
    data = by_module.get("dataset", {})
    out["prompt"] = _render_first_prompt(agent, data, si)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def _preview(path: str | None) -> dict[str, Any] | None:
    if not path:
        return None
    try:
        from engines.inputs.data import load_table

        ds = load_table(path)
        n = min(PREVIEW_ROWS, len(ds))
        rows = ds.select(range(n)).to_list() if n else []
        return {
            "columns": list(ds.column_names),
            "rows": [{k: _cell(v) for k, v in r.items()} for r in rows],
            "total": len(ds),
        }
    except Exception as e:  # noqa: BLE001 - the dataset check reports the error
        msg = getattr(getattr(e, "result", None), "message", None) or f"{type(e).__name__}: {e}"
        return {"error": msg}


def _cell(v: Any) -> Any:
    if isinstance(v, (list, dict)):
        import json

        v = json.dumps(v, ensure_ascii=False)
    if isinstance(v, str) and len(v) > 300:
        return v[:300] + "…"
    return v


def _render_first_prompt(agent: dict, data: dict, si) -> dict[str, Any]:
    """The first training prompt exactly as the engine renders it (its dataset check's
    ``rendered_prompt``), else through the model's chat template with the agent's tools."""
    if agent.get("status") == "error" or data.get("status") == "error":
        return {"error": "fix the agent and dataset errors to see the rendered prompt"}
    details = data.get("details") or {}
    if details.get("rendered_prompt"):  # rendered by the engine itself: exactly what training sees
        return {"text": details["rendered_prompt"], "tokens": details.get("prompt_tokens"), "source": si.engine}
    spec = (agent.get("details") or {}).get("spec") or {}
    schemas = (agent.get("details") or {}).get("tool_schemas") or []
    try:
        from engines.inputs.data import ColumnMap, load_table, preview_text, prompt_messages

        cols = (data.get("details") or {}).get("columns") or {}
        kind = (data.get("details") or {}).get("prompt_kind") or "text"
        cmap = ColumnMap(prompt=cols.get("prompt"), answer=cols.get("answer"), prompt_kind=kind)
        row = load_table(si.train)[0]
        messages = prompt_messages(row, cmap, spec.get("system_prompt"))
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(spec["model"])
        if not getattr(tok, "chat_template", None):
            text = "\n".join(m["content"] for m in messages)
            return {
                "messages": messages,
                "text": text,
                "tokens": len(tok(text)["input_ids"]),
                "note": "the model has no chat template: the prompt is the raw text",
            }
        text = tok.apply_chat_template(messages, tools=schemas or None, add_generation_prompt=True, tokenize=False)
        return {
            "messages": messages,
            "text": preview_text(text),
            "tokens": len(tok(text, add_special_tokens=False)["input_ids"]),
        }
    except Exception as e:  # noqa: BLE001
        return {"error": f"could not render the prompt: {type(e).__name__}: {e}"}


# -- launch ----------------------------------------------------------------------------------------
def prepare(inputs: dict[str, Any], runs_dir: str) -> dict[str, Any]:
    """``prepare_run``: checks again in a fresh run dir, writes run.yaml, state ``queued``."""
    from engines.core.prepare import prepare_run
    from engines.results.check_result import CheckError

    from .check_inputs import SetupInputs

    si = SetupInputs.from_dict(inputs)
    try:
        run = prepare_run(si.modules(), runs_dir=runs_dir, name=si.name, note=si.note)
    except CheckError as e:
        return {"ok": False, "module": e.module, "error": str(e), "result": e.result.to_dict()}
    return {"ok": True, "run_dir": str(run.path), "run_id": run.run_id}


def prepare_eval(
    run_dir: str,
    checkpoints: list[str],
    dataset: str | None = None,
    rewards: list | None = None,
    samples: int = 1,
    temperature: float = 0.0,
    max_samples: int | None = None,
) -> dict[str, Any]:
    """``engines.inference.evaluation.prepare_eval`` (loads the dataset and the reward: user code, so here)."""
    from engines.results.check_result import CheckError
    from engines.inference.evaluation import prepare_eval as prepare

    try:
        ev = prepare(
            run_dir,
            checkpoints,
            dataset=dataset or None,
            reward=rewards or None,
            samples=int(samples),
            temperature=float(temperature),
            max_samples=int(max_samples) if max_samples else None,
        )
    except CheckError as e:
        return {"ok": False, "error": e.result.message, "module": e.module}
    return {"ok": True, "eval_dir": str(ev.path), "eval_id": ev.run_id}


def resume(run_dir: str, checkpoint: str = "latest", max_steps: int | None = None) -> dict[str, Any]:
    """``engines.core.resume.prepare_resume``: the run readied to continue from ``checkpoint`` (it writes into a run
    folder user code can write into: here, without the studio's privileges)."""
    from engines.core.resume import prepare_resume
    from engines.results.check_result import CheckError

    try:
        return {"ok": True, **prepare_resume(run_dir, checkpoint or "latest", max_steps)}
    except CheckError as e:
        return {"ok": False, "error": str(e.result.message), "module": e.module}


# -- the probe (engines/probe/) -------------------------------------------------------------------------
def probe(
    inputs: dict[str, Any],
    runs_dir: str,
    progress_file: str | None = None,
    prompts: int = 64,
    samples: int | None = None,
    seed: int = 0,
    refresh: bool = False,
    limit_s: float | None = None,
) -> dict[str, Any]:
    """The setup checked, then its base model probed (``AgentTrainer.probe``): the report (stored in
    ``<runs_dir>/.probes/``, read back for the same inputs). What the sampling says it is doing is written to
    ``progress_file`` (the studio shows it while the call runs); ``limit_s``: the sampling's time limit."""
    import shutil
    import tempfile

    from engines.core.agent_trainer import AgentTrainer
    from engines.isolation.sandbox import report_progress
    from engines.results.check_result import CheckError

    from .check_inputs import SetupInputs

    def said(doing: str | None) -> None:
        report_progress("probe", doing)
        if progress_file and doing:
            try:
                Path(progress_file).parent.mkdir(parents=True, exist_ok=True)
                Path(progress_file).write_text(doing, encoding="utf-8")
            except OSError:
                pass  # the progress shown is a courtesy; the probe goes on

    si = SetupInputs.from_dict(inputs)
    scratch = tempfile.mkdtemp(prefix="aworld-probe-")  # the checks' run folder: no run is made
    try:
        said("checking the setup")
        trainer = AgentTrainer(**si.modules().as_kwargs(), run_path=scratch)
        result = trainer.probe(
            prompts, samples, seed, runs_dir=runs_dir, timeout_s=limit_s, refresh=refresh, on_progress=said
        )
    except CheckError as e:
        return {"ok": False, "error": str(e.result.message), "module": e.module}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {"ok": True, "reused": result.reused, "report": result.to_dict()}


def probe_filter(report_path: str, out: str, band: Any = None) -> dict[str, Any]:
    """A probe's difficulty filter (``ProbeResult.write_filtered``): the training rows inside ``band`` written to
    ``out`` (its folder made here, by the call, not by the studio), with its provenance beside it."""
    import json

    from engines.probe import ProbeResult
    from engines.results.check_result import CheckError

    try:
        report = json.loads(Path(report_path).read_text(encoding="utf-8"))
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        return {"ok": True, **ProbeResult(report).write_filtered(out, band)}
    except CheckError as e:
        return {"ok": False, "error": str(e.result.message)}
    except (OSError, ValueError) as e:
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}


#: the folders a task's user code may write into (every other file is read-only to it: engines.isolation.read_only_files)
WRITES = {
    "prepare": lambda kwargs: [kwargs["runs_dir"]],
    "prepare_eval": lambda kwargs: [kwargs["run_dir"]],
    "resume": lambda kwargs: [kwargs["run_dir"]],
    # the report in <runs>/.probes/, its progress file; the filtered set in <runs>/.uploads/
    "probe": lambda kwargs: [kwargs["runs_dir"]],
    "probe_filter": lambda kwargs: [str(Path(kwargs["out"]).parents[2])],
}

TASKS = {
    "probe": probe,
    "probe_filter": probe_filter,
    "resume": resume,
    "prepare_eval": prepare_eval,
    "catalog": catalog,
    "check": check,
    "prepare": prepare,
    "reward_functions": reward_functions,
}
