"""What a queued run waits for, said the same way in every tab: its place in line and the run (or the slot)
it waits for, from the fields its own process keeps in status.json (engines/runs/lifecycle.py ``wait_for_slot``:
``queue_position``, ``queued_ahead``, ``waiting_for``). The Monitor's header and the Runs table both call
:func:`queue_note`, so they cannot disagree on what one status says."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from ..rendering.templates import macro


def queue_facts(status: dict[str, Any]) -> tuple[int | None, list[str], str | None]:
    """(place in line, 1 = next; the runs queued before it, first in line first; the run holding the slot), as
    status.json says them (text: the template escapes them)."""
    if status.get("state") != "queued":
        return None, [], None
    pos = status.get("queue_position")
    holder = status.get("waiting_for")
    return (int(pos) if pos else None), [str(r) for r in status.get("queued_ahead") or []], (holder or None)


def queue_note(status: dict[str, Any], short: bool = False) -> Markup | str:
    """HTML: ``#2 in line · waits for run X`` (``short``, the Runs table), or the Monitor's sentence around the
    same words (templates/core/queue_note.html); "" when the run is not queued or has not said its place yet."""
    pos, ahead, holder = queue_facts(status)
    if pos is None:
        return ""
    return macro("core/queue_note.html", "note")(pos, ahead, str(holder) if holder else None, short)
