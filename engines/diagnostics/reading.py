"""The diagnoses of a run as its readers (the studio's Monitor, ``aworld-train runs``) show them:
the ``diagnosis`` events of events.jsonl folded into the ones active now."""

from __future__ import annotations

from typing import Iterable


def fold(active: dict[str, dict], events: Iterable[dict]) -> dict[str, dict]:
    """``active`` (code → its ``active`` event) updated, in place, with newer events; returns it."""
    for e in events:
        if e.get("event") != "diagnosis" or not e.get("code"):
            continue
        active.pop(e["code"], None)
        if e.get("state") == "active":
            active[e["code"]] = e
    return active


def active_diagnoses(events: Iterable[dict]) -> list[dict]:
    """The diagnosis events still active (their latest event says ``active``), in the order they started."""
    return list(fold({}, events).values())
