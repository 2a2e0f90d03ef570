"""Output to a file or a pipe is plain text: AWorld colours its log messages with terminal escape codes written into
the messages themselves (``aworld/logs/util.py``: ``\\033[32m ... \\033[0m``) and adds its console handler with
``colorize=True``, so a run's ``train.log``, a CI log or ``aworld-train train ... > out.txt`` filled with
``\\x1b[32m``. The CLI and the run process (applications: they, not the library, decide their output) write their
standard error through :class:`PlainText` when it is not a terminal, before anything imports AWorld."""

from __future__ import annotations

import io
import re
import sys
from typing import TextIO

#: an ANSI escape sequence: CSI (colours, cursor moves) and the two-character ones
ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])")


class PlainText(io.TextIOBase):
    """A text stream that writes to ``stream`` without terminal escape codes."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(ANSI.sub("", text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", "utf-8")

    def __getattr__(self, name: str):  # what else a stream has (``buffer``, ``errors``): the wrapped one's
        return getattr(self.stream, name)


def plain_stderr() -> None:
    """Standard error through :class:`PlainText` unless it is a terminal (where colours are what the user sees)."""
    if not isinstance(sys.stderr, PlainText) and not sys.stderr.isatty():
        sys.stderr = PlainText(sys.stderr)
