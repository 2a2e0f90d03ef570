"""The Setup's config form as Gradio components, rendered from the one spec (``@gr.render`` over the engine, the
overrides YAML and the check of that YAML, through :func:`config_form.form_view`); each field's edit made in the
page. See docs/ARCHITECTURE.md, "One spec in Setup"."""

from __future__ import annotations

from typing import Any

import gradio as gr

from ..core.studio import Studio
from ..rendering import engine_text, render
from ..rendering.i18n import _
from . import config_form


#: at least this many field slots (an engine's main settings: trl has 9); more when an engine has more
MIN_FIELD_SLOTS = 12


def render_config_form(studio: Studio, engine_box, config_yaml, checked_state) -> None:
    """The model picker and the engine's main settings, derived from the engine, the overrides YAML and the check
    of that YAML (config_form.form_view). The line above the fields follows every change of the three; each field
    (and the picker) is a render of its own, over a State holding only what it shows
    (config_form.form_slots): Gradio fires a State's change only for a new value, so a field is rendered again
    only when what *it* shows changes. A render puts its field's value back, so one landing while the user types
    — a comment added to the YAML, a check answering with the values already shown, another field's box ticked —
    refilled a field just emptied to type into, or turned 30 typed into 300. Each field's edit sets its key in
    the YAML in the page; the render after it shows the YAML's value."""
    count = max(
        [MIN_FIELD_SLOTS]
        + [len([f for f in e.get("fields") or [] if f.get("main")]) for e in studio.catalog().get("engines") or []]
    )

    def derive(engine, text, checked):
        info = studio.engine_info(engine) or {"name": engine}
        view = config_form.form_view(info, text, checked)
        models = [[str(_("(the agent's model)")), config_form.AGENT_MODEL]] + [
            [f"{m['name']} · {m['source']}", m["path"]] for m in (studio.catalog().get("models") or [])
        ]
        slots = config_form.form_slots(config_form.shown_fields(view, models), count)
        return [_form_state(view, text, config_form.slots_id(slots))] + slots

    first = derive(engine_box.value, config_yaml.value, checked_state.value)
    state_line = gr.HTML(first[0], elem_id="form-state")
    slot_states = [gr.State(slot) for slot in first[1:]]
    gr.on(
        [engine_box.change, config_yaml.change, checked_state.change],
        derive,
        [engine_box, config_yaml, checked_state],
        [state_line, *slot_states],
        concurrency_limit=None,  # queued: a State's change reaches the render only from a queued event
        trigger_mode="always_last",
        show_progress="hidden",
        api_visibility="private",
    )
    _render_picker(slot_states[0], config_yaml)
    with gr.Row(equal_height=True):
        for i, slot in enumerate(slot_states[1:], start=1):
            _render_field(i, slot, config_yaml)


def _rendered_mark(i: int, slot: dict | None):
    """A hidden mark of what slot ``i`` shows (tests compare the marks with the state line's ``data-fields``)."""
    gr.HTML(
        f'<span data-testid="form-fields" data-slot="{i}" data-fields="{config_form.fields_id(slot)}" hidden></span>',
        container=False,
        padding=False,
        visible="hidden",  # in the page (tests read it), without the gap of an empty block
    )


def _render_picker(slot_state, config_yaml) -> None:
    @gr.render(inputs=[slot_state], show_progress="hidden")  # on load and on a change of its State
    def model_picker(slot):
        if not slot:
            return
        _rendered_mark(0, slot)
        valid = slot["valid"]
        picker = gr.Dropdown(
            [tuple(m) for m in slot["models"]],
            value=slot["model"],
            allow_custom_value=True,
            elem_id="model-pick",
            interactive=valid,
            key=("model", slot["model"], valid),
            label=_("Model (overrides the agent's: a folder or a hub id in the local cache)"),
        )
        _edits(picker, "model", "str", config_yaml, at_once=True, shown=slot["model"])


def _render_field(i: int, slot_state, config_yaml) -> None:
    @gr.render(inputs=[slot_state], show_progress="hidden")
    def config_field(slot):
        if not slot:
            return
        _rendered_mark(i, slot)
        f = config_form.FieldView(**slot)
        comp = _field(f)
        _edits(comp, f.name, f.type, config_yaml, at_once=f.kind in ("bool", "choice"), shown=comp.value)


def _edits(comp, key: str, ftype: str | None, config_yaml, at_once: bool, shown: Any) -> None:
    """A field's edit, made in the page: a box or a choice at once, a number or a text when the user leaves it
    or presses Enter (an edit per keystroke would re-render the field being typed into). ``shown``: the value
    the field was rendered with (config_form.field_edit_js)."""
    kw = dict(
        fn=None,
        inputs=[comp, config_yaml],
        outputs=[config_yaml],
        # a box typed into (a number, a text) shows its value again when left empty; a box or a choice is never empty
        js=config_form.field_edit_js(key, ftype, shown, None if at_once else f"#cfg-{key} input"),
        queue=False,
        api_visibility="private",
        show_progress="hidden",
    )
    if not comp.interactive and comp.interactive is not None:
        return
    for listener in [comp.input] if at_once else [comp.blur, comp.submit]:
        listener(**kw)


def _form_state(view: config_form.FormView, text: str, fields: str) -> str:
    """The line above the form: what its values are (data attributes for tests: the spec it was derived from, the
    YAML parses, the values not set in it come from the check of this very YAML, and the fields it wants shown:
    the rendered fields carry the same ``data-fields`` once they show them)."""
    if not view.valid:
        note = _(
            "The overrides YAML does not parse, so the form shows no values: fix it under “Advanced: config "
            "YAML” (the config card says where the error is)."
        )
    elif view.current:
        note = _("Fields marked • are set in the overrides YAML; the others show their effective value.")
    else:
        note = _("Checking… fields marked • are set in the overrides YAML; the others show the last check's values.")
    return (
        f'<div class="aw-muted aw-form-state" data-testid="form-state" data-valid="{int(view.valid)}" '
        f'data-current="{int(view.current)}" data-engine="{render.esc(view.engine)}" '
        f'data-spec="{config_form.spec_id(text)}" data-fields="{fields}">{note}</div>'
    )


def _field(f: config_form.FieldView):
    """The component that shows one field of the form (config_form.FieldView); its key names what it shows."""
    classes = (["aw-cfg-set"] if f.overridden else []) + (["aw-cfg-problem"] if f.problem else [])
    kw: dict[str, Any] = dict(
        label=f.name,
        info=f.problem or engine_text.known(f.help) or None,  # what is wrong with its value, else what it means
        value=f.value,
        interactive=f.interactive,
        min_width=150,
        key=f.key,
        elem_id=f"cfg-{f.name}",
        elem_classes=classes or None,
    )
    if f.kind == "choice":
        return gr.Dropdown(f.choices, allow_custom_value=True, **kw)
    if f.kind == "number":
        # a text box: gr.Number writes its parsed value back into the box a moment after each keystroke, and a
        # key typed meanwhile lands in that (0.002 typed quickly became 20, 7 times in 30 here); the edit reads
        # the text as a number (config_form._LINE_JS) and the check validates it with the engine's own config.
        # A number as YAML writes it (1.0e-05); a value that is not one (a typo) as the YAML has it
        kw["value"] = (
            "" if f.value is None else f.value if isinstance(f.value, str) else config_form.yaml_value(f.value)
        )
        return gr.Textbox(lines=1, max_lines=1, **kw)  # one line: an <input>, as a number's box was
    if f.kind == "bool":
        return gr.Checkbox(**kw)
    return gr.Textbox(**kw)
