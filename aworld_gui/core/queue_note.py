"""What a queued run waits for, said the same way in every tab: its place in line and the run (or the slot)
it waits for, from the fields its own process keeps in status.json (engines/runs/lifecycle.py ``wait_for_slot``:
``queue_position``, ``queued_ahead``, ``waiting_for``). The Monitor's header and the Runs table both call
:func:`queue_note`, so they cannot disagree on what one status says."""

from __future__ import annotations

from typing import Any

from ..rendering import render
from ..rendering.i18n import _


def queue_facts(status: dict[str, Any]) -> tuple[int | None, list[str], str | None]:
    """(place in line, 1 = next; the runs queued before it, first in line first; the run holding the slot),
    the run ids escaped for HTML."""
    if status.get("state") != "queued":
        return None, [], None
    pos = status.get("queue_position")
    ahead = [render.esc(r) for r in status.get("queued_ahead") or []]
    holder = status.get("waiting_for")
    return (int(pos) if pos else None), ahead, (render.esc(holder) if holder else None)


def queue_note(status: dict[str, Any], short: bool = False) -> str:
    """HTML: ``#2 in line · waits for run X`` (``short``, the Runs table), or the Monitor's sentence around the
    same words; "" when the run is not queued or has not said its place yet."""
    pos, ahead, holder = queue_facts(status)
    if pos is None:
        return ""
    if ahead:
        what = (
            f"{_('run')} {ahead[0]}"
            if len(ahead) == 1
            else f"{len(ahead)} {_('runs queued before it (first:')} {ahead[0]})"
        )
        if holder and holder not in ahead:
            what += f"; {_('run')} {holder} {_('holds the training slot')}"
    elif holder:
        what = f"{_('run')} {holder}, {_('which holds the machine’s training slot')}"
    else:
        what = _("the machine’s training slot to be free")
    line = f"#{pos} {_('in line')} · {_('waits for')} {what}"  # the Runs table's words, in the Monitor too
    if short:
        return line
    return f"{_('Queued')} — {line}. {_('It starts by itself when its turn comes — closing this page does not affect it.')}"
