"""The Setup's config form as Gradio components, rendered from the one spec (``@gr.render`` over the engine, the
overrides YAML and the check of that YAML, through :func:`config_form.form_view`); each field's edit made in the
page. See docs/ARCHITECTURE.md, "One spec in Setup"."""

from __future__ import annotations

from typing import Any

import gradio as gr

from ..core.studio import Studio
from ..rendering import render
from ..rendering.i18n import _
from . import config_form


def render_config_form(studio: Studio, engine_box, config_yaml, checked_state) -> None:
    """The model picker and the engine's main settings, rendered from the engine, the overrides YAML and the
    check of that YAML (config_form.form_view): re-rendered whenever one of them changes. Each field's edit
    sets its key in the YAML in the page; the render after it shows the YAML's value."""

    @gr.render(inputs=[engine_box, config_yaml, checked_state], show_progress="hidden")
    def config_fields(engine, text, checked):
        info = studio.engine_info(engine) or {"name": engine}
        view = config_form.form_view(info, text, checked)
        gr.HTML(_form_state(view, text), elem_id="form-state")
        models = [config_form.AGENT_MODEL] + [
            (f"{m['name']} · {m['source']}", m["path"]) for m in (studio.catalog().get("models") or [])
        ]
        picker = gr.Dropdown(
            models,
            value=view.model,
            allow_custom_value=True,
            elem_id="model-pick",
            interactive=view.valid,
            key=("model", view.model, view.valid),
            label=_("Model (overrides the agent's: a folder or a hub id in the local cache)"),
        )
        _edits(picker, "model", "str", config_yaml, at_once=True)
        with gr.Row(equal_height=True):
            for f in view.fields:
                _edits(_field(f), f.name, f.type, config_yaml, at_once=f.kind in ("bool", "choice"))


def _edits(comp, key: str, ftype: str | None, config_yaml, at_once: bool) -> None:
    """A field's edit, made in the page: a box or a choice at once, a number or a text when the user leaves it
    or presses Enter (an edit per keystroke would re-render the field being typed into)."""
    kw = dict(
        fn=None,
        inputs=[comp, config_yaml],
        outputs=[config_yaml],
        js=config_form.edit_js(key, ftype),
        queue=False,
        api_visibility="private",
        show_progress="hidden",
    )
    if not comp.interactive and comp.interactive is not None:
        return
    for listener in [comp.input] if at_once else [comp.blur, comp.submit]:
        listener(**kw)


def _form_state(view: config_form.FormView, text: str) -> str:
    """The line above the form: what its values are (data attributes for tests: the spec it was rendered from, the
    YAML parses, the values not set in it come from the check of this very YAML)."""
    if not view.valid:
        note = _(
            "The overrides YAML does not parse, so the form shows no values: fix it under “Advanced: config "
            "YAML” (the config card says where the error is)."
        )
    else:
        note = _("Fields marked • are set in the overrides YAML; the others show their effective value.")
    return (
        f'<div class="aw-muted aw-form-state" data-testid="form-state" data-valid="{int(view.valid)}" '
        f'data-current="{int(view.current)}" data-engine="{render.esc(view.engine)}" '
        f'data-spec="{config_form.spec_id(text)}">{note}</div>'
    )


def _field(f: config_form.FieldView):
    """The component that shows one field of the form (config_form.FieldView); its key names what it shows."""
    kw: dict[str, Any] = dict(
        label=f.name,
        info=f.help,
        value=f.value,
        interactive=f.interactive,
        min_width=150,
        key=f.key,
        elem_id=f"cfg-{f.name}",
        elem_classes=["aw-cfg-set"] if f.overridden else None,
    )
    if f.kind == "choice":
        return gr.Dropdown(f.choices, allow_custom_value=True, **kw)
    if f.kind == "number":
        return gr.Number(precision=f.precision, minimum=f.minimum, maximum=f.maximum, **kw)
    if f.kind == "bool":
        return gr.Checkbox(**kw)
    return gr.Textbox(**kw)
