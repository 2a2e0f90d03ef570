"""Check results as data.

Every ``check_*`` step records a :class:`CheckResult` that a GUI or CLI can render.
An error raises :class:`CheckError` (a ``ValueError``) whose message says what is wrong
and how to fix it; the structured result rides along on ``.result``.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

OK, WARNING, ERROR = "ok", "warning", "error"
#: the modules a setup is made of, in the order they are checked (the spec's four, then the engine)
MODULES = ("agent", "dataset", "reward", "config", "engine")
#: the spec's four modules, checked by ``check_agent``/``check_dataset``/``check_reward``/``check_config``
CHECKED_MODULES = MODULES[:4]


@dataclass
class CheckResult:
    module: str
    status: str  # ok | warning | error
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:  # a message never quotes a password (a judge's url with user:pw@)
        from ..env_values.secret_values import mask_url_passwords, mask_url_passwords_deep

        self.message = mask_url_passwords(self.message)
        self.warnings = [mask_url_passwords(w) for w in self.warnings]
        self.details = mask_url_passwords_deep(self.details)

    @property
    def ok(self) -> bool:
        return self.status != ERROR

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CheckResult":
        return cls(
            module=d["module"],
            status=d["status"],
            message=d["message"],
            details=d.get("details") or {},
            warnings=list(d.get("warnings") or []),
        )


class CheckError(ValueError):
    """A module failed its check. ``str(err)`` is the user-facing message."""

    def __init__(
        self, module: str, message: str, hint: str | None = None, studio_hint: str | None = None, **details: Any
    ):
        """``hint`` says how to fix it in a file or in Python; ``studio_hint``, when the fix in the studio
        is a different one (a dropdown to set rather than an argument to pass), says that instead there."""
        self.module = module
        self.hint = hint
        from ..env_values.secret_values import mask_url_passwords

        message, hint = mask_url_passwords(message), mask_url_passwords(hint)
        text = message if not hint else f"{message} — {hint}"
        super().__init__(f"[{module}] {text}")
        if studio_hint:
            details = {**details, "problem": message, "studio_hint": studio_hint}
        self.result = CheckResult(module=module, status=ERROR, message=text, details=details)

    def field_problems(self) -> dict[str, str]:
        """What is wrong with each setting this error names, by key: ``key=`` (one value), ``keys=`` (settings that
        together do not fit, e.g. the data), or ``by_key`` (every problem at once, engines/inputs/config.py); the
        studio shows each at its field."""
        return field_problems(self.result)

    @classmethod
    def from_result(cls, result: CheckResult) -> "CheckError":
        """The error a failed :class:`CheckResult` stands for (e.g. one reported by an isolated check)."""
        err = cls(result.module, result.message)
        err.result = result
        return err


def field_problems(result: CheckResult | dict) -> dict[str, str]:
    """A failed check's problems by the setting each names (see :meth:`CheckError.field_problems`); a result as
    :meth:`CheckResult.to_dict` has it too."""
    details = (result.details if isinstance(result, CheckResult) else result.get("details")) or {}
    message = result.message if isinstance(result, CheckResult) else result.get("message") or ""
    if details.get("by_key"):
        return {str(k): str(v) for k, v in details["by_key"].items()}
    keys = details.get("keys") or ([details["key"]] if details.get("key") else [])
    return {str(k): message for k in keys}


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean "x"?)' or '' when nothing is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


def format_table(results: list[CheckResult]) -> str:
    """A plain-text table of results, one row per module, warnings indented under it."""
    icon = {OK: "OK", WARNING: "WARN", ERROR: "ERROR"}
    width = max([len(r.module) for r in results] + [6])
    lines = [f"{'module'.ljust(width)}  status  message", "-" * (width + 40)]
    for r in results:
        lines.append(f"{r.module.ljust(width)}  {icon.get(r.status, r.status).ljust(6)}  {r.message}")
        for w in r.warnings:
            lines.append(f"{' ' * width}          ! {w}")
    return "\n".join(lines)
