"""The Runs table's row for one run, from its files. User code in a run can write any of them (a run.yaml nested
3000 deep, a pipe for a label.json, a status.json whose values are of no type a reader expects): a run whose files
cannot be read is listed as unreadable, with why, and never breaks the list for the others (issue 41, fifth probe)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from engines.runs.rundir import FAILED, RunDir

from .queue_note import queue_note
from .run_cache import RunCache

log = logging.getLogger("aworld.studio")


def run_row(run: RunDir, cache: RunCache) -> dict[str, Any]:
    """What the Runs table (and ``/list_runs``) shows of ``run``; its ``unreadable`` says why its files could not be
    read (None when they could)."""
    try:
        return _row(run, cache)
    except Exception as e:  # noqa: BLE001 - this run's files, never the list's problem
        log.warning("run %s: its files cannot be read (%s: %s)", run.run_id, type(e).__name__, e)
        why = " ".join(f"its files cannot be read: {type(e).__name__}: {e}".split())[:300]
        return {
            **dict.fromkeys(("cause", "started", "step", "total_steps", "last_reward", "last_loss")),
            "run_id": run.run_id,
            "state": "unknown",
            "engine": "?",
            "model": "",
            "queue": "",
            "unreadable": why,
            "name": "",
            "note": "",
        }


def _row(run: RunDir, cache: RunCache) -> dict[str, Any]:
    st = cache.get(run.path)
    status, spec = st.refresh_status_only(), st.read_spec()
    agent = spec.get("agent")
    return {
        "run_id": run.run_id,
        "state": status.get("state", "unknown"),
        "cause": status.get("cause") if status.get("state") == FAILED else None,
        "engine": spec.get("engine") or status.get("engine") or "?",
        "started": status.get("started") or status.get("launched"),
        "step": status.get("step"),
        "total_steps": status.get("total_steps"),
        "last_reward": status.get("last_reward"),
        "last_loss": status.get("last_loss"),
        "model": Path(str(agent.get("model") or "")).name if isinstance(agent, dict) else "",
        "queue": queue_note(status, short=True),  # the Monitor's header says it with the same function
        # a malformed run.yaml (read as {}): this run says so, the others list
        "unreadable": None if spec else run.spec_problem(),
        **run.read_label(),
    }
