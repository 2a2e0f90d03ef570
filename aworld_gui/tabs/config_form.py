"""The Setup's config form, derived from the one spec: the overrides YAML.

**One writer.** The overrides YAML (``SetupUI.config_yaml``) is the only place a config value lives. Every
control edits it and nothing else, and every other view is computed from it:

- the form (:func:`form_view`, its components updated by value in config_form_render.py): a field shows the YAML's value
  for its key, else the effective value of the check *of this very YAML* (defaults derived from the agent included;
  while it runs, the last check's, marked not current), else the engine's default. A YAML that does not parse shows no values and locks the fields (the note says why);
- the check, the effective config, the memory estimate, the CLI command and, at Launch, ``run.yaml``: all take the
  YAML as their input.

**Edits.** Every edit of the YAML is made *in the page*, on the text it holds then, by one script:
static/yaml_edit.js (``window.awYaml``; its tests: tests/test_browser_config_form.py). A field's edit sets its key
when the field is left (or Enter is pressed; a box or a choice at once), reading the slot's :func:`slot_mark`; the
settings editor's Set / Remove have the server render the key's line (config_editor.py) and the page puts it in;
an engine picked swaps each engine's own overrides (:func:`switch_engine_js`). So an edit is never a round trip
behind the page, and the server never predicts the text: what it shows is derived from the text the page sends.

**Why typing is not overwritten.** An update puts its field's value back, so a field is updated only when what it
shows changes (:func:`form_slots`, a State each: config_form_render.py), and numbers are typed into text boxes
(docs/ARCHITECTURE.md, "One spec in Setup"). Nothing is kept in step: no fills, snapshots or focus rules.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from dataclasses import asdict, dataclass, field
from typing import Any

import yaml

from engines.files.yaml_input import try_load_yaml

from ..rendering import engine_text
from ..rendering.i18n import _
from ..rendering.templates import macro

AGENT_MODEL = "(the agent's model)"
_BAD = object()


# -- the spec ------------------------------------------------------------------------------------------------
def parse_overrides(text: str) -> dict | None:
    """The overrides the YAML sets: a dict (empty for no text), or None when it is not a YAML mapping."""
    if not (text or "").strip():
        return {}
    data = try_load_yaml(text, default=_BAD)  # the shared safe loader: user text, in the studio process
    if data is None:  # only comments
        return {}
    return data if isinstance(data, dict) else None


def spec_id(text: str) -> str:
    """A short name of one spec (its text, surrounding blank lines aside): what a form was derived from."""
    return hashlib.sha1((text or "").strip().encode("utf-8")).hexdigest()[:12]


def effective_for(
    engine: str, text: str, values: dict | None, inputs: str = "", problems: dict[str, str] | None = None
) -> dict:
    """What a check answered, tagged with the spec it ran on (the form uses it only for that spec) and ``inputs``,
    the key of every input it checked (setup_tab's reconcile compares it with the page's); ``problems``: what the
    config check found wrong with each setting, by key (engines.results.check_result.field_problems)."""
    return {
        "engine": engine,
        "text": text or "",
        "values": dict(values or {}),
        "inputs": inputs,
        "problems": dict(problems or {}),
    }


@dataclass
class FieldView:
    name: str
    kind: str  # number | bool | choice | text
    type: str | None  # the field's declared type ("int", "float", "bool", "str"...)
    value: Any  # what the field shows
    overridden: bool  # the YAML sets it
    interactive: bool = True
    help: str | None = None
    choices: list[str] = field(default_factory=list)
    problem: str | None = None  # the YAML's value is not one the field can hold: what is wrong, shown at the field


@dataclass
class FormView:
    engine: str
    valid: bool  # the YAML parses to a mapping
    fields: list[FieldView]
    model: str  # the model picker's value
    current: bool  # the non-overridden fields show the check of this spec (else the last check's, or defaults)


def _kind(f: dict) -> str:
    return (
        "choice"
        if f.get("choices")
        else "bool"
        if f.get("type") == "bool"
        else "number"
        if f.get("type") in ("int", "float")
        else "text"
    )


def _fits(kind: str, value: Any, f: dict) -> bool:
    if kind == "number":
        return value is None or (
            isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        )
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "choice":
        return str(value) in [str(c) for c in f.get("choices") or []]
    return value is None or isinstance(value, (str, int, float))


def _misfit(kind: str, value: Any, f: dict, overridden: bool, base: dict) -> FieldView:
    """A field whose YAML value it cannot hold (``abc`` typed into a number): shown as the YAML has it, editable, with
    what is wrong and how to fix it at the field — a typo fixed where it was made (the check's error says it too). A
    list or a mapping under a text field stays locked: the YAML editor is where it can be written."""
    raw = value if isinstance(value, str) else yaml_value(value)
    said, choices = f"“{raw}”", [str(c) for c in f.get("choices") or []]
    if kind == "number":
        problem, shown = f"{said} {_('is not a number: type a number here.')}", raw
    elif kind == "choice":
        problem, shown = f"{said} {_('is not one of the choices: pick one here.')}", str(value)
    elif kind == "bool":
        problem, shown = f"{said} {_('is not true or false: tick or untick the box to set it.')}", False
    else:
        problem = f"{said} {_('is a list or a mapping: edit it under “Advanced: config YAML”.')}"
        return FieldView(kind="text", value=raw, overridden=overridden, interactive=False, problem=problem, **base)
    return FieldView(kind=kind, value=shown, overridden=overridden, problem=problem, choices=choices, **base)


def _shown(kind: str, value: Any) -> Any:
    if kind == "choice":
        return str(value)
    if kind == "text":
        return "" if value is None else str(value)
    return value


def form_view(info: dict, text: str, effective: dict | None = None) -> FormView:
    """The form for the engine ``info`` (a catalog entry) and the spec ``text``: each main field's value from the
    YAML, else from ``effective`` when it is a check of this engine (of this text: ``current``; of the text before,
    while this one is being checked), else the field's default. A value the field cannot hold (a string under a
    number) is shown as the YAML has it, with what is wrong, and stays editable (:func:`_misfit`)."""
    engine = info.get("name") or ""
    overrides = parse_overrides(text)
    eff = effective or {}
    current = eff.get("engine") == engine and (eff.get("text") or "") == (text or "")
    # until this spec's check answers, the last check of this engine's values stand (marked not current): showing
    # the defaults meanwhile changed a field's value, so its key, twice per edit, and a field replaced under the
    # keyboard lost or mangled what was being typed into it (0.002 typed became 20.0)
    values = (eff.get("values") or {}) if eff.get("engine") == engine else {}
    problems = eff.get("problems") or {}
    out = []
    for f in [f for f in info.get("fields") or [] if f.get("main")]:
        kind, name = _kind(f), f["name"]
        base = dict(name=name, type=f.get("type"), help=f.get("help") or None)
        if overrides is None:  # the YAML does not parse: nothing to show
            out.append(
                FieldView(
                    kind=kind, value=None if kind != "bool" else False, overridden=False, interactive=False, **base
                )
            )
            continue
        overridden = name in overrides
        value = overrides[name] if overridden else values.get(name, f.get("default"))
        if not _fits(kind, value, f):
            out.append(_misfit(kind, value, f, overridden, base))
            continue
        view = FieldView(kind=kind, value=_shown(kind, value), overridden=overridden, **base)
        if current and name in problems:  # the check of this spec refused its value (or with others: the data)
            view.problem = engine_text.message(problems[name])
        if kind == "choice":
            view.choices = [str(c) for c in f["choices"]]
        out.append(view)
    model = (overrides or {}).get("model")
    return FormView(
        engine=engine,
        valid=overrides is not None,
        fields=out,
        model=str(model) if model else AGENT_MODEL,
        current=current,
    )


def shown_fields(view: FormView, models: list[list[str]]) -> dict:
    """What the fields show (and only that: not whether the check is current), as plain data for a State: a slot is
    updated only when its part of it changes."""
    return {
        "engine": view.engine,
        "valid": view.valid,
        "model": view.model,
        "models": [list(m) for m in models],
        "fields": [asdict(f) for f in view.fields],
    }


def fields_id(shown: dict | None) -> str:
    """A short name of what the fields show (the state line and the slots' marks each carry it)."""
    return hashlib.sha1(json.dumps(shown, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:12]


def form_slots(shown: dict, count: int) -> list[dict | None]:
    """What each slot of the form shows: the model picker (slot 0), then one field per slot (None: no field there
    for this engine). A slot is updated only when its own content changes: ticking a box updated every field, and
    put back the value of the one being typed into (30 typed became 300)."""
    picker = {"model": shown["model"], "models": shown["models"], "valid": shown["valid"]}
    fields: list[dict | None] = list(shown["fields"][:count])
    return [picker] + fields + [None] * (count - len(fields))


def slots_id(slots: list[dict | None]) -> str:
    """What the state line's ``data-fields`` names: each slot's :func:`fields_id` (``-`` for an empty slot). The
    slots' marks each carry their own (:func:`slot_mark`); together they equal this once every slot shows what the
    line wants."""
    return ",".join(fields_id(s) if s is not None else "-" for s in slots)


def yaml_value(value: Any) -> str:
    """A value as one line of YAML (however long: PyYAML breaks lines at 80 characters by default)."""
    return yaml.safe_dump(value, default_flow_style=True, width=math.inf).strip().removesuffix("...").strip()


# -- edits of the spec: made in the page (static/yaml_edit.js) ---------------------------------------------
def fresh_memory(engine: str) -> dict:
    """The engines' memory for a Setup put in place whole (a preset, a clone): what other engines had is forgotten."""
    return {"engine": engine, "previous": engine, "texts": {}}


def switch_engine_js(default_engine: str, demos: dict[str, str] | None = None) -> str:
    """The page step of an engine picked (static/yaml_edit.js, ``switchEngine``): inputs (the engine, the overrides
    YAML, the memory), outputs (the YAML, the memory); ``demos``: each engine's demo config text."""
    args = ", ".join(json.dumps(a) for a in (default_engine, demos or {}))
    return f"(engine, text, memory) => window.awYaml.switchEngine(engine, text, memory, {args})"


def yaml_edit_js() -> str:
    """The page's script that makes every edit of the overrides YAML (static/yaml_edit.js; run with the title's
    js_on_load)."""
    return (Path(__file__).parents[1] / "static" / "yaml_edit.js").read_text(encoding="utf-8")


def slot_mark(
    slot: int, shown: dict | None, key: str = "", ftype: str | None = None, value: Any = None, box: str | None = None
) -> str:
    """Form slot ``slot``'s mark, a hidden element updated with its field: what the slot shows (``data-fields``, as
    the state line names it: tests compare the two) and what its edit needs (static/yaml_edit.js, ``slotEdit``)."""
    attrs = {
        "slot": str(slot),
        "fields": fields_id(shown) if shown is not None else "-",  # as slots_id names an empty slot
        "key": key,
        "type": json.dumps(ftype),
        "shown": json.dumps(value, default=str),
        "box": box or "",
    }
    return macro("tabs/config_form.html", "slot_mark")(list(attrs.items()))
