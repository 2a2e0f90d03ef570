"""Why a run failed: the causes recorded in status.json ``cause`` and in the ``failed`` event, and the
classification of an exception text or a log tail into one of them."""

from __future__ import annotations

from enum import StrEnum


class Cause(StrEnum):
    """Why a run (or an evaluation, a sweep) failed: status.json ``cause`` and the ``failed`` event's. A member is
    its text (``Cause.KILLED == "killed"``), so what is written and what older runs hold read the same."""

    OUT_OF_MEMORY = "out of memory"
    BAD_DATA = "bad data"
    REWARD_ERROR = "reward error"
    TOOL_SERVER_ERROR = "tool server error"
    MISSING_DEPENDENCY = "missing dependency"
    KILLED = "killed"
    DISK_FULL = "disk full"  # the message says where and how much room is left (engines/fit/disk_full.py)
    UNKNOWN = "unknown"
    LOSS_NOT_FINITE = "loss_not_finite"  # the diagnosis that stops a run (engines/diagnostics/watcher.py)


#: every failure cause, in :class:`Cause`'s order
CAUSES = tuple(Cause)
#: why a run ended early on its own (status.json "cause" of a finished run): no improvement for a while
EARLY_STOPPED = "early_stopped"


def classify_failure(text: str) -> Cause:
    """Map an exception text or log tail to one of :data:`CAUSES`."""
    t = text.lower()
    if (
        "out of memory" in t
        or "outofmemory" in t
        or "cuda oom" in t
        or "memoryerror" in t
        or "cannot allocate memory" in t
    ):
        return Cause.OUT_OF_MEMORY
    if "rewarderror" in t or "reward function" in t or "reward_func" in t:
        return Cause.REWARD_ERROR
    if "tool server error" in t or "toolservererror" in t:
        return Cause.TOOL_SERVER_ERROR
    if "modulenotfounderror" in t or "no module named" in t or "importerror" in t or "missing dependency" in t:
        return Cause.MISSING_DEPENDENCY
    if "killed" in t or "sigkill" in t or "signal 9" in t:
        return Cause.KILLED
    if (
        "dataset" in t
        or "column" in t
        or "datasetgenerationerror" in t
        or "arrowinvalid" in t
        or "keyerror" in t
        or "bad data" in t
    ):
        return Cause.BAD_DATA
    return Cause.UNKNOWN
