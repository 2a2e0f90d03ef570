"""HTML fragments the tabs show: status badges, check panels, the run header, trajectories.

The HTML is the templates' (aworld_gui/templates/render/: setup.html, monitor.html, macros.html), rendered with
autoescape: every value is text there unless a template made it. These functions return ``Markup`` (a ``str``):
embed one in a template as it is, or join several with ``Markup("").join`` — ``+`` with a plain ``str`` escapes
that string.
"""

from __future__ import annotations

import json
import math
import re
import time
from typing import Any, Iterable

from markupsafe import Markup

from engines.runs.rundir import FAILED, FINISHED, QUEUED, RUNNING, STOPPED, STOPPING

from . import engine_text
from .i18n import _
from .progress import Progress
from .templates import macro

SETUP, MONITOR, MACROS = "render/setup.html", "render/monitor.html", "render/macros.html"

CHECK_LABEL = {"ok": _("OK"), "warning": _("Warning"), "error": _("Error"), "checking": _("Checking…"), "idle": "—"}
RUN_LABEL = {
    QUEUED: _("Queued"),
    RUNNING: _("Running"),
    STOPPING: _("Stopping"),
    STOPPED: _("Stopped"),
    FINISHED: _("Finished"),
    FAILED: _("Failed"),
    "unknown": _("Unknown"),  # what the studio shows for a status without a state (no run writes it)
}


def visible_text(text: str) -> str:
    """``text``, or what it is when there is nothing to see: a completion of spaces or newlines reads
    ``(whitespace '\\n ')``, an empty one ``(empty)`` (a blank cell read as a missing answer)."""
    if text.strip():
        return text
    return f"({_('whitespace')} {text!r})" if text else str(_("(empty)"))


def engine_html(text: str | None) -> Markup:
    """An engine's message in the page's language (engine_text.message), as text, its commands, paths and
    variables in ``<code>``."""
    if not text or "__i18n__" in text:
        return macro(MACROS, "engine")([(text or "", False)])
    pieces: list[tuple[str, bool]] = []
    for piece, code in engine_text.pieces(text):
        if code and len(piece) > 1 and piece[0] == piece[-1] == "`":  # the engine's own backticks: the <code> says it
            piece = piece[1:-1]
        if code and pieces and pieces[-1][1]:  # adjacent code pieces: one span
            pieces[-1] = (pieces[-1][0] + piece, True)
        else:
            pieces.append((piece, code))
    return macro(MACROS, "engine")(pieces)


def badge(status: str, label: str | None = None, elem: str = "") -> Markup:
    text = label or CHECK_LABEL.get(status) or RUN_LABEL.get(status) or status
    return macro(MACROS, "badge")(status, text, elem)


# -- Setup ---------------------------------------------------------------------------------------
def checks_strip(
    results: dict[str, dict] | None,
    titles: dict[str, str],
    checking: bool = False,
    seconds: float | None = None,
    check_id: str | None = None,
) -> Markup:
    """The row of module chips; ``data-check`` names the check it shows (a new one after every check)."""
    chips = []
    for module, title in titles.items():
        r = (results or {}).get(module) or {}
        chips.append((module, "checking" if checking and not r else (r.get("status") or "idle"), title))
    return macro(SETUP, "checks_strip")(chips, seconds, check_id or "")


def _label(status: str) -> Any:
    return CHECK_LABEL.get(status) or RUN_LABEL.get(status) or status


def module_status(module: str, title: str, result: dict | None, checking: bool = False) -> Markup:
    """The header of a module card: title, badge, message, warnings."""
    if checking and not result:
        return macro(SETUP, "module_status")(module, title, "checking", _label("checking"), checking=True)
    r = result or {"status": "idle", "message": "", "warnings": []}
    details = r.get("details") or {}
    if details.get("studio_hint"):  # the fix as the studio offers it, not as Python would write it
        r = dict(r, message=f"{details.get('problem') or r.get('message', '')} — {details['studio_hint']}")
    status = r.get("status", "idle")
    warnings = [engine_html(w) for w in r.get("warnings") or []]
    return macro(SETUP, "module_status")(module, title, status, _label(status), engine_html(r.get("message")), warnings)


def kv_table(rows: Iterable[tuple[str, Any]], cls: str = "aw-kv") -> Markup:
    """A key/value table: a key is text, a value text unless it is HTML (``Markup``)."""
    return macro(SETUP, "kv_table")(list(rows), cls)


def _param_type(prop: dict) -> str:
    kind = prop.get("type", "any")
    kind = " | ".join(kind) if isinstance(kind, list) else str(kind)
    if kind == "array" and isinstance(prop.get("items"), dict) and prop["items"].get("type"):
        kind = f"array of {prop['items']['type']}"
    if prop.get("enum"):
        kind = " | ".join(json.dumps(v) for v in prop["enum"])
    return kind + (" | null" if prop.get("nullable") else "")


def tool_item(schema: dict, server: str | None = None) -> Markup:
    """One tool: its call signature (each parameter's description on hover), where it comes from
    (a Python function, or the MCP server that serves it) and its description."""
    fn = schema.get("function", {})
    params = fn.get("parameters", {}) or {}
    required = set(params.get("required") or [])
    args = [
        (n, p.get("description", ""), n not in required, _param_type(p))
        for n, p in (params.get("properties") or {}).items()
    ]
    return macro(SETUP, "tool_item")(fn.get("name", "?"), fn.get("description", ""), args, server)


def agent_spec(
    spec: dict | None,
    schemas: list[dict] | None = None,
    tool_servers: dict[str, str] | None = None,
    mcp_servers: list[dict] | None = None,
    origins: dict[str, str] | None = None,
    config_model: str | None = None,
) -> Markup:
    """The parsed agent. ``tool_servers`` (tool name → MCP server) and ``mcp_servers`` (name, transport,
    target, tools) come from the agent check's details when the agent uses MCP servers. ``config_model``: the
    config's ``model``, which the run trains instead of the agent's (the card names the one trained)."""
    if not spec:
        return macro(SETUP, "agent_empty")()
    servers = tool_servers or {}
    tools = [tool_item(t, servers.get(t.get("function", {}).get("name"))) for t in schemas or []]
    prompt = spec.get("system_prompt")
    sampling = f"temperature {spec.get('temperature')}, top_p {spec.get('top_p')}, max_tokens {spec.get('max_tokens')}"
    return macro(SETUP, "agent_spec")(
        spec, tools, mcp_servers, origins, config_model, "" if prompt is None else str(prompt), sampling
    )


def engines_table(engines: list[dict], selected: str | None) -> Markup:
    rows = [
        (e["name"], e.get("available"), _reason(e.get("reason") or ""), engine_text.known(e.get("description")))
        for e in engines
    ]
    return macro(SETUP, "engines_table")(rows, selected)


def _reason(text: str, limit: int = 90) -> Markup:
    """A long unavailability reason folds into a <details> after its first part (up to its first "; " or " — ",
    so each part is read whole in the page's language), else after its last word within ``limit``."""
    if len(text) <= limit:
        return engine_html(text)
    sep = re.search(r"; | — ", text)
    cut, after = (sep.start(), sep.end()) if sep and sep.start() <= limit else (text.rfind(" ", 0, limit), None)
    first, rest = text[:cut], text[after:] if after else text[cut:].lstrip()
    return macro(SETUP, "folded")(engine_html(first), engine_html(rest))


def prompt_block(prompt: dict | None) -> Markup:
    if not prompt:
        return Markup("")
    if prompt.get("error"):
        return macro(SETUP, "prompt_block")(prompt["error"], [], "")
    meta = [("tokens", prompt["tokens"])] if prompt.get("tokens") is not None else []
    meta += [(what, prompt[what]) for what in ("source", "note") if prompt.get(what)]
    return macro(SETUP, "prompt_block")(None, meta, prompt.get("text", ""))


def memory_estimate(memory: dict | None, config_status: str | None = None) -> Markup:
    """The config check's memory estimate: total against the machine, and the parts."""
    if not memory:
        if config_status in ("ok", "warning"):  # checked, and this engine estimates nothing before launch
            note = _("This engine gives no memory estimate before launch.")
        else:
            note = _("The memory estimate appears here once the config checks.") if config_status != "error" else ""
        return macro(SETUP, "memory_none")(note)
    status = memory.get("status") or "ok"
    parts = [
        (k, engine_text.known(k.replace("_", " ")), fmt_bytes(v)) for k, v in (memory.get("parts") or {}).items() if v
    ]
    label = {"ok": _("fits"), "warning": _("near the limit"), "error": _("does not fit")}.get(status, status)
    return macro(SETUP, "memory_estimate")(
        status,
        label,
        (memory.get("per_process") or 0) / 2**30,
        engine_text.message(memory.get("summary")),
        parts,
        fmt_count(memory.get("trainable_params")),
        fmt_count(memory.get("total_params")) if memory.get("total_params") else None,
    )


def fmt_bytes(n: Any) -> str:
    """Bytes in the unit that reads best: 0.55 GB, 12.3 MB, 300 kB."""
    if not isinstance(n, (int, float)):
        return "—"
    for div, unit in ((2**30, "GB"), (2**20, "MB"), (2**10, "kB")):
        if abs(n) >= 0.1 * div:
            return f"{n / div:.2f} {unit}" if unit == "GB" else f"{n / div:.1f} {unit}"
    return f"{int(n)} B"


def fmt_count(n: Any) -> str:
    """12345678 → 12.3M"""
    if not isinstance(n, (int, float)):
        return "—"
    for div, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.1f}{unit}"
    return str(int(n))


# -- Monitor -------------------------------------------------------------------------------------
def format_duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "—"
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def fmt_num(v: Any, digits: int = 3) -> Markup:
    """A figure as the page shows it (HTML: a value that is not a number is shown as the text it is)."""
    if v is None:
        text = "—"
    elif isinstance(v, float):
        text = f"{v:.2e}" if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5) else f"{v:.{digits}f}"
    else:
        text = v
    return macro(MACROS, "text")(text)


def run_header(
    run_id: str,
    progress: Progress,
    latest: dict[str, Any],
    spec: dict,
    status: dict,
    failure: dict | None,
    stop_requested: bool,
    queue_note: str = "",
    reward_points: int = 0,
    attrs: dict[str, str] | None = None,
    run_label: dict | None = None,
    diagnoses: str = "",
) -> Markup:
    state = progress.state
    pct = 0.0
    if progress.total:
        pct = max(0.0, min(100.0, 100.0 * progress.step / progress.total))
    label = RUN_LABEL.get(state, state)
    if state == RUNNING and stop_requested:
        label = _("Stop requested")
    model = (spec.get("config") or {}).get("model") or (spec.get("agent") or {}).get("model", "")
    model = model.rstrip("/").rsplit("/", 1)[-1] if model else ""
    subtitle = " · ".join(
        x
        for x in [(run_label or {}).get("name"), spec.get("engine"), model, (spec.get("config") or {}).get("mode")]
        if x
    )
    figures = {
        "elapsed": format_duration(progress.elapsed_s),
        "eta": format_duration(progress.eta_s) if state == RUNNING else "—",
        "reward": fmt_num(latest.get("reward")),
        "loss": fmt_num(latest.get("loss"), 4),
        "eval_reward": fmt_num(latest.get("eval/reward")) if "eval/reward" in latest else None,
        "trainable": fmt_count(status.get("trainable_params")),
        "total": fmt_count(status.get("total_params")),
        "processes": int(status["world_size"]) if (status.get("world_size") or 1) > 1 else None,
    }
    share = 100.0 * (status.get("trainable_params") or 0) / status["total_params"] if status.get("total_params") else 0
    trackers = [
        (name, url, str(url).startswith(("http://", "https://")))
        for name, url in (status.get("trackers") or {}).items()
    ]
    if failure:
        failure = {"cause": engine_html(failure["cause"]), "message": engine_html(failure["message"])}
    return macro(MONITOR, "run_header")(
        run_id,
        progress,
        label,
        subtitle,
        pct,
        figures,
        status,
        share,
        failure,
        queue_note,
        trackers,
        cluster_note(status),
        attrs or {},
        reward_points,
        # HTML the Monitor's diagnoses panel made (tabs/diagnoses_panel.py escapes its values); Markup as it is
        Markup(diagnoses),
    )


def cluster_note(status: dict) -> Markup:
    """Where a run on a Ray cluster trains and keeps its checkpoints (docs/CLUSTER.md)."""
    if not status.get("ray_address") or not status.get("ray_job_id"):
        return Markup("")
    return macro(MONITOR, "cluster_note")(
        status["ray_address"], status["ray_job_id"], status.get("ray_job_status") or "", status.get("ray_run_dir")
    )


def no_run() -> Markup:
    return macro(MONITOR, "no_run")()


def _content(m: Any) -> str:
    if isinstance(m, dict):
        return str(m.get("content") or "")
    return "" if m is None else str(m)


def _messages(value: Any, default_role: str) -> list[dict]:
    if isinstance(value, list):
        return [m if isinstance(m, dict) else {"role": default_role, "content": str(m)} for m in value]
    if isinstance(value, dict):
        return [value]
    return [{"role": default_role, "content": "" if value is None else str(value)}]


#: a message's role as the trajectories show it (another role as written)
ROLE_LABEL = {"user": _("user"), "assistant": _("assistant"), "tool": _("tool"), "system": _("system")}
#: the run's events (engines/runs: events.jsonl) as the Monitor lists them (another event as written)
EVENT_LABEL = {
    "created": _("created"),
    "queued": _("queued"),
    "launched": _("launched"),
    "submitted": _("submitted"),
    "started": _("started"),
    "resumed": _("resumed"),
    "checkpoint": _("checkpoint"),
    "best_checkpoint": _("best checkpoint"),
    "summary": _("summary"),
    "tracker": _("tracker"),
    "model": _("model"),
    "launch": _("multi-process launch"),
    "warning": _("warning"),
    "diagnosis": _("diagnosis"),
    "stop_requested": _("stop requested"),
    "stopped": _("stopped"),
    "finished": _("finished"),
    "failed": _("failed"),
}


def trajectory(sample: dict) -> Markup:
    """One rollout: the prompt, each turn (tool calls and results included), every reward's value."""
    msgs = _messages(sample.get("prompt"), "user") + _messages(sample.get("completion"), "assistant")
    msgs = [m for m in msgs if m.get("role") != "system"]  # the agent's system prompt: shown in Setup
    turns = []
    for m in msgs:
        role = m.get("role", "assistant")
        content = _content(m)
        calls = []
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function", tc) if isinstance(tc, dict) else {}
            args = fn.get("arguments")
            if not isinstance(args, str):
                args = json.dumps(args, ensure_ascii=False)
            calls.append((fn.get("name", "?"), args, tc.get("server") if isinstance(tc, dict) else None))
        turns.append(
            {
                "role": role,
                "label": ROLE_LABEL.get(role, role),
                "name": m.get("name"),
                "server": m.get("server"),
                "content": content,
                "blank": visible_text(content),
                "calls": calls,
            }
        )
    rewards = [(k, fmt_num(v, 2)) for k, v in (sample.get("rewards") or {}).items()]
    return macro(MONITOR, "trajectory")(
        turns, sample.get("step"), sample.get("answer"), fmt_num(sample.get("reward"), 2), rewards
    )


def launch_note(run_id: str, queued: bool) -> Markup:
    """What Launch answers: the run, then what became of it (the id after "… when the running job ends" read as
    the job's name: the newcomer's walkthrough)."""
    return macro(MONITOR, "launch_note")(run_id, queued)


def samples_html(samples: list[dict], limit: int = 6) -> Markup:
    return macro(MONITOR, "samples")([trajectory(s) for s in list(samples)[-limit:][::-1]])


def events_html(events: list[dict], limit: int = 8) -> Markup:
    rows = []
    for e in list(events)[-limit:][::-1]:
        t = time.strftime("%H:%M:%S", time.localtime(e.get("time", 0)))
        extra = {k: v for k, v in e.items() if k not in ("time", "event", "traceback", "message")}
        # numbers as everywhere else on the page (a best checkpoint's value=0.30000000000000004 was shown whole)
        detail = ", ".join(f"{k}={fmt_num(v, 4) if isinstance(v, float) else v}" for k, v in extra.items())[:200]
        # an engine's words: in the page's language where they are known (engine_text)
        message = engine_html(str(e["message"])[:300]) if e.get("message") else None
        rows.append((t, EVENT_LABEL.get(e.get("event"), e.get("event")), message, detail))
    return macro(MONITOR, "events")(rows)
