"""The Setup form and the config's overrides YAML kept in step in the page, so that no keystroke is lost.

**Every edit of a key is made in the page.** A form field's edit sets its key in the overrides YAML in the page
(:func:`edit_js`), in the same moment as the keystroke. The settings editor's Set / Remove and the model picker
ask the server for the key's line (:func:`yaml_edit`: the value parsed and rendered by PyYAML), and a step in the
page puts that line into the YAML as it is then (:data:`APPLY_EDIT_JS`). Sent to the server and answered with the
whole text instead, an edit was a round trip behind the page: an answer built from the YAML before a box was
ticked wrote over the tick (the model picker sends an edit when it loses the focus, as a box is clicked), and two
quick edits both carried the YAML from before the first. The page and the server share the line rules
(:func:`set_yaml_line`, ``_SET_LINE_JS``; a test holds them to the same results).

**Check → form.** A check answers with the effective config (defaults included), and each field the overrides
YAML does not set shows its effective value. The answer may come seconds after the check began, so the check does
not set the fields itself: it answers with a *fill* (:func:`fill`), and a step in the page (:data:`APPLY_JS`) sets
a field only if

- the page's overrides YAML is still the one the check ran on (any edit since then changed it, and started a
  newer check),
- the field still holds the value it had when the check began (nothing typed or picked since: a field emptied
  while the check ran keeps the old value out of its way), and
- the field does not have the focus (the user may be about to type: an emptied field is refilled by the next
  check after the user leaves it).

The YAML typed by hand fills the fields it sets the same way. An engine picked brings that engine's YAML from the
server, put in only if the page's YAML is still the one it had when the engine was picked (:func:`replace`). None of these page steps waits for the server
between reading a field and setting it, so a keystroke cannot fall in between. A fill is applied once: the step
after a cancelled check's answer finds the latest fill already applied.
"""
from __future__ import annotations

import json
import uuid
from typing import Any

import yaml

KEEP = {"__type__": "update"}     # a page step's output that leaves its component as it is


def slot_id(kind: str, index: int) -> str:
    """The element id of a form field's slot (the fill step looks for the focus in it)."""
    return f"form-{kind}-{index}"


# -- form → YAML ---------------------------------------------------------------------------------------------
def yaml_line(key: str, value: Any) -> str | None:
    """``key: value`` as PyYAML writes it (flow style: one line for a list or a mapping); None for None."""
    if value is None:
        return None
    return yaml.safe_dump({key: value}, default_flow_style=True, sort_keys=False).strip()[1:-1].strip()


def set_yaml_line(text: str, key: str, line: str | None) -> str:
    """The overrides YAML with the top-level ``key``'s line replaced by ``line`` (appended if the key is not there;
    removed for None), comments and other lines kept. A block value under the key (indented or ``-`` lines) goes
    with it."""
    out, done, in_block = [], False, False
    for old in (text or "").splitlines():
        if in_block and old.startswith((" ", "\t", "-")):
            continue                                   # the replaced key's block value
        in_block = False
        bare = old.split("#", 1)[0]
        if not old.startswith((" ", "\t", "-")) and bare.split(":", 1)[0].strip() == key and ":" in bare:
            if line is not None and not done:
                out.append(line)
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


#: set_yaml_line in the page: (text, key, line) → text, or KEEP when the text would not change
_SET_LINE_JS = """
(text, key, line) => {
  const lines = (text || "").split(/\\r?\\n/);
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  const indented = l => l.startsWith(" ") || l.startsWith("\\t") || l.startsWith("-");
  const out = [];
  let done = false, inBlock = false;
  for (const old of lines) {
    if (inBlock && indented(old)) continue;
    inBlock = false;
    const bare = old.split("#")[0];
    if (!indented(old) && bare.includes(":") && bare.split(":")[0].trim() === key) {
      if (line !== null && !done) out.push(line);
      done = inBlock = true;
      continue;
    }
    out.push(old);
  }
  if (!done && line !== null) out.push(line);
  const next = out.join("\\n") + "\\n";
  return next.replace(/\\n+$/, "") === (text || "").replace(/\\n+$/, "") ? KEEP : next;
}
""".replace("KEEP", json.dumps({"__type__": "update"}))

#: yaml_line in the page for a form field's value: (key, type, value) → line or null. A float keeps a dot (PyYAML
#: reads ``1e-05`` as a string), an int field's number is rounded (as Gradio's Number is), a string is plain when
#: it is a name or a path YAML reads back as that string, else double-quoted (JSON's quoting is YAML's); null, NaN
#: and an empty string give null (the key goes).
_LINE_JS = r"""
(key, type, value) => {
  if (typeof value === "boolean") return key + ": " + value;
  if (typeof value === "number" && Number.isFinite(value)) {
    if (type === "int") return key + ": " + Math.round(value);
    if (Number.isInteger(value) && type !== "float") return key + ": " + value;
    const [mant, exp] = String(value).split("e");
    return key + ": " + (mant.includes(".") ? mant : mant + ".0") + (exp === undefined ? "" : "e" + exp);
  }
  if (typeof value === "string" && value !== "") {
    const plain = /^[A-Za-z_][A-Za-z0-9_.\/-]*$/.test(value) && !/^(y|n|yes|no|on|off|true|false|null)$/i.test(value);
    return key + ": " + (plain ? value : JSON.stringify(value));
  }
  return null;
}
"""


def edit_js(kind: str, index: int) -> str:
    """The page step of one form field's edit: inputs (the field's value, the overrides YAML, the field map),
    output the overrides YAML with the field's key set (or removed, for an emptied field)."""
    return f"""
(value, text, fieldMap) => {{
  const entry = (fieldMap || []).find(f => f[0] === {json.dumps(kind)} && f[1] === {index});
  if (!entry) return {json.dumps(KEEP)};
  const line = ({_LINE_JS.strip()})(entry[2], entry[3], value);
  return ({_SET_LINE_JS.strip()})(text, entry[2], line);
}}
"""


#: the page step after a server's :func:`yaml_edit`: inputs (the edit, the overrides YAML), output the YAML
APPLY_EDIT_JS = f"""
(edit, text) => edit && edit.key ? ({_SET_LINE_JS.strip()})(text, edit.key, edit.line ?? null) : {json.dumps(KEEP)}
"""


def replace(sent: str, text: str) -> dict:
    """A whole YAML from the server (another engine's, when an engine is picked) for the page to put in only if its
    YAML is still ``sent`` (:data:`APPLY_REPLACE_JS`)."""
    return {"expect": sent or "", "text": text or ""}


#: the page step after :func:`replace`: inputs (the replacement, the overrides YAML), output the YAML. Text typed or
#: pasted while the server answered stays (the user was already writing the new engine's config).
APPLY_REPLACE_JS = f"""
(swap, text) => swap && (text || "") === swap.expect ? swap.text : {json.dumps(KEEP)}
"""


# -- check → form --------------------------------------------------------------------------------------------
def fill(config_text: str, fields: list[tuple[int, str, Any, Any]]) -> dict:
    """The fill of one check: ``fields`` are ``(position among the slots, element id, value when the check began,
    value to show)``; ``config_text`` the overrides YAML the check ran on."""
    return {"id": uuid.uuid4().hex, "yaml": config_text or "",
            "fields": [[pos, elem, before, value] for pos, elem, before, value in fields]}


#: the page step before a check: the form fields' values (inputs, in the slots' order) as one list, for the check
#: to return as each field's value "when the check began"
SNAPSHOT_JS = "(...values) => [values]"

#: the fill step: inputs are the fill, the page's overrides YAML now, then every slot's value now (in the slots'
#: order); outputs are the slots
APPLY_JS = """
(fill, text, ...values) => {
  const keep = values.map(() => (%s));
  if (!fill || !fill.id || window.__awFormFill === fill.id) return keep;
  window.__awFormFill = fill.id;
  if ((text || "") !== (fill.yaml || "")) return keep;
  const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  const focus = document.activeElement;
  for (const [pos, elem, before, value] of fill.fields) {
    const box = document.getElementById(elem);
    if (box && focus && box.contains(focus)) continue;
    if (!same(values[pos], before)) continue;
    keep[pos] = value;
  }
  return keep;
}
""" % json.dumps(KEEP)
