"""What a check of the Setup shows: the components it updates (:func:`check_outputs`) and their values from the
check's report (:func:`check_updates`), kept in one order here."""

from __future__ import annotations

import gradio as gr
import yaml

from ..core import inputs as inp
from ..core.studio import MODULE_TITLES, Studio
from ..rendering import render
from ..rendering.i18n import _
from . import config_form, reward_card
from .setup_inputs import AUTO, AUTO_CHOICE, SetupUI


#: the components a check of the Setup updates, in :func:`check_updates`' order (then the checked State)
OUTPUT_NAMES = (
    "strip",
    "agent_status",
    "agent_spec",
    "data_status",
    "train_preview",
    "test_preview",
    "rendered",
    "prompt_col",
    "answer_col",
    "reward_status",
    "reward_preview",
    "reward_calls",
    "config_status",
    "effective",
    "launch_btn",
    "probe_btn",
    "engines_table",
    "cli",
    "memory_estimate",
    "checked",
)


def check_outputs(ui: SetupUI) -> list:
    """The components of :data:`OUTPUT_NAMES`."""
    return [getattr(ui, name) for name in OUTPUT_NAMES]


def check_updates(studio: Studio, si: inp.SetupInputs, report: dict) -> list:
    """What a check's ``report`` shows in each of :func:`check_outputs` (but the last, the checked State)."""
    res = report["results"]
    prev = report.get("preview") or {}
    train_prev, test_prev = prev.get("train") or {}, prev.get("test") or {}
    details = (agent := res["agent"]).get("details") or {}
    agent_spec = render.agent_spec(
        details.get("spec"),
        details.get("tool_schemas"),
        details.get("tool_servers"),
        details.get("mcp_servers"),
        details.get("origins"),
        config_model=(config_form.parse_overrides(si.config_text) or {}).get("model"),
    )
    cols = train_prev.get("columns") or ((res["dataset"].get("details") or {}).get("train") or {}).get("columns") or []
    mapped = (res["dataset"].get("details") or {}).get("columns") or {}
    p_val = si.columns.get("prompt") or AUTO
    a_val = si.columns.get("answer") or AUTO
    prompt_dd = gr.update(
        choices=[AUTO_CHOICE, *cols],
        value=p_val if p_val in [AUTO, *cols] else AUTO,
        info=f"{_('detected:')} {mapped.get('prompt')}" if mapped.get("prompt") else "",
    )
    answer_dd = gr.update(
        choices=[AUTO_CHOICE, *cols],
        value=a_val if a_val in [AUTO, *cols] else AUTO,
        info=f"{_('detected:')} {mapped.get('answer')}" if mapped.get("answer") else "",
    )
    # config card: engine + config
    eng, cfg = res["engine"], res["config"]
    worst = max((eng, cfg), key=lambda r: {"error": 2, "warning": 1}.get(r["status"], 0))
    combined = {
        "status": worst["status"],
        "message": (cfg["message"] if eng["status"] != "error" else eng["message"]),
        "warnings": [*eng.get("warnings", []), *cfg.get("warnings", [])],
    }
    if eng["status"] == "error" and cfg["status"] == "error" and cfg["message"] != eng["message"]:
        combined["message"] = f"{eng['message']} · {cfg['message']}"
    effective = (cfg.get("details") or {}).get("effective")
    cat = studio.catalog()
    return [
        render.checks_strip(res, MODULE_TITLES, seconds=report.get("wall_s"), check_id=report.get("check_id")),
        render.module_status("agent", _("Agent"), agent),
        agent_spec,
        render.module_status("dataset", _("Datasets"), res["dataset"]),
        _frame(train_prev),
        _frame(test_prev),
        render.prompt_block(report.get("prompt")),
        prompt_dd,
        answer_dd,
        render.module_status("reward", _("Reward"), res["reward"]),
        reward_card.reward_preview_frame(res["reward"]),
        reward_card.calls_html(res["reward"]),
        render.module_status("config", _("Engine & config"), combined),
        yaml.safe_dump(effective, sort_keys=False)
        if effective
        else "# fix the errors above to see the effective config",
        gr.update(interactive=bool(report.get("ok"))),
        gr.update(interactive=bool(report.get("ok"))),  # Probe: green checks, as Launch
        render.engines_table(cat.get("engines", []), si.engine),
        si.cli_command() + ("  \\\n  --config config.yaml   # the overrides YAML" if si.config_text.strip() else ""),
        render.memory_estimate((cfg.get("details") or {}).get("memory"), cfg["status"]),
    ]


def _frame(preview: dict | None):
    import pandas as pd

    if not preview:
        return pd.DataFrame()
    if preview.get("error"):
        return pd.DataFrame({"error": [preview["error"]]})
    return pd.DataFrame(preview.get("rows") or [], columns=preview.get("columns"))
