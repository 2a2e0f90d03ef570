"""An isolated call's result, read back in the caller as data (engines.isolation.sandbox).

The result travels as a pickle on a pipe, and the pipe's write end is in the process that runs the user code: that
code can write any frame there, and exit before the real one is sent. So the caller never unpickles with a bare
``pickle.loads``, which would rebuild whatever a frame names — ``exec`` with the code of its choosing, run in the check
worker (which keeps its capabilities: the probe of issue 41 read the studio's memory so), the CLI or a sweep's driver.
A failed call's outcome is also said here in one sentence that names whose code it was (:func:`describe`).
"""

from __future__ import annotations

import io
import pickle
from typing import Any

#: what a call's result may hold besides plain data (str, numbers, bytes, lists, tuples, dicts, sets, None): a
#: class is rebuilt only if named here. The frame comes from the user code's own process, which holds the pipe's
#: write end and can write any bytes to it: an unrestricted ``pickle.loads`` would run whatever a forged frame names
#: (``exec`` with its payload) in the caller — the studio's check worker, which keeps its capabilities.
RESULT_CLASSES: frozenset[tuple[str, str]] = frozenset(
    {
        ("engines.results.check_result", "CheckResult"),
        ("pathlib", "PosixPath"),
        ("pathlib", "Path"),
        ("collections", "OrderedDict"),
        ("datetime", "datetime"),
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("builtins", "complex"),
    }
)


class ForgedResult(pickle.UnpicklingError):
    """A call's result names something that is not plain data or a class of :data:`RESULT_CLASSES`."""


class _ResultUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in RESULT_CLASSES:
            raise ForgedResult(f"it names {module}.{name}, which a result never holds")
        return super().find_class(module, name)


def load_result(frame: bytes) -> Any:
    """A call's result frame as data: plain values and the classes of :data:`RESULT_CLASSES` only (raises
    :class:`ForgedResult` for anything else, :class:`pickle.UnpicklingError` for what is not a pickle)."""
    return _ResultUnpickler(io.BytesIO(frame)).load()


def whose(stage: str | None) -> str:
    """ "the reward module's code" for a module stage, else "user code"."""
    from ..results.check_result import CHECKED_MODULES

    return f"the {stage} module's code" if stage in CHECKED_MODULES else "the checked code"


def describe(outcome: Any) -> str:
    """One sentence for a failed call (a sandbox ``Outcome``), naming whose code it was, e.g. "the reward module's code exited
    with status 1 (os._exit or a crash in native code) before it returned"."""
    if outcome.kind == "timeout":
        who = f"the {outcome.stage} check" if outcome.stage else "the check"
        return f"{who} {outcome.error}"
    if outcome.kind in ("exit", "crash", "processes"):
        return f"{whose(outcome.stage)} {outcome.error}"
    return outcome.error
