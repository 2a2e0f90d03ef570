"""HTML fragments the tabs show: status badges, check panels, the run header, trajectories.

Everything user-provided is escaped here (``esc``); these functions return strings only.
"""

from __future__ import annotations

import json
import math
import re
import time
from typing import Any, Iterable

from engines.runs.rundir import FAILED, FINISHED, QUEUED, RUNNING, STOPPED, STOPPING

from . import engine_text
from .i18n import _
from .progress import Progress
from .templates import escaped

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


def esc(value: Any) -> str:
    """HTML-escaped text (templates.escaped as a string): for the views not yet written as templates (issue 46)."""
    return str(escaped(value))


def engine_html(text: str | None) -> str:
    """An engine's message in the page's language (engine_text.message), escaped, its commands, paths and variables
    in ``<code>``."""
    if not text or "__i18n__" in text:
        return esc(text)
    out: list[str] = []
    for piece, code in engine_text.pieces(text):
        if code and len(piece) > 1 and piece[0] == piece[-1] == "`":  # the engine's own backticks: the <code> says it
            piece = piece[1:-1]
        if code and out and out[-1].endswith("</code>"):  # adjacent code pieces: one span
            out[-1] = out[-1][: -len("</code>")] + esc(piece) + "</code>"
        else:
            out.append(f"<code>{esc(piece)}</code>" if code else esc(piece))
    return "".join(out)


def badge(status: str, label: str | None = None, elem: str = "") -> str:
    text = label or CHECK_LABEL.get(status) or RUN_LABEL.get(status) or status
    extra = f' data-testid="{esc(elem)}"' if elem else ""
    return f'<span class="aw-badge aw-{esc(status)}"{extra} data-status="{esc(status)}">{esc(text)}</span>'


# -- Setup ---------------------------------------------------------------------------------------
def checks_strip(
    results: dict[str, dict] | None,
    titles: dict[str, str],
    checking: bool = False,
    seconds: float | None = None,
    check_id: str | None = None,
) -> str:
    """The row of module chips; ``data-check`` names the check it shows (a new one after every check)."""
    chips = []
    for module, title in titles.items():
        r = (results or {}).get(module) or {}
        status = "checking" if checking and not r else (r.get("status") or "idle")
        chips.append(
            f'<div class="aw-chip" data-module="{esc(module)}" data-status="{esc(status)}">'
            f'<span class="aw-dot aw-{esc(status)}"></span>{esc(title)}</div>'
        )
    tail = f'<span class="aw-muted">{_("checked in")} {seconds:.2f} s</span>' if seconds is not None else ""
    return f'<div class="aw-strip" data-check="{esc(check_id or "")}">{"".join(chips)}{tail}</div>'


def module_status(module: str, title: str, result: dict | None, checking: bool = False) -> str:
    """The header of a module card: title, badge, message, warnings."""
    if checking and not result:
        return (
            f'<div class="aw-mod" data-module="{esc(module)}" data-status="checking"><div class="aw-mod-head">'
            f'<span class="aw-mod-title">{esc(title)}</span>{badge("checking", elem=f"badge-{module}")}</div></div>'
        )
    r = result or {"status": "idle", "message": "", "warnings": []}
    details = r.get("details") or {}
    if details.get("studio_hint"):  # the fix as the studio offers it, not as Python would write it
        r = dict(r, message=f"{details.get('problem') or r.get('message', '')} — {details['studio_hint']}")
    status = r.get("status", "idle")
    warnings = "".join(f"<li>{engine_html(w)}</li>" for w in r.get("warnings") or [])
    warn_html = f'<ul class="aw-warnings">{warnings}</ul>' if warnings else ""
    return (
        f'<div class="aw-mod" data-module="{esc(module)}" data-status="{esc(status)}">'
        f'<div class="aw-mod-head"><span class="aw-mod-title">{esc(title)}</span>'
        f"{badge(status, elem=f'badge-{module}')}</div>"
        f'<div class="aw-msg aw-msg-{esc(status)}">{engine_html(r.get("message"))}</div>{warn_html}</div>'
    )


def kv_table(rows: Iterable[tuple[str, Any]], cls: str = "aw-kv") -> str:
    body = "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="{cls}">{body}</table>'


def _param_type(prop: dict) -> str:
    kind = prop.get("type", "any")
    kind = " | ".join(kind) if isinstance(kind, list) else str(kind)
    if kind == "array" and isinstance(prop.get("items"), dict) and prop["items"].get("type"):
        kind = f"array of {prop['items']['type']}"
    if prop.get("enum"):
        kind = " | ".join(json.dumps(v) for v in prop["enum"])
    return kind + (" | null" if prop.get("nullable") else "")


def tool_item(schema: dict, server: str | None = None) -> str:
    """One tool: its call signature (each parameter's description on hover), where it comes from
    (a Python function, or the MCP server that serves it) and its description."""
    fn = schema.get("function", {})
    params = fn.get("parameters", {}) or {}
    required = set(params.get("required") or [])
    args = ", ".join(
        f'<span class="aw-param" title="{esc(p.get("description", ""))}">{esc(n)}'
        f"{'' if n in required else '?'}: {esc(_param_type(p))}</span>"
        for n, p in (params.get("properties") or {}).items()
    )
    source = (
        f'<span class="aw-src aw-src-mcp" data-testid="tool-server">MCP · {esc(server)}</span>'
        if server
        else '<span class="aw-src">Python</span>'
    )
    return (
        f'<div class="aw-tool" data-tool="{esc(fn.get("name", "?"))}" data-server="{esc(server or "")}">'
        f"<code>{esc(fn.get('name', '?'))}({args})</code> {source} "
        f'<span class="aw-muted">{esc(fn.get("description", ""))}</span></div>'
    )


def _model_row(agent_model: str | None, config_model: str | None) -> str:
    if not config_model or config_model == agent_model:
        return f'<code data-testid="agent-model" data-source="agent">{esc(agent_model)}</code>'
    return (
        f'<code data-testid="agent-model" data-source="config">{esc(config_model)}</code> '
        f'<span class="aw-muted">{_("the config’s model, trained instead of the agent’s:")} '
        f"<code>{esc(agent_model)}</code></span>"
    )


def agent_spec(
    spec: dict | None,
    schemas: list[dict] | None = None,
    tool_servers: dict[str, str] | None = None,
    mcp_servers: list[dict] | None = None,
    origins: dict[str, str] | None = None,
    config_model: str | None = None,
) -> str:
    """The parsed agent. ``tool_servers`` (tool name → MCP server) and ``mcp_servers`` (name, transport,
    target, tools) come from the agent check's details when the agent uses MCP servers. ``config_model``: the
    config's ``model``, which the run trains instead of the agent's (the card names the one trained)."""
    if not spec:
        return f'<div class="aw-empty">{_("The parsed agent appears here once its YAML loads.")}</div>'
    tools = schemas or []
    servers = tool_servers or {}
    tool_html = "".join(tool_item(t, servers.get(t.get("function", {}).get("name"))) for t in tools) or (
        ", ".join(f"<code>{esc(t)}</code>" for t in spec.get("tools") or [])
        or f'<span class="aw-muted">{_("none")}</span>'
    )
    rows = [
        (_("name"), esc(spec.get("name"))),
        (_("model"), _model_row(spec.get("model"), config_model)),
        (_("system prompt"), f'<div class="aw-prompt">{esc(spec.get("system_prompt")) or _("none")}</div>'),
        (_("tools"), tool_html),
    ]
    if mcp_servers:
        rows.append(
            (
                _("MCP servers"),
                "".join(
                    f'<div class="aw-mcp-server" data-server="{esc(m.get("name"))}"><b>{esc(m.get("name"))}</b> '
                    f'<span class="aw-src">{esc(m.get("transport"))}</span> <code>{esc(m.get("target"))}</code> '
                    f'<span class="aw-muted">{len(m.get("tools") or [])} {_("tool(s) used")}</span>'
                    + (
                        f'<div class="aw-muted" data-testid="mcp-cwd">{_("working directory")}: <code>{esc(m["cwd"])}</code> '
                        f"{esc(m.get('cwd_note') or '')}</div>"
                        if m.get("cwd")
                        else ""
                    )
                    + "</div>"
                    for m in mcp_servers
                ),
            )
        )
    if origins:
        rows.append(
            (
                _("from"),
                "".join(
                    f'<div class="aw-origin" data-key="{esc(k)}"><code>{esc(k)}</code> ← {esc(v)}</div>'
                    for k, v in origins.items()
                ),
            )
        )
    rows += [
        (
            _("max turns"),
            f'{esc(spec.get("max_steps"))} <span class="aw-muted">'
            f"{_('model turns per rollout (tool calls add turns) — not the trainer’s steps')}</span>",
        ),
        (
            _("sampling"),
            esc(
                f"temperature {spec.get('temperature')}, top_p {spec.get('top_p')}, max_tokens {spec.get('max_tokens')}"
            ),
        ),
    ]
    if spec.get("llm_base_url"):
        rows.append((_("base url"), f"<code>{esc(spec['llm_base_url'])}</code>"))
    if spec.get("api_key"):
        rows.append(
            (_("api key"), f'<code>{esc(spec["api_key"])}</code> <span class="aw-muted">({_("masked")})</span>')
        )
    return kv_table(rows)


def engines_table(engines: list[dict], selected: str | None) -> str:
    rows = []
    for e in engines:
        ok = e.get("available")
        sel = ' class="aw-selected"' if e["name"] == selected else ""
        rows.append(
            f"<tr{sel}><td><b>{esc(e['name'])}</b></td>"
            f"<td>{badge('ok' if ok else 'error', _('available') if ok else _('unavailable'))}</td>"
            f'<td>{_reason(e.get("reason") or "")}<div class="aw-muted">{esc(engine_text.known(e.get("description")))}</div></td></tr>'
        )
    return f'<table class="aw-table aw-engines"><tbody>{"".join(rows)}</tbody></table>'


def _reason(text: str, limit: int = 90) -> str:
    """A long unavailability reason folds into a <details> after its first part (up to its first "; " or " — ",
    so each part is read whole in the page's language), else after its last word within ``limit``."""
    if len(text) <= limit:
        return engine_html(text)
    sep = re.search(r"; | — ", text)
    cut, after = (sep.start(), sep.end()) if sep and sep.start() <= limit else (text.rfind(" ", 0, limit), None)
    first, rest = text[:cut], text[after:] if after else text[cut:].lstrip()
    return f"<details><summary>{engine_html(first)} …</summary>{engine_html(rest)}</details>"


def prompt_block(prompt: dict | None) -> str:
    if not prompt:
        return ""
    if prompt.get("error"):
        return f'<div class="aw-empty">{esc(prompt["error"])}</div>'
    meta = []
    if prompt.get("tokens") is not None:
        meta.append(f"{prompt['tokens']} {_('tokens')}")
    if prompt.get("source"):
        meta.append(f"{_('rendered by the engine, exactly as training sees it')} ({esc(prompt['source'])})")
    if prompt.get("note"):
        meta.append(esc(prompt["note"]))
    return (
        f'<div class="aw-rendered-head">{_("First training prompt")} <span class="aw-muted">· {" · ".join(meta)}</span></div>'
        f'<pre class="aw-rendered" data-testid="rendered-prompt">{esc(prompt.get("text", ""))}</pre>'
    )


def memory_estimate(memory: dict | None, config_status: str | None = None) -> str:
    """The config check's memory estimate: total against the machine, and the parts."""
    if not memory:
        if config_status in ("ok", "warning"):  # checked, and this engine estimates nothing before launch
            note = _("This engine gives no memory estimate before launch.")
        else:
            note = _("The memory estimate appears here once the config checks.") if config_status != "error" else ""
        return f'<div class="aw-muted" data-testid="memory-estimate" data-status="none">{esc(note)}</div>'
    status = memory.get("status") or "ok"
    parts = memory.get("parts") or {}
    chips = "".join(
        f'<span class="aw-part" data-part="{esc(k)}"><b>{esc(engine_text.known(k.replace("_", " ")))}</b> {fmt_bytes(v)}</span>'
        for k, v in parts.items()
        if v
    )
    label = {"ok": _("fits"), "warning": _("near the limit"), "error": _("does not fit")}.get(status, status)
    params = ""
    if memory.get("total_params"):
        params = (
            f'<div class="aw-muted">{fmt_count(memory.get("trainable_params"))} {_("trainable of")} '
            f"{fmt_count(memory.get('total_params'))} {_('parameters')}</div>"
        )
    return (
        f'<div class="aw-memory" data-testid="memory-estimate" data-status="{esc(status)}" '
        f'data-gb="{(memory.get("per_process") or 0) / 2**30:.3f}">'
        f"<div><b>{_('Memory estimate')}</b> {badge(status, label)} {esc(engine_text.message(memory.get('summary')))}</div>"
        f'<div class="aw-parts">{chips}</div>{params}</div>'
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


def fmt_num(v: Any, digits: int = 3) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
            return f"{v:.2e}"
        return f"{v:.{digits}f}"
    return esc(v)


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
) -> str:
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
    stats = [
        (
            _("Step"),
            f'<span data-testid="stat-step">{progress.step}</span>'
            + (f' <span class="aw-muted">/ {progress.total}</span>' if progress.total else ""),
        ),
        (_("Elapsed"), format_duration(progress.elapsed_s)),
        (_("ETA"), format_duration(progress.eta_s) if state == RUNNING else "—"),
        (_("Speed"), f"{progress.steps_per_s:.2f} {_('steps/s')}" if progress.steps_per_s else "—"),
        (_("Reward · latest"), f'<span data-testid="stat-reward">{fmt_num(latest.get("reward"))}</span>'),
        (_("Loss · latest"), f'<span data-testid="stat-loss">{fmt_num(latest.get("loss"), 4)}</span>'),
    ]
    if "eval/reward" in latest:
        stats.append((_("Eval reward"), fmt_num(latest.get("eval/reward"))))
    if status.get("total_params"):
        share = 100.0 * (status.get("trainable_params") or 0) / status["total_params"]
        stats.append(
            (
                _("Trainable params"),
                f'<span data-testid="stat-params" data-trainable='
                f'"{status.get("trainable_params")}" data-total="{status["total_params"]}">'
                f"{fmt_count(status.get('trainable_params'))} / {fmt_count(status['total_params'])}</span>"
                f'<div class="aw-muted aw-stat-sub">{share:.1f} %{" · LoRA" if status.get("peft") else ""}'
                f"</div>",
            )
        )
    if (status.get("world_size") or 1) > 1:
        stats.append((_("Processes"), f'<span data-testid="stat-processes">{int(status["world_size"])}</span>'))
    stat_html = "".join(
        f'<div class="aw-stat"><div class="aw-stat-k">{k}</div><div class="aw-stat-v">{v}</div></div>' for k, v in stats
    )
    fail_html = ""
    if failure:
        fail_html = (
            f'<div class="aw-failure" data-testid="failure"><b>{_("Failed — cause:")} {engine_html(failure["cause"])}</b>'
            f"<div>{engine_html(failure['message'])}</div>"
            f'<div class="aw-muted">{_("The log tail below shows the last lines the run printed.")}</div></div>'
        )
    note = f'<div class="aw-note">{esc(queue_note)}</div>' if queue_note else ""
    links = status.get("trackers") or {}
    if links:
        note += (
            '<div class="aw-trackers" data-testid="trackers">'
            + " · ".join(
                f"{esc(name)}: "
                + (
                    f'<a href="{esc(url)}" target="_blank" rel="noopener">{esc(url)}</a>'
                    if str(url).startswith(("http://", "https://"))
                    else f"<code>{esc(url)}</code>"
                )
                for name, url in links.items()
            )
            + "</div>"
        )
    note += cluster_note(status)
    extra = "".join(f' data-{k}="{esc(v)}"' for k, v in (attrs or {}).items())
    return (
        f'<div class="aw-run" data-testid="run-header" data-state="{esc(state)}" data-run="{esc(run_id)}" '
        f'data-step="{progress.step}" data-reward-points="{reward_points}"{extra}>'
        f'<div class="aw-run-top"><div><div class="aw-run-id">{esc(run_id)}</div>'
        f'<div class="aw-muted">{esc(subtitle)}</div></div>'
        f"{badge(state, label, elem='run-state')}</div>"
        f'<div class="aw-msg aw-msg-warn" data-testid="studio-unreachable" hidden>'
        f"{_('Studio unreachable — runs keep training. The figures here are the last ones received; they resume by themselves when the studio is back.')}</div>"
        f'<div class="aw-progress"><div class="aw-bar aw-bar-{esc(state)}" style="width:{pct:.1f}%"></div></div>'
        f'<div class="aw-stats">{stat_html}</div>{note}{fail_html}{diagnoses}</div>'
    )


def cluster_note(status: dict) -> str:
    """Where a run on a Ray cluster trains and keeps its checkpoints (docs/CLUSTER.md)."""
    if not status.get("ray_address") or not status.get("ray_job_id"):
        return ""
    where = status.get("ray_run_dir")
    return (
        f'<div class="aw-note" data-testid="cluster-note">{_("On the Ray cluster")} <code>{esc(status["ray_address"])}'
        f"</code> · {_('job')} <code>{esc(status['ray_job_id'])}</code> ({esc(status.get('ray_job_status') or '')})"
        + (f" · {_('checkpoints there in')} <code>{esc(where)}</code>" if where else "")
        + "</div>"
    )


def no_run() -> str:
    return (
        '<div class="aw-run aw-empty-run" data-testid="run-header" data-state="none">'
        f'<div class="aw-run-id">{_("No run selected")}</div>'
        f'<div class="aw-muted">{_("Launch one from Setup, or pick a run above. Runs keep training when this page or the studio closes; they are all listed under Runs.")}</div></div>'
    )


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


def trajectory(sample: dict) -> str:
    """One rollout: the prompt, each turn (tool calls and results included), every reward's value."""
    msgs = _messages(sample.get("prompt"), "user") + _messages(sample.get("completion"), "assistant")
    msgs = [m for m in msgs if m.get("role") != "system"]  # the agent's system prompt: shown in Setup
    turns = []
    for m in msgs:
        role = m.get("role", "assistant")
        content = _content(m)
        body = (
            esc(content)
            if content.strip()
            else (f'<i class="aw-muted">{esc(visible_text(content))}</i>' if content else "")
        )
        calls = ""
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function", tc) if isinstance(tc, dict) else {}
            args = fn.get("arguments")
            if not isinstance(args, str):
                args = json.dumps(args, ensure_ascii=False)
            calls += (
                f'<div class="aw-toolcall">⚙ <code>{esc(fn.get("name", "?"))}({esc(args)})</code>'
                f"{_server_label(tc.get('server') if isinstance(tc, dict) else None)}</div>"
            )
        name = f' <span class="aw-muted">{esc(m.get("name"))}</span>' if m.get("name") else ""
        name += _server_label(m.get("server"))
        turns.append(
            f'<div class="aw-turn aw-role-{esc(role)}"><div class="aw-role">{esc(ROLE_LABEL.get(role, role))}{name}</div>'
            f'<div class="aw-content">{body or f"<i class=aw-muted>{esc(visible_text(content))}</i>"}</div>{calls}</div>'
        )
    rewards = sample.get("rewards") or {}
    chips = "".join(f'<span class="aw-rchip">{esc(k)} <b>{fmt_num(v, 2)}</b></span>' for k, v in rewards.items())
    total = sample.get("reward")
    answer = sample.get("answer")
    step = sample.get("step")
    head = '<div class="aw-sample-head">'
    if step is not None:
        head += f"<span>{_('step')} {esc(step)}</span>"
    if answer is not None:
        head += f"<span>{_('expected')} <code>{esc(answer)}</code></span>"
    head += f'<span class="aw-total">{_("reward")} <b>{fmt_num(total, 2)}</b></span>{chips}</div>'
    return f'<div class="aw-sample">{head}{"".join(turns)}</div>'


def _server_label(server: Any) -> str:
    """An MCP tool call or result names the server it went to (Python tool calls carry none)."""
    return f' <span class="aw-src aw-src-mcp" data-testid="call-server">MCP · {esc(server)}</span>' if server else ""


def launch_note(run_id: str, queued: bool) -> str:
    """What Launch answers: the run, then what became of it (the id after "… when the running job ends" read as
    the job's name: the newcomer's walkthrough)."""
    note = _("queued — it starts when the running job ends") if queued else _("started")
    return (
        f'<div class="aw-msg"><code>{esc(run_id)}</code> {badge("queued" if queued else "running", note)} — '
        f"{_('training runs in its own process; closing this page does not stop it.')}</div>"
    )


def samples_html(samples: list[dict], limit: int = 6) -> str:
    if not samples:
        return f'<div class="aw-empty">{_("Sample trajectories appear here as the run writes them.")}</div>'
    return '<div class="aw-samples">' + "".join(trajectory(s) for s in list(samples)[-limit:][::-1]) + "</div>"


def events_html(events: list[dict], limit: int = 8) -> str:
    rows = []
    for e in list(events)[-limit:][::-1]:
        t = time.strftime("%H:%M:%S", time.localtime(e.get("time", 0)))
        extra = {k: v for k, v in e.items() if k not in ("time", "event", "traceback", "message")}
        # numbers as everywhere else on the page (a best checkpoint's value=0.30000000000000004 was shown whole)
        detail = esc(", ".join(f"{k}={fmt_num(v, 4) if isinstance(v, float) else v}" for k, v in extra.items())[:200])
        if e.get("message"):  # an engine's words: in the page's language where they are known (engine_text)
            detail = engine_html(str(e["message"])[:300]) + (f" · {detail}" if detail else "")
        rows.append(
            f'<tr><td class="aw-muted aw-event-time">{t}</td>'
            f'<td class="aw-event-name"><b>{esc(EVENT_LABEL.get(e.get("event"), e.get("event")))}</b></td>'
            f'<td class="aw-event-detail">{detail}</td></tr>'
        )
    if not rows:
        return ""
    return f'<table class="aw-table aw-events"><tbody>{"".join(rows)}</tbody></table>'
