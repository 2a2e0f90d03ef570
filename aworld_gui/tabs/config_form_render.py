"""The Setup's config form as Gradio components, derived from the one spec (the engine, the overrides YAML and the
check of that YAML, through :func:`config_form.form_view`) and updated by value; each field's edit made in the page.
See docs/ARCHITECTURE.md, "One spec in Setup"."""

from __future__ import annotations

from typing import Any

import gradio as gr

from ..core.studio import Studio
from ..rendering import engine_text
from ..rendering.i18n import _MARKER, _
from ..rendering.templates import macro
from . import config_form


#: at least this many field slots (an engine's main settings: trl has 9); more when an engine has more
MIN_FIELD_SLOTS = 12


def render_config_form(studio: Studio, engine_box, config_yaml, checked_state) -> None:
    """The model picker and the engine's main settings, derived from the engine, the overrides YAML and the check
    of that YAML (config_form.form_view). The line above the fields follows every change of the three. The fields
    are fixed components, a few per slot (a text box for numbers and texts, a box, a choice: the one its field
    needs is shown), updated in the same event as the line — and a slot only when what *it* shows changes (each
    slot's State holds what it shows: config_form.form_slots). An update puts its field's value back, so one
    landing while the user types — a comment added to the YAML, a check answering with the values already shown,
    another field's box ticked — refilled a field just emptied to type into, or turned 30 typed into 300. Each
    field's edit sets its key in the YAML in the page; the update after it shows the YAML's value.

    (Each slot was a ``@gr.render`` until stop 52: under load a render's result sometimes never reached the page,
    and the page mounted 13 renders after loading. Updates travel with the event that derives them.)"""
    count = max(
        [MIN_FIELD_SLOTS]
        + [len([f for f in e.get("fields") or [] if f.get("main")]) for e in studio.catalog().get("engines") or []]
    )

    def slots_for(engine, text, checked) -> tuple[str, list]:
        info = studio.engine_info(engine) or {"name": engine}
        view = config_form.form_view(info, text, checked)
        models = [[str(_("(the agent's model)")), config_form.AGENT_MODEL]] + [
            [f"{m['name']} · {m['source']}", m["path"]] for m in (studio.catalog().get("models") or [])
        ]
        slots = config_form.form_slots(config_form.shown_fields(view, models), count)
        return _form_state(view, text, config_form.slots_id(slots)), slots

    line, first = slots_for(engine_box.value, config_yaml.value, checked_state.value)
    state_line = gr.HTML(line, elem_id="form-state")
    slot_states = [gr.State(slot) for slot in first]
    picker = _Picker(first[0], config_yaml)
    with gr.Row(equal_height=True):
        fields = [_FieldSlot(i, slot, config_yaml) for i, slot in enumerate(first[1:], start=1)]
    slots_ui = [picker, *fields]

    def derive(engine, text, checked, *before):
        line, slots = slots_for(engine, text, checked)
        updates = [
            ui.updates(slot) if slot != old else [gr.update()] * len(ui.components)
            for ui, slot, old in zip(slots_ui, slots, before)
        ]
        return [line, *slots, *(u for each in updates for u in each)]

    gr.on(
        [engine_box.change, config_yaml.change, checked_state.change],
        derive,
        [engine_box, config_yaml, checked_state, *slot_states],
        [state_line, *slot_states, *(c for ui in slots_ui for c in ui.components)],
        concurrency_limit=None,
        trigger_mode="always_last",
        show_progress="hidden",
        api_visibility="private",
    )


def _mark(html: str) -> gr.HTML:
    """A slot's hidden mark (config_form.slot_mark): in the page (tests and the slot's edit read it), without the gap
    of an empty block."""
    return gr.HTML(html, container=False, padding=False, visible="hidden")


class _Picker:
    """Slot 0: the model picker."""

    def __init__(self, slot: dict, config_yaml):
        mark, box = self.updates(slot)
        self.mark = _mark(mark)
        self.box = gr.Dropdown(
            allow_custom_value=True,
            elem_id="model-pick",
            label=_("Model (overrides the agent's: a folder or a hub id in the local cache)"),
            **_props(box),
        )
        self.components = [self.mark, self.box]
        _edits(self.box, 0, config_yaml, at_once=True)

    def updates(self, slot: dict) -> list:
        """The mark's and the picker's updates for what the slot shows now."""
        return [
            config_form.slot_mark(0, slot, key="model", ftype="str", value=slot["model"]),
            gr.update(choices=[tuple(m) for m in slot["models"]], value=slot["model"], interactive=slot["valid"]),
        ]


class _FieldSlot:
    """Slot ``i`` of the form: a column (hidden while the engine has no field for the slot) holding its mark, a text
    box (numbers and texts), a box (true/false) and a choice, the one its field needs shown (config_form.FieldView)."""

    KINDS = ("text", "bool", "choice")  # the components, in order; a number is typed into the text box

    def __init__(self, i: int, slot: dict | None, config_yaml):
        self.i = i
        column, mark, text, box, choice = self.updates(slot)
        # a column each: Gradio joins neighbouring inputs into one block at least 450 px wide, one field per line
        with gr.Column(min_width=150, **_props(column)) as self.column:
            self.mark = _mark(mark)
            self.text = gr.Textbox(lines=1, max_lines=1, **_props(text))
            self.bool = gr.Checkbox(**_props(box))
            self.choice = gr.Dropdown(allow_custom_value=True, **_props(choice))
        self.components = [self.column, self.mark, self.text, self.bool, self.choice]
        _edits(self.text, i, config_yaml, at_once=False)
        _edits(self.bool, i, config_yaml, at_once=True)
        _edits(self.choice, i, config_yaml, at_once=True)

    def updates(self, slot: dict | None) -> list:
        """The column's, the mark's and the three components' updates for what the slot shows now."""
        if not slot:
            return [gr.update(visible=False), config_form.slot_mark(self.i, None)] + [gr.update(visible=False)] * 3
        f = config_form.FieldView(**slot)
        kind = f.kind if f.kind in ("bool", "choice") else "text"
        value = _value(f)
        # a box typed into (a number, a text) shows its value again when left empty; a box or a choice is never empty
        box = f"#cfg-{f.name} input" if kind == "text" else None
        mark = config_form.slot_mark(self.i, slot, key=f.name, ftype=f.type, value=value, box=box)
        classes = (["aw-cfg-set"] if f.overridden else []) + (["aw-cfg-problem"] if f.problem else [])
        shown = dict(
            visible=True,
            label=f.name.replace("_", "_\u200b"),  # a narrow column breaks a long key after an underscore, not mid-word
            # what is wrong with its value (the check's words: several markers; Gradio renders info as Markdown), else
            # what it means
            info=(_unbolded(f.problem) if f.problem else engine_text.known(f.help)) or None,
            value=value,
            interactive=f.interactive,
            elem_id=f"cfg-{f.name}",
            elem_classes=classes,
        )
        if f.kind == "choice":
            shown["choices"] = f.choices
        return [gr.update(visible=True), mark] + [
            gr.update(**shown) if k == kind else gr.update(visible=False) for k in self.KINDS
        ]


def _unbolded(text: str) -> str:
    """A field's ``info`` with its translation markers' underscores as fullwidth low lines: Gradio translates an info's
    first marker only and renders it with a small Markdown of its own, which read the others' ``__``/``_`` as bold and
    italic (the page showed ``i18n{"type": …}``); so they reach the page whole, where static/i18n_markers.js
    translates them."""
    return _MARKER.sub(lambda m: m.group(0).replace("_", "\uff3f"), text)


def _props(update: dict) -> dict:
    """A component's first properties from its first update."""
    return {k: v for k, v in update.items() if k != "__type__"}


def _value(f: config_form.FieldView) -> Any:
    """What a field's component is given: a number as YAML writes it (1.0e-05), in a text box (gr.Number writes its
    parsed value back into the box a moment after each keystroke, and a key typed meanwhile lands in that: 0.002
    typed quickly became 20, 7 times in 30 here; the edit reads the text as a number, static/yaml_edit.js, and the
    check validates it with the engine's own config); a value that is not one (a typo) as the YAML has it."""
    if f.kind == "number":
        return "" if f.value is None else f.value if isinstance(f.value, str) else config_form.yaml_value(f.value)
    return f.value


def _edits(comp, slot: int, config_yaml, at_once: bool) -> None:
    """A field's edit, made in the page: a box or a choice at once, a number or a text when the user leaves it
    or presses Enter (an edit per keystroke would update the field being typed into); what the slot shows is
    read from its mark (static/yaml_edit.js, ``slotEdit``)."""
    kw = dict(
        fn=None,
        inputs=[comp, config_yaml],
        outputs=[config_yaml],
        js=f"(value, text) => window.awYaml.slotEdit({slot}, value, text)",
        queue=False,
        api_visibility="private",
        show_progress="hidden",
    )
    for listener in [comp.input] if at_once else [comp.blur, comp.submit]:
        listener(**kw)


def _form_state(view: config_form.FormView, text: str, fields: str) -> str:
    """The line above the form: what its values are (data attributes for tests: the spec it was derived from, the
    YAML parses, the values not set in it come from the check of this very YAML, and the fields it wants shown:
    the slots' marks carry the same ``data-fields`` once they show them)."""
    if not view.valid:
        note = _(
            "The overrides YAML does not parse, so the form shows no values: fix it under “Advanced: config "
            "YAML” (the config card says where the error is)."
        )
    elif view.current:
        note = _("Fields marked • are set in the overrides YAML; the others show their effective value.")
    else:
        note = _("Checking… fields marked • are set in the overrides YAML; the others show the last check's values.")
    return macro("tabs/config_form.html", "form_state")(
        int(view.valid), int(view.current), view.engine, config_form.spec_id(text), fields, note
    )
