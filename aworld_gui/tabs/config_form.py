"""The Setup's config form, derived from the one spec: the overrides YAML.

**One writer.** The overrides YAML (``SetupUI.config_yaml``) is the only place a config value lives. Every
control edits it and nothing else, and every other view is computed from it:

- the form (:func:`form_view`, its components updated by value in config_form_render.py): a field shows the YAML's value
  for its key, else the effective value of the check *of this very YAML* (defaults derived from the agent included;
  while it runs, the last check's, marked not current), else the engine's default. A YAML that does not parse shows no values and locks the fields (the note says why);
- the check, the effective config, the memory estimate, the CLI command and, at Launch, ``run.yaml``: all take the
  YAML as their input.

**Edits.** A field's edit sets its key in the YAML *in the page* (:func:`edit_js`), when the field is left (or
Enter is pressed; a box or a choice at once), so an edit is never a round trip behind the page. The settings
editor's Set / Remove ask the server for the key's line (:func:`yaml_edit`, rendered by PyYAML) and the page puts
it into the YAML as it is then (:data:`APPLY_EDIT_JS`). An engine picked swaps each engine's own overrides in the
page (:data:`SWITCH_ENGINE_JS`). The page and the server share the line rules (:func:`set_yaml_line` /
``_SET_LINE_JS``, :func:`switch_engine` / ``SWITCH_ENGINE_JS``; tests/test_browser_config_form.py holds each pair
to the same results).

**Why typing is not overwritten.** An update puts its field's value back, so a field is updated only when what it
shows changes (:func:`form_slots`, a State each: config_form_render.py), and numbers are typed into text boxes
(docs/ARCHITECTURE.md, "One spec in Setup"). Nothing is kept in step: no fills, snapshots or focus rules.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import yaml

from engines.files.yaml_input import try_load_yaml

from ..rendering import engine_text
from ..rendering.i18n import _
from ..rendering.templates import macro

KEEP = {"__type__": "update"}  # a page step's output that leaves its component as it is
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
    """A value as one line of YAML."""
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


def switch_engine(
    memory: dict | None, engine: str, text: str, default_engine: str, demos: dict[str, str] | None = None
) -> tuple[str, dict]:
    """Another engine picked: each engine keeps its own overrides (one engine's keys mean nothing to another), so
    the last engine's are put aside and this one's come back. An engine picked for the first time starts from its
    defaults, or from its own demo config (``demos``: engine → text) when the last engine's overrides are that
    engine's demo config as shipped (``demo`` in the memory then). (text, memory); the page's twin is
    :data:`SWITCH_ENGINE_JS`."""
    memory = memory if isinstance(memory, dict) and isinstance(memory.get("texts"), dict) else {}
    previous = memory.get("engine") or default_engine
    if previous == engine:
        return text or "", dict(memory, engine=engine, previous=previous, texts=dict(memory.get("texts") or {}))
    texts = dict(memory.get("texts") or {})
    texts[previous] = text or ""
    if engine in texts:
        return texts.pop(engine), {"engine": engine, "previous": previous, "texts": texts}
    demos = demos or {}
    demo = engine in demos and previous in demos and (text or "").strip() == demos[previous].strip()
    return (demos[engine] if demo else ""), {"engine": engine, "previous": previous, "texts": texts, "demo": demo}


def fresh_memory(engine: str) -> dict:
    """The engines' memory for a Setup put in place whole (a preset, a clone): what other engines had is forgotten."""
    return {"engine": engine, "previous": engine, "texts": {}}


#: switch_engine in the page: inputs (engine, the overrides YAML, the memory), outputs (the YAML, the memory)
SWITCH_ENGINE_JS = """
(engine, text, memory) => {
  const m = memory && typeof memory.texts === "object" && memory.texts ? memory : {};
  const previous = m.engine || DEFAULT;
  const texts = Object.assign({}, m.texts || {});
  if (previous === engine) return [KEEP, Object.assign({}, m, {engine, previous, texts})];
  texts[previous] = text || "";
  if (Object.prototype.hasOwnProperty.call(texts, engine)) {
    const next = texts[engine];
    delete texts[engine];
    return [next, {engine, previous, texts}];
  }
  const demos = DEMOS;
  const has = e => Object.prototype.hasOwnProperty.call(demos, e);
  const demo = has(engine) && has(previous) && (text || "").trim() === demos[previous].trim();
  return [demo ? demos[engine] : "", {engine, previous, texts, demo}];
}
"""


def switch_engine_js(default_engine: str, demos: dict[str, str] | None = None) -> str:
    return (
        SWITCH_ENGINE_JS.replace("DEFAULT", json.dumps(default_engine))
        .replace("KEEP", json.dumps(KEEP))
        .replace("DEMOS", json.dumps(demos or {}))
    )


# -- edits of the spec ---------------------------------------------------------------------------------------
def yaml_line(key: str, value: Any) -> str | None:
    """``key: value`` as PyYAML writes it (flow style: one line for a list or a mapping); None for None."""
    if value is None:
        return None
    return yaml.safe_dump({key: value}, default_flow_style=True, sort_keys=False).strip()[1:-1].strip()


def comment_at(line: str) -> int:
    """Where ``line``'s comment starts (a ``#`` at the start or after a space, outside quotes), or -1."""
    quote = None
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return i
        i += 1
    return -1


def set_yaml_line(text: str, key: str, line: str | None) -> str:
    """The overrides YAML with the top-level ``key``'s line replaced by ``line`` (appended if the key is not there;
    removed for None), other lines kept as they are and the replaced line's comment kept at its column. A block
    value under the key (indented or ``-`` lines) goes with it; blank lines at the end go (one newline ends it)."""
    lines = (text or "").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    out, done, in_block = [], False, False
    for old in lines:
        if in_block and old.startswith((" ", "\t", "-")):
            continue  # the replaced key's block value
        in_block = False
        bare = old.split("#", 1)[0]
        if not old.startswith((" ", "\t", "-")) and bare.split(":", 1)[0].strip() == key and ":" in bare:
            if line is not None and not done:
                at = comment_at(old)
                out.append(line if at < 0 else line + " " * max(1, at - len(line)) + old[at:])
            done = in_block = True
            continue
        out.append(old)
    if not done and line is not None:
        out.append(line)
    return "\n".join(out) + "\n"


def set_yaml_key(text: str, key: str, value: Any) -> str:
    """Set one top-level key in the overrides YAML (:func:`set_yaml_line`); a value of None removes the key."""
    return set_yaml_line(text, key, yaml_line(key, value))


def yaml_edit(key: str, value: Any) -> dict:
    """An edit of one key for the page to make (:data:`APPLY_EDIT_JS`)."""
    return {"key": key, "line": yaml_line(key, value)}


#: in the page: (line, key) → whether ``line`` is ``key``'s top-level line (set_yaml_line's test)
_KEY_LINE_JS = """
(l, key) => !(l.startsWith(" ") || l.startsWith("\\t") || l.startsWith("-"))
  && l.split("#")[0].includes(":") && l.split("#")[0].split(":")[0].trim() === key
"""

#: set_yaml_line in the page: (text, key, line) → text, or KEEP when the text would not change
_SET_LINE_JS = """
(text, key, line) => {
  const lines = (text || "").split(/\\r?\\n/);
  while (lines.length && lines[lines.length - 1].trim() === "") lines.pop();
  const indented = l => l.startsWith(" ") || l.startsWith("\\t") || l.startsWith("-");
  const keyLine = KEY_LINE;
  const commentAt = l => {  // config_form.comment_at
    let quote = null;
    for (let i = 0; i < l.length; i++) {
      const c = l[i];
      if (quote) { if (c === "\\\\" && quote === '"') i++; else if (c === quote) quote = null; }
      else if (c === '"' || c === "'") quote = c;
      else if (c === "#" && (i === 0 || /\\s/.test(l[i - 1]))) return i;
    }
    return -1;
  };
  const out = [];
  let done = false, inBlock = false;
  for (const old of lines) {
    if (inBlock && indented(old)) continue;
    inBlock = false;
    if (keyLine(old, key)) {
      if (line !== null && !done) {
        const at = commentAt(old);
        out.push(at < 0 ? line : line + " ".repeat(Math.max(1, at - line.length)) + old.slice(at));
      }
      done = inBlock = true;
      continue;
    }
    out.push(old);
  }
  if (!done && line !== null) out.push(line);
  const next = out.join("\\n") + "\\n";
  return next.replace(/\\n+$/, "") === (text || "").replace(/\\n+$/, "") ? KEEP : next;
}
""".replace("KEEP", json.dumps(KEEP)).replace("KEY_LINE", _KEY_LINE_JS.strip())

#: yaml_line in the page for a form field's value: (key, type, value) → line or null. A number field's text is read
#: as a number (its box is a text box: see config_form_render._value). A float keeps a dot (PyYAML
#: reads ``1e-05`` as a string), an int field's number is rounded (as Gradio's Number is), a string is plain when
#: it is a name or a path YAML reads back as that string, else double-quoted (JSON's quoting is YAML's); null, NaN,
#: an empty string and the model picker's "(the agent's model)" give null (the key goes).
_LINE_JS = """
(key, type, value) => {
  if ((type === "int" || type === "float") && typeof value === "string") {
    const t = value.trim(), n = Number(t);
    value = t === "" ? null : Number.isFinite(n) ? n : t;  // not a number: written as typed, the check says so
  }
  if (typeof value === "boolean") return key + ": " + value;
  if (typeof value === "number" && Number.isFinite(value)) {
    if (type === "int") return key + ": " + Math.round(value);
    if (Number.isInteger(value) && type !== "float") return key + ": " + value;
    const [mant, exp] = String(value).split("e");
    return key + ": " + (mant.includes(".") ? mant : mant + ".0") + (exp === undefined ? "" : "e" + exp);
  }
  if (typeof value === "string" && value !== "" && value !== AGENT_MODEL) {
    const plain = /^[A-Za-z_][A-Za-z0-9_.\\/-]*$/.test(value) && !/^(y|n|yes|no|on|off|true|false|null)$/i.test(value);
    return key + ": " + (plain ? value : JSON.stringify(value));
  }
  return null;
}
""".replace("AGENT_MODEL", json.dumps(AGENT_MODEL))


#: in the page: (key, type, value, text) → the overrides YAML with ``key`` set to ``value`` (removed for an emptied
#: field), or KEEP when that changes nothing
_EDIT_JS = f"""
(key, ftype, value, text) => ({_SET_LINE_JS.strip()})(text, key, ({_LINE_JS.strip()})(key, ftype, value))
"""

#: in the page: (key, type, shown, box, value, text) → a field's edit (:func:`field_edit_js`)
_FIELD_EDIT_JS = f"""
(key, ftype, shown, box, value, text) => {{
  const set = (text || "").split(/\\r?\\n/).some(l => ({_KEY_LINE_JS.strip()})(l, key));
  if (!set && value === shown) return {json.dumps(KEEP)};  // an effective value left as it was shown
  const next = ({_EDIT_JS.strip()})(key, ftype, value, text);
  const emptied = value === null || value === undefined || value === "" || Number.isNaN(value);
  if (box && shown !== null && shown !== "" && emptied && next && next.__type__ === "update") setTimeout(() => {{
    const el = document.querySelector(box);
    if (el && el.value === "") {{ el.value = String(shown); el.dispatchEvent(new Event("input", {{bubbles: true}})); }}
  }}, 0);
  return next;
}}
"""


def edit_js(key: str, ftype: str | None) -> str:
    """The page step of a form field's edit: inputs (the field's value, the overrides YAML), output the overrides
    YAML with ``key`` set (or removed, for an emptied field)."""
    return f"(value, text) => ({_EDIT_JS.strip()})({json.dumps(key)}, {json.dumps(ftype)}, value, text)"


def field_edit_js(key: str, ftype: str | None, shown: Any, box: str | None = None) -> str:
    """:func:`edit_js` for a field that shows ``shown`` (output: the overrides YAML). A field the YAML does not set,
    left as it showed, changes nothing (a click in and out pinned its effective value in the YAML); one it sets,
    left as it is, writes the same line (its comment kept), which changes nothing either. A number or text field
    emptied whose key the YAML does not set changes no spec, so nothing updates it: its box (``box``, a selector)
    shows ``shown``, its effective value, again — not an empty box the run would not use. (Gradio does not put back
    a value it believes the field still has, so the box is given it as if typed.)"""
    args = ", ".join(json.dumps(a) for a in (key, ftype, shown, box))
    return f"(value, text) => ({_FIELD_EDIT_JS.strip()})({args}, value, text)"


def slot_edit_js(slot: int) -> str:
    """:func:`field_edit_js` for whatever field form slot ``slot`` shows now: its key, type, the value it was given
    and its box are read from the slot's mark (:func:`slot_mark`), which changes with the field in one update."""
    mark = json.dumps(f'[data-testid="form-fields"][data-slot="{slot}"]')
    return f"""
(value, text) => {{
  const m = document.querySelector({mark});
  if (!m || !m.dataset.key) return {json.dumps(KEEP)};
  const d = m.dataset;
  return ({_FIELD_EDIT_JS.strip()})(d.key, JSON.parse(d.type), JSON.parse(d.shown), d.box || null, value, text);
}}
"""


def slot_mark(
    slot: int, shown: dict | None, key: str = "", ftype: str | None = None, value: Any = None, box: str | None = None
) -> str:
    """Form slot ``slot``'s mark, a hidden element updated with its field: what the slot shows (``data-fields``, as
    the state line names it: tests compare the two) and what its edit needs (:func:`slot_edit_js`)."""
    attrs = {
        "slot": str(slot),
        "fields": fields_id(shown) if shown is not None else "-",  # as slots_id names an empty slot
        "key": key,
        "type": json.dumps(ftype),
        "shown": json.dumps(value, default=str),
        "box": box or "",
    }
    return macro("tabs/config_form.html", "slot_mark")(list(attrs.items()))


#: the page step after a server's :func:`yaml_edit`: inputs (the edit, the overrides YAML), output the YAML
APPLY_EDIT_JS = f"""
(edit, text) => edit && edit.key ? ({_SET_LINE_JS.strip()})(text, edit.key, edit.line ?? null) : {json.dumps(KEEP)}
"""
