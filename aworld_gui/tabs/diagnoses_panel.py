"""The Monitor's diagnoses: each problem the run has now (engines/diagnostics), above the curves, in
plain words — what, since which step, the evidence, what to change — with a button that clones the run
into Setup: static/live_monitor.js passes its ``data-clone-setting`` to the page's hidden
``monitor-clone-setting`` box and presses the hidden ``monitor-clone`` button (wired as the Runs tab's
Clone, aworld_gui/web/page.py)."""

from __future__ import annotations

import json
from typing import Iterable

from engines.diagnostics.advice import ADVICE

from ..rendering.i18n import _
from ..rendering.templates import macro

CLONE_ELEM = "monitor-clone"  # the hidden Gradio button the cards' buttons press
SETTING_ELEM = "monitor-clone-setting"  # the hidden textbox that tells the clone which setting to name


def _card(e: dict):
    code = str(e.get("code"))
    known = ADVICE.get(code)
    return macro("tabs/diagnoses.html", "card")(
        code,
        _(known.title) if known else (e.get("title") or code),
        _(known.advice) if known else (e.get("advice") or ""),
        (known.setting if known else e.get("setting")) or "",
        e.get("step"),
        [(k, json.dumps(v, ensure_ascii=False)) for k, v in (e.get("evidence") or {}).items()],
    )


def diagnoses_html(active: Iterable[dict]) -> str:
    """The cards of the active diagnoses (empty when there are none), in the order of the rules."""
    order = list(ADVICE)
    events = sorted(active, key=lambda e: order.index(e["code"]) if e.get("code") in order else len(order))
    return macro("tabs/diagnoses.html", "cards")([_card(e) for e in events])
