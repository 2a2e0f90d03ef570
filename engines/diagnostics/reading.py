"""The diagnoses of a run as its readers (the studio's Monitor, ``aworld-train runs``) show them:
the ``diagnosis`` events of events.jsonl folded into the ones active now."""
from __future__ import annotations

from typing import Iterable


def active_diagnoses(events: Iterable[dict]) -> list[dict]:
    """The diagnosis events still active (their latest event says ``active``), in the order they started."""
    latest: dict[str, dict] = {}
    for e in events:
        if e.get("event") == "diagnosis" and e.get("code"):
            latest.pop(e["code"], None)
            latest[e["code"]] = e
    return [e for e in latest.values() if e.get("state") == "active"]
