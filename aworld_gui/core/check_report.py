"""A check report for a check worker that failed: the module being checked gets the error, naming whose code it
was; the ones after it are "not checked"."""

from __future__ import annotations

from typing import Any

from engines.results.check_result import CHECKED_MODULES, MODULES
from engines.core.isolated_checks import results_for_failure
from engines.isolation.sandbox import whose

from ..worker.check_worker import WorkerError


def failed_report(e: WorkerError) -> dict[str, Any]:
    """A check report for a worker failure: the module being checked gets the error (naming whose
    code it was), the ones after it are 'not checked' (see engines.core.isolated_checks)."""
    if e.kind == "cancelled":
        results = {
            m: {
                "module": m,
                "status": "warning",
                "message": "check cancelled: a newer check replaced it",
                "details": {},
                "warnings": [],
            }
            for m in MODULES
        }
        return {
            "results": results,
            "cancelled": True,
            "worker_error": {"kind": e.kind, "message": str(e), "output": ""},
        }
    message = str(e)
    if e.kind in ("exit", "crash", "processes"):
        message = f"{whose(e.stage)} {message}"
    elif e.kind == "timeout" and e.stage in CHECKED_MODULES:
        message = f"the {e.stage} check {message}"
    results = {r.module: r.to_dict() for r in results_for_failure(e.kind, message, e.stage)}
    return {"results": results, "worker_error": {"kind": e.kind, "message": str(e), "output": e.output[-2000:]}}
