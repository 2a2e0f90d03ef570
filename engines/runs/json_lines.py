"""JSON in a run's files: a line written so every reader can parse it (no NaN), a file read whole however it was
left (missing, a folder in its place, a torn last line), and a growing file tailed from where the last read ended
(:class:`JsonlTail`, :class:`TextTail`)."""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .no_links import LINK_NOTICE, open_no_link, read_no_link


def _json_default(o: Any):
    try:
        import numpy as np  # noqa: WPS433

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    if hasattr(o, "item"):
        return o.item()
    return str(o)


def _clean(value: Any) -> Any:
    """JSON has no NaN/inf: write them as null so every reader can parse the line."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def dumps_json(obj: Any, **kw: Any) -> str:
    """``obj`` as JSON: NaN and infinities as null, numpy values as numbers, anything else as its text."""
    return json.dumps(_clean(obj), default=_json_default, **kw)


def dumps_line(obj: dict) -> str:
    """One JSON line (``\\n``-terminated) of a ``.jsonl`` file."""
    return dumps_json(obj, ensure_ascii=False) + "\n"


#: the most of a JSON object file (status.json, label.json) a reader takes
JSON_OBJECT_MAX_BYTES = 4 << 20


def read_json_object(path: Path, max_bytes: int = JSON_OBJECT_MAX_BYTES) -> dict:
    """A JSON object file; {} when it is missing, unreadable (a folder, a link or a pipe in its place), larger than
    ``max_bytes``, torn, or nested past what the parser takes (user code in the run can write it)."""
    try:
        data = json.loads(read_no_link(path, max_bytes))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def parse_row(line: str | bytes) -> dict | None:
    """One line of a run's JSON-lines file as a row, None when it is none: a torn last line while the writer is
    mid-write, or JSON that is no object (``[1, 2]``, ``null``, ``"text"``: user code in the run can append anything to
    its files, and every reader takes a row's keys)."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return None
    return row if isinstance(row, dict) else None


def iter_jsonl(path: Path) -> Iterator[dict]:
    try:
        with open_no_link(path, text=True) as f:
            for line in f:
                line = line.strip()
                if line and (row := parse_row(line)) is not None:
                    yield row
    except OSError:  # none, or a folder or a link in its place: no rows
        return


def last_json_line(path: str | os.PathLike) -> dict[str, Any] | None:
    """The last complete JSON line of a file (a progress file), None when there is none yet."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    return next((row for line in reversed(lines) if (row := parse_row(line)) is not None), None)


@dataclass
class JsonlTail:
    """Reads only the bytes appended since the last call; keeps a torn last line for later.

    A file deleted, truncated or replaced (another inode) after it was read is read again from its start,
    and ``replaced`` counts it: what a reader built from the earlier rows no longer matches the file."""

    path: Path
    offset: int = 0
    _partial: bytes = b""
    replaced: int = 0
    _ident: tuple[int, int] | None = None  # (st_dev, st_ino) of the file read so far

    def _start_over(self) -> None:
        self.offset, self._partial, self._ident = 0, b"", None
        self.replaced += 1

    def read_new(self, max_bytes: int | None = None) -> list[dict]:
        try:
            st = os.lstat(self.path)
            if not stat.S_ISREG(st.st_mode):  # a folder, a link or else in its place: nothing to read, as if deleted
                raise FileNotFoundError(self.path)
        except FileNotFoundError:
            if self.offset or self._partial:  # deleted after it was read
                self._start_over()
            return []
        ident, size = (st.st_dev, st.st_ino), st.st_size
        if (self._ident is not None and ident != self._ident) or size < self.offset:
            self._start_over()
        self._ident = ident
        if size == self.offset:
            return []
        try:
            with open_no_link(self.path) as f:
                f.seek(self.offset)
                data = f.read(max_bytes) if max_bytes else f.read()
        except OSError:  # swapped for a link or a pipe since its lstat: nothing read this time
            return []
        self.offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()  # b"" when data ended with a newline
        out = []
        for line in lines:
            if line.strip() and (row := parse_row(line)) is not None:
                out.append(row)
        return out


@dataclass
class TextTail:
    """The last ``keep`` lines of a growing text file, read incrementally."""

    path: Path
    keep: int = 200
    offset: int = 0
    lines: list[str] = field(default_factory=list)
    _partial: str = ""

    def read_new(self) -> list[str]:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return []
        if stat.S_ISLNK(st.st_mode):  # a link in its place: not followed, and said
            self.offset, self._partial = 0, ""
            if self.lines != [LINK_NOTICE]:
                self.lines = [LINK_NOTICE]
                return [LINK_NOTICE]
            return []
        if not stat.S_ISREG(st.st_mode):  # a folder in its place: nothing to read
            return []
        size = st.st_size
        if size < self.offset:
            self.offset, self.lines, self._partial = 0, [], ""
        if size == self.offset:
            return []
        start = max(self.offset, size - 256 * 1024) if self.offset == 0 else self.offset
        if self.lines == [LINK_NOTICE]:
            self.lines = []
        try:
            with open_no_link(self.path) as f:
                f.seek(start)
                data = f.read()
        except OSError:  # swapped for a link or a pipe since its lstat: nothing read this time
            return []
        self.offset = start + len(data)
        text = self._partial + data.decode("utf-8", errors="replace").replace("\r", "\n")
        new = text.split("\n")
        self._partial = new.pop()
        self.lines.extend(new)
        del self.lines[: max(0, len(self.lines) - self.keep)]
        return new

    def text(self) -> str:
        return "\n".join(self.lines + ([self._partial] if self._partial else []))
