"""The Reward card's registry and its "what each reward received and returned" block.

Pure functions over plain data from the check worker (the catalog and the reward check's details): the
studio never imports reward code.
"""

from __future__ import annotations

import re
from typing import Any

from ..core import inputs as inp
from ..rendering import engine_text
from ..rendering.i18n import _, headers
from ..rendering.templates import macro


#: the reward preview's own columns (Dataframe headers: see i18n.headers)
PREVIEW, ROW, PROMPT, ANSWER, COMPLETION, TOTAL = headers("preview", "row", "prompt", "answer", "completion", "total")


def factory_key(entry: dict[str, Any]) -> str:
    """A factory's picker key carries its example arguments: ``module:get_x(a=1, b=2)``."""
    return inp.with_args(entry["key"], entry.get("args") or {}) if entry.get("factory") else entry["key"]


def describe(entry: dict[str, Any]) -> str:
    """The "what it scores" text of a catalog entry: description, source, what it needs."""
    parts = [entry.get("description") or ""]
    if entry.get("source") and entry["source"] != "aworld":
        parts.append(f"[{entry['source']}]")
    if entry.get("data_sources"):
        sources = entry["data_sources"]
        parts.append("data_source: " + ", ".join(sources[:6]) + (", …" if len(sources) > 6 else ""))
    if entry.get("factory"):
        parts.append("factory: edit its arguments in the picker, e.g. " + factory_key(entry).rpartition(":")[2])
    if entry.get("missing"):
        parts.append("needs: pip install " + " ".join(entry["missing"]))
    elif entry.get("requires"):
        parts.append("uses " + ", ".join(entry["requires"]))
    return " · ".join(p for p in parts if p)


def registry(catalog: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """{picker key: (label, description)}: built-ins, then the ecosystem's rewards (TRL, verl, ...)."""
    entries = catalog.get("reward_catalog")
    if not entries:  # an older worker: built-in names only
        return {name: (name, desc) for name, desc in (catalog.get("rewards") or {}).items()}
    out: dict[str, tuple[str, str]] = {}
    for e in entries:
        if e.get("error"):
            continue
        label = e.get("label") or e["key"]
        if e.get("missing"):
            label += " (not installed: " + ", ".join(e["missing"]) + ")"
        out[factory_key(e)] = (label, describe(e))
    return out


def label_for(key: str, docs: dict[str, tuple[str, str]]) -> str:
    return docs[key][0] if key in docs else inp.reward_label(key)


_LISTS = re.compile(r"(?:list\[\d+\] of )*")


def shape_parts(shape: str) -> list[str]:
    """An argument's shape as engines/rewards/calling.shape writes it (``list[2] of {role, content}``): its leading
    lists' types, then the rest."""
    lists = _LISTS.match(shape).group(0)
    return [*lists.split(" of ")[:-1], shape[len(lists) :]]


def shape_html(shape: str) -> str:
    """An argument's shape: its types and keys as code, each "of" of its leading lists in the page's language."""
    return macro("tabs/reward_calls.html", "shape")(shape_parts(shape))


def calls_html(result: dict[str, Any] | None) -> str:
    """What each reward received (argument names and shapes) and returned on the sample rows."""
    calls = ((result or {}).get("details") or {}).get("calls") or {}
    logged_all = calls.get("_logged") or {}
    terms = {k: v for k, v in calls.items() if not k.startswith("_")}
    template = ((result or {}).get("details") or {}).get("completion_template")
    shown = [
        {
            "name": name,
            "style": engine_text.known(call.get("style", "")),
            "args": [(k, shape_parts(v)) for k, v in (call.get("args") or {}).items()],
            "returned": (call.get("returned") or [])[:6],
            "more": max(len(call.get("returned") or []) - 6, 0),
            "logged": list((call.get("logged") or {}).items()),
        }
        for name, call in terms.items()
    ]
    return macro("tabs/reward_calls.html", "calls")(shown, template, list(logged_all))


def reward_preview_frame(result: dict):
    import pandas as pd

    dry = (result.get("details") or {}).get("dry_run") or []
    if not dry:
        said = (
            result.get("message")
            if result.get("status") == "error"
            else "; ".join(result.get("warnings") or []) or _("no sample rows to score yet")
        )
        return pd.DataFrame({PREVIEW: [engine_text.message(str(said or ""))]})
    rows = []
    for entry in dry:
        for label in ("reference", "wrong"):
            scored = entry.get(label) or {}
            row = {
                ROW: entry.get("row"),
                PROMPT: entry.get("prompt"),
                ANSWER: entry.get("answer"),
                COMPLETION: f"{scored.get('completion')!r} ({_(label)})",
            }
            for term, v in (scored.get("terms") or {}).items():  # a reward's column: its name
                row[term] = round(v, 4) if isinstance(v, float) else v
            row[TOTAL] = round(scored.get("total", 0.0), 4)
            rows.append(row)
    return pd.DataFrame(rows)
