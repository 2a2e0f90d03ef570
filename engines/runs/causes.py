"""Why a run failed: the causes recorded in status.json ``cause`` and in the ``failed`` event, and the
classification of an exception text or a log tail into one of them."""

from __future__ import annotations

#: failure causes (events.jsonl "failed" events and status.json "cause")
CAUSES = (
    "out of memory",
    "bad data",
    "reward error",
    "tool server error",
    "missing dependency",
    "killed",
    "unknown",
    "loss_not_finite",
)
#: why a run ended early on its own (status.json "cause" of a finished run): no improvement for a while
EARLY_STOPPED = "early_stopped"


def classify_failure(text: str) -> str:
    """Map an exception text or log tail to one of :data:`CAUSES`."""
    t = text.lower()
    if (
        "out of memory" in t
        or "outofmemory" in t
        or "cuda oom" in t
        or "memoryerror" in t
        or "cannot allocate memory" in t
    ):
        return "out of memory"
    if "rewarderror" in t or "reward function" in t or "reward_func" in t:
        return "reward error"
    if "tool server error" in t or "toolservererror" in t:
        return "tool server error"
    if "modulenotfounderror" in t or "no module named" in t or "importerror" in t or "missing dependency" in t:
        return "missing dependency"
    if "killed" in t or "sigkill" in t or "signal 9" in t:
        return "killed"
    if (
        "dataset" in t
        or "column" in t
        or "datasetgenerationerror" in t
        or "arrowinvalid" in t
        or "keyerror" in t
        or "bad data" in t
    ):
        return "bad data"
    return "unknown"
