"""Named endpoints for ``gradio_client``: check, probe, launch, status, stop, list_runs.

They are bound to hidden components so that file inputs are uploaded by the client
(``gradio_client.handle_file``). Every endpoint returns one JSON object (documented in
docs/STUDIO.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr

from engines.results.check_result import MODULES
from engines.inputs.data import preview_text

from ..core import inputs as inp
from ..worker.check_worker import WorkerError
from ..core.probes import DEFAULT_PROMPTS
from ..core.studio import Studio


class ApiError(ValueError):
    """An input the endpoint cannot use; ``module`` is the module it belongs to."""

    def __init__(self, message: str, module: str | None = None):
        super().__init__(message)
        self.module = module


def input_error(e: ApiError) -> dict[str, Any]:
    """The documented result of /check for inputs that could not be used: ``ok`` false, the error on its
    module, the other modules not checked."""
    modules = {
        m: {
            "status": "error" if m == e.module else "warning",
            "message": str(e) if m == e.module else "not checked (an input could not be used)",
            "warnings": [],
        }
        for m in MODULES
    }
    return {"ok": False, "error": str(e), "module": e.module, "modules": modules}


def _store(studio: Studio, path: str, module: str, what: str) -> str:
    try:
        return studio.store_upload(path)
    except (OSError, ValueError) as e:
        raise ApiError(
            f"the uploaded {what} '{Path(path).name[:80]}' cannot be stored: {getattr(e, 'strerror', None) or e}",
            module,
        )


def _path(file: Any) -> str | None:
    if not file:
        return None
    if isinstance(file, str):
        return file
    if isinstance(file, dict):
        return file.get("path") or file.get("name")
    return getattr(file, "path", None) or getattr(file, "name", None)


#: the most characters each text field of the API takes (its files have caps of their own)
TEXT_CAPS = {"rewards": 64 * 1024, "config": 1024 * 1024, "engine": 100}


def _check_text_sizes(**fields: Any) -> None:
    """Every text field within its cap, refused before anything reads it (module: the field's)."""
    for name, value in fields.items():
        cap = TEXT_CAPS[name]
        if value is not None and not isinstance(value, str):
            raise ApiError(
                f"`{name}` must be text, got {type(value).__name__}", "reward" if name == "rewards" else name
            )
        if value and len(value) > cap:
            raise ApiError(
                f"`{name}` is {len(value):,} characters; at most {cap:,} are read"
                + (" — put long settings in a config file" if name == "config" else ""),
                {"rewards": "reward", "config": "config", "engine": "engine"}[name],
            )


def build_inputs(
    studio: Studio,
    agent: Any,
    train: Any,
    test: Any,
    reward_file: Any,
    rewards: str | None,
    config: str | None,
    engine: str | None,
) -> inp.SetupInputs:
    """SetupInputs from uploaded files; omitted inputs fall back to the shipped demo (the test set
    only when the train set is omitted too)."""
    _check_text_sizes(rewards=rewards, config=config, engine=engine)
    demo = inp.demo_inputs()
    agent_p, train_p, test_p, reward_p = (_path(x) for x in (agent, train, test, reward_file))
    agent_path = demo.agent
    if agent_p:
        agent_path, _notes = inp.resolve_agent_upload(_store(studio, agent_p, "agent", "agent file"))
    train_path = _store(studio, train_p, "dataset", "train set") if train_p else demo.train
    if test_p:
        test_path = _store(studio, test_p, "dataset", "test set")
    else:
        test_path = demo.test if not train_p else None
    uploaded: dict[str, str] = {}
    if reward_p:
        stored = _store(studio, reward_p, "reward", "reward file")
        uploaded[Path(stored).name] = stored
        uploaded[Path(reward_p).name] = stored
    try:
        entries = inp.parse_reward_text(rewards or "", uploaded)
    except ValueError as e:
        raise ApiError(str(e), "reward")
    if not entries and reward_p:
        name = Path(next(iter(uploaded.values()))).name
        try:
            fns = studio.reward_functions(next(iter(uploaded.values())))
        except WorkerError as e:  # the file does not import: its error is the reward module's
            raise ApiError(f"the uploaded reward file '{name}' cannot be loaded: {e}", "reward")
        if len(fns) != 1:
            names = ", ".join(f["name"] for f in fns) or "none"
            raise ApiError(
                f"name the reward function(s) of the uploaded file in `rewards` "
                f"(e.g. '{name}:{fns[0]['name'] if fns else 'fn'}@1'); it defines: {names}",
                "reward",
            )
        entries = [{"ref": fns[0]["ref"], "weight": 1.0}]
    if not entries:
        entries = demo.rewards
    return inp.SetupInputs(
        agent=agent_path,
        train=train_path,
        test=test_path,
        rewards=entries,
        config_text=config or "",
        engine=(engine or inp.DEMO_ENGINE).strip(),
    )


def summarize_report(report: dict) -> dict[str, Any]:
    res = report["results"]
    out = {
        "ok": bool(report.get("ok")),
        "modules": {
            m: {"status": res[m]["status"], "message": res[m]["message"], "warnings": res[m].get("warnings") or []}
            for m in MODULES
        },
    }
    effective = (res["config"].get("details") or {}).get("effective")
    if effective:
        out["effective_config"] = effective
    prompt = report.get("prompt") or {}
    if prompt.get("text"):
        out["rendered_prompt"] = preview_text(prompt["text"])
    dry = (res["reward"].get("details") or {}).get("dry_run")
    if dry:
        out["reward_preview"] = _previewed(dry)
    if report.get("worker_error"):
        out["worker_error"] = report["worker_error"]
    return out


def _previewed(value: Any) -> Any:
    """Every text in a nested result cut to a preview (a 1 MB answer is not sent back whole)."""
    if isinstance(value, str):
        return preview_text(value, 1000)
    if isinstance(value, dict):
        return {k: _previewed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_previewed(v) for v in value]
    return value


def build_api(studio: Studio) -> None:
    """Hidden components + six named endpoints (call inside a ``gr.Blocks``)."""
    with gr.Group(visible=False):
        # no file_types: Gradio would refuse another suffix with no reason the client sees (data: null); the
        # check says what is wrong with any file (an agent saved as agent.yaml.bak is read as the YAML it is)
        agent = gr.File(label="agent (YAML)")
        train = gr.File(label="train dataset")
        test = gr.File(label="test dataset")
        reward_file = gr.File(label="reward .py file")
        rewards = gr.Textbox(label="rewards: NAME@WEIGHT, file.py:fn@WEIGHT (comma separated)")
        config = gr.Textbox(label="config overrides (YAML)")
        engine = gr.Textbox(label="engine", value=inp.DEMO_ENGINE)
        run_id = gr.Textbox(label="run id (empty: the latest run)")
        kill = gr.Checkbox(label="kill now instead of a graceful stop", value=False)
        prompts = gr.Number(label="prompts to probe", value=DEFAULT_PROMPTS, precision=0)
        out = gr.JSON(label="result")
        b_check, b_probe, b_launch, b_status, b_stop, b_list = (
            gr.Button(n) for n in ("check", "probe", "launch", "status", "stop", "list_runs")
        )
    files = [agent, train, test, reward_file, rewards, config, engine]

    def check(a, t, te, rf, rw, cfg, eng):
        """Check every module (agent, dataset, reward, config, engine) without launching."""
        try:
            si = build_inputs(studio, a, t, te, rf, rw, cfg, eng)
        except ApiError as e:
            return input_error(e)
        # no ``client``: a page's newer check replaces its older one (typing re-checks), but every API call is
        # one the caller waits for — one gradio_client's concurrent calls share a session and must not cancel
        # each other (issue 29 item 9); they queue (4 at once, concurrency_id "checks") and each gets its result
        return summarize_report(studio.check(si))

    def probe(a, t, te, rf, rw, cfg, eng, n):
        """Sample the base model on the setup before a launch (issue 44): pass rates, the zero-spread forecast,
        truncation, reward terms, the time forecast and the verdicts; the stored report when the setup was probed."""
        try:
            si = build_inputs(studio, a, t, te, rf, rw, cfg, eng)
            n = DEFAULT_PROMPTS if n is None else int(n)
            if n < 1:
                raise ApiError(f"prompts is {n}: probe at least 1 prompt")
        except (ApiError, TypeError, ValueError) as e:
            return {"ok": False, "error": str(e), "module": getattr(e, "module", None)}
        job = studio.probes.start(si, client=None, prompts=n)
        job.done.wait()  # the worker's call has its own time limit: it always ends
        res = job.result
        if not res.get("ok"):
            return {"ok": False, "error": res.get("error"), "module": res.get("module")}
        # what the report says; its ``inputs`` (the fingerprints of its key) and the samples stay in the stored file,
        # named as ``stored`` — a dict with a ``path`` in an answer is a file to gradio_client, which fetches it
        report = {k: v for k, v in res["report"].items() if k not in ("sample_rows", "inputs", "path")}
        return {"ok": True, "reused": bool(res.get("reused")), "stored": res["report"].get("path"), "report": report}

    def launch(a, t, te, rf, rw, cfg, eng):
        """Check, write the run directory and start training in its own process (queued when busy)."""
        try:
            si = build_inputs(studio, a, t, te, rf, rw, cfg, eng)
        except ApiError as e:
            return input_error(e)
        res = studio.launch(si)
        if not res.get("ok"):
            report = studio.check(si)
            res["modules"] = summarize_report(report)["modules"]
        return res

    def status(rid):
        """Status of a run (the latest when empty): state, step/total, ETA, last metrics, failure cause."""
        try:
            return studio.status((rid or "").strip() or None)
        except ValueError as e:
            return {"error": str(e)}

    def stop(rid, k):
        """Ask a run to stop at its next step boundary (kill=True: kill its process group now)."""
        try:
            return studio.stop((rid or "").strip(), kill=bool(k))
        except ValueError as e:
            return {"error": str(e)}

    def list_runs():
        """Every run under the runs dir, newest first."""
        return {"runs": studio.list_runs()}

    b_check.click(check, files, out, api_name="check", concurrency_id="checks", concurrency_limit=4)
    b_probe.click(probe, [*files, prompts], out, api_name="probe", concurrency_limit=1)
    b_launch.click(launch, files, out, api_name="launch", concurrency_limit=1)
    b_status.click(status, [run_id], out, api_name="status", concurrency_limit=None)
    b_stop.click(stop, [run_id, kill], out, api_name="stop", concurrency_limit=None)
    b_list.click(list_runs, [], out, api_name="list_runs", concurrency_limit=None)
