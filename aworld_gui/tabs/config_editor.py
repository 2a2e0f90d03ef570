"""The config card's full-settings editor, beside the short main form: every setting of the selected
engine (for ``trl``: every GRPOConfig / SFTConfig / ModelConfig field with TRL's own help text),
searchable by name and help, and a way to set or remove any key in the overrides YAML (the model picker is
part of the form: config_form_render.py).

Everything comes from the check worker's catalog (engines, their fields, the local models): the studio
never imports TRL. Setting a key edits the overrides YAML, which the checks then validate: the server parses
the value and renders the key's line, and the page puts the line into the YAML as it is then (config_form.py).
"""

from __future__ import annotations

import gradio as gr
import yaml

from ..rendering import engine_text
from ..rendering.templates import macro
from . import config_form
from ..rendering.i18n import _
from ..core.studio import Studio

MAX_ROWS = 400


def _overrides(text: str) -> dict:
    """What the YAML sets, as the form reads it (the shared safe loader); nothing when it does not parse."""
    return config_form.parse_overrides(text) or {}


def applies(field: dict, mode: str | None) -> bool:
    modes = field.get("modes")
    return not modes or mode is None or mode in modes


def matches(field: dict, query: str) -> bool:
    """Every word of ``query`` in the name, the help or the source (case-insensitive)."""
    hay = " ".join(str(field.get(k) or "") for k in ("name", "help", "trl_help", "source", "alias_of")).lower()
    return all(w in hay for w in (query or "").lower().split())


def settings_table(fields: list[dict], query: str, overrides: dict) -> str:
    mode = overrides.get("mode") or next((f.get("default") for f in fields if f["name"] == "mode"), None)
    shown = [f for f in fields if applies(f, mode) and matches(f, query)]
    total = sum(1 for f in fields if applies(f, mode))
    rows = [
        {
            "name": f["name"],
            "set_here": f["name"] in overrides,
            "value": config_form.yaml_value(overrides[f["name"]]) if f["name"] in overrides else "",
            "default": f.get("default"),
            "type": f.get("type"),
            "source": f.get("source") or "",
            "help": engine_text.known(f.get("help")),
            "trl_help": f.get("trl_help"),
            "alias_of": f.get("alias_of"),
            "choices": ", ".join(map(str, f["choices"][:40])) if f.get("choices") else "",
        }
        for f in shown[:MAX_ROWS]
    ]
    return macro("tabs/config_editor.html", "settings")(rows, len(shown), total, mode, MAX_ROWS)


class ConfigEditor:
    def __init__(self, studio: Studio):
        self.studio = studio
        self.search = self.table = self.setting = self.value = None
        self.set_btn = self.remove_btn = self.help = self.msg = None

    def fields(self, engine: str) -> list[dict]:
        return list((self.studio.engine_info(engine) or {}).get("fields") or [])

    # -- layout ------------------------------------------------------------------------------------
    def build(self) -> None:
        with gr.Accordion(
            _("All settings (every field of the engine, with its help)"), open=False, elem_id="all-settings"
        ):
            self.search = gr.Textbox(
                label=_("Search settings"),
                placeholder=_("name or words of the help, e.g. clip ratio"),
                elem_id="settings-search",
            )
            with gr.Row(equal_height=True):
                self.setting = gr.Dropdown(
                    [], label=_("Setting"), allow_custom_value=True, scale=3, elem_id="setting-pick"
                )
                self.value = gr.Textbox(label=_("Value (YAML)"), scale=2, elem_id="setting-value")
                with gr.Column(scale=1, min_width=90):
                    self.set_btn = gr.Button(_("Set"), size="sm", variant="primary", elem_id="setting-set")
                    self.remove_btn = gr.Button(_("Remove"), size="sm", elem_id="setting-remove")
            self.msg = gr.HTML("", elem_id="setting-msg")
            self.help = gr.HTML("", elem_id="setting-help")
            self.table = gr.HTML("", elem_id="settings-table")
        self.edit = gr.JSON(None, visible=False)  # a key's new line, put into the YAML in the page

    # -- handlers ----------------------------------------------------------------------------------
    def on_load(self, engine: str, config_text: str):
        fields = self.fields(engine)
        return (
            gr.update(choices=[f["name"] for f in fields], value=None),
            settings_table(fields, "", _overrides(config_text)),
        )

    def on_table(self, engine: str, query: str, config_text: str) -> str:
        return settings_table(self.fields(engine), query, _overrides(config_text))

    def on_pick(self, engine: str, name: str, config_text: str):
        f = next((x for x in self.fields(engine) if x["name"] == name), None)
        if f is None:
            return gr.update(), ""
        overrides = _overrides(config_text)
        current = overrides.get(name, f.get("default"))
        return gr.update(value="" if current is None else config_form.yaml_value(current)), settings_table(
            [f], "", overrides
        )

    def on_change(self, engine: str, query: str, name: str, config_text: str):
        """The YAML changed (a key set or removed here, or anywhere else): the table and the picked setting's row
        from the text as the page has it now."""
        f = next((x for x in self.fields(engine) if x["name"] == name), None)
        overrides = _overrides(config_text)
        return settings_table(self.fields(engine), query, overrides), (
            settings_table([f], "", overrides) if f is not None else ""
        )

    def on_set(self, name: str, value: str):
        """Set: the key's line, rendered here (PyYAML), for the page to put into its YAML (static/yaml_edit.js)."""
        if not name:
            return None, '<div class="aw-msg aw-msg-error">Pick a setting first.</div>'
        try:
            parsed = yaml.safe_load(value) if (value or "").strip() else None
        except yaml.YAMLError as e:
            return None, macro("tabs/config_editor.html", "not_yaml")(e)
        if parsed is None:
            return None, '<div class="aw-msg aw-msg-error">Type a value (or press Remove).</div>'
        line = f"{config_form.yaml_value(name)}: {config_form.yaml_value(parsed)}"  # a name typed in: quoted if need be
        return {"key": name, "line": line}, macro("tabs/config_editor.html", "was_set")(name)

    def on_remove(self, name: str):
        if not name:
            return None, ""
        return {"key": name, "line": None}, macro("tabs/config_editor.html", "removed")(name)

    # -- wiring ------------------------------------------------------------------------------------
    def load_outputs(self) -> list:
        return [self.setting, self.table]

    def wire(self, engine, config_yaml) -> None:
        """Set / Remove edit the overrides YAML (the page puts the server's line in: static/yaml_edit.js); the
        table, the picked setting's row and the checks (setup_tab.py) follow the YAML's change."""
        private = dict(api_visibility="private", show_progress="hidden")
        self.search.input(
            self.on_table, [engine, self.search, config_yaml], [self.table], trigger_mode="always_last", **private
        )
        config_yaml.change(
            self.on_change,
            [engine, self.search, self.setting, config_yaml],
            [self.table, self.help],
            trigger_mode="always_last",
            **private,
        )
        engine.change(self.on_load, [engine, config_yaml], self.load_outputs(), **private)
        self.setting.input(self.on_pick, [engine, self.setting, config_yaml], [self.value, self.help], **private)
        for event in (
            self.set_btn.click(self.on_set, [self.setting, self.value], [self.edit, self.msg], **private),
            self.remove_btn.click(self.on_remove, [self.setting], [self.edit, self.msg], **private),
        ):
            js = "(edit, text) => window.awYaml.applyEdit(edit, text)"
            event.then(None, [self.edit, config_yaml], [config_yaml], js=js, queue=False, **private)
