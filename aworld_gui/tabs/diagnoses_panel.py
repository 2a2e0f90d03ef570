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
from ..rendering.render import esc

CLONE_ELEM = "monitor-clone"  # the hidden Gradio button the cards' buttons press
SETTING_ELEM = "monitor-clone-setting"  # the hidden textbox that tells the clone which setting to name


def _evidence(evidence: dict) -> str:
    items = "".join(
        f"<li><code>{esc(k)}</code>: {esc(json.dumps(v, ensure_ascii=False))}</li>" for k, v in (evidence or {}).items()
    )
    return f'<ul class="aw-diag-evidence">{items}</ul>'


def _card(e: dict) -> str:
    code = str(e.get("code"))
    known = ADVICE.get(code)
    title = _(known.title) if known else esc(e.get("title") or code)
    advice = _(known.advice) if known else esc(e.get("advice") or "")
    setting = (known.setting if known else e.get("setting")) or ""
    change = f' <span class="aw-muted">{_("Change first:")}</span> <code>{esc(setting)}</code>' if setting else ""
    return (
        f'<div class="aw-diag" data-testid="diagnosis" data-code="{esc(code)}">'
        f'<div class="aw-diag-title"><b>{title}</b> <span class="aw-muted">· <code>{esc(code)}</code> · '
        f"{_('since step')} {esc(e.get('step'))}</span></div>"
        f'<div class="aw-diag-advice">{_("What to change:")} {advice}{change}</div>'
        f"<details><summary>{_('Evidence')}</summary>{_evidence(e.get('evidence') or {})}</details>"
        f'<button class="aw-diag-clone" data-testid="diagnosis-clone" data-clone-setting="{esc(setting)}">'
        f"{_('Clone into Setup')}</button></div>"
    )


def diagnoses_html(active: Iterable[dict]) -> str:
    """The cards of the active diagnoses (empty when there are none), in the order of the rules."""
    order = list(ADVICE)
    events = sorted(active, key=lambda e: order.index(e["code"]) if e.get("code") in order else len(order))
    if not events:
        return ""
    return (
        f'<div class="aw-diagnoses" data-testid="diagnoses"><div class="aw-section-title">'
        f"{_('Why it may not be learning')}</div>{''.join(_card(e) for e in events)}</div>"
    )
