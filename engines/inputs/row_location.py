"""Where a dataset row is in its file, in the file's own numbering: "line 7" of a JSONL or CSV file
(the header is line 1), "record 3" of a JSON list, "row 5" (1-based) of a parquet file or an
in-memory dataset. Messages about rows use these, never 0-based indexes.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Iterable

#: the most lines read to place a row (a row further down is named by its 1-based row number)
SCAN_LIMIT = 5_000_000


def _jsonl_lines(path: Path, wanted: set[int]) -> dict[int, int]:
    """Row index → line number; blank lines are not rows (the JSON reader skips them)."""
    out: dict[int, int] = {}
    row = 0
    with open(path, "rb") as f:
        for line_no, line in enumerate(f, 1):
            if line_no > SCAN_LIMIT:
                break
            if not line.strip():
                continue
            if row in wanted:
                out[row] = line_no
                if len(out) == len(wanted):
                    break
            row += 1
    return out


def _csv_lines(path: Path, wanted: set[int], delimiter: str) -> dict[int, int]:
    """Row index → the line a CSV record starts on (quoted fields may span lines; line 1 is the header)."""
    out: dict[int, int] = {}
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        reader = csv.reader(f, delimiter=delimiter)
        try:
            next(reader)
        except StopIteration:
            return out
        start = reader.line_num + 1
        for row, _ in enumerate(reader):
            if reader.line_num > SCAN_LIMIT:
                break
            if row in wanted:
                out[row] = start
                if len(out) == len(wanted):
                    break
            start = reader.line_num + 1
    return out


def locate_rows(source: str | os.PathLike | None, rows: Iterable[int]) -> dict[int, str]:
    """Row index (0-based, as the dataset has it) → where it is, e.g. ``{0: "line 2"}``."""
    rows = sorted(set(int(r) for r in rows))
    names = {r: f"row {r + 1}" for r in rows}
    if not source or not rows:
        return names
    path = Path(os.path.expanduser(str(source)))
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl" or (suffix == ".json" and _looks_like_jsonl(path)):
            names.update({r: f"line {n}" for r, n in _jsonl_lines(path, set(rows)).items()})
        elif suffix in (".csv", ".tsv"):
            found = _csv_lines(path, set(rows), "\t" if suffix == ".tsv" else ",")
            names.update({r: f"line {n}" for r, n in found.items()})
        elif suffix == ".json":
            names.update({r: f"record {r + 1}" for r in rows})
    except OSError:
        pass
    return names


def _looks_like_jsonl(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(1 << 16).lstrip()
    return head.startswith(b"{") and b"\n{" in head


def describe_rows(source: str | os.PathLike | None, rows: Iterable[int], limit: int = 5) -> str:
    """``"line 2, line 9 and 3 more"`` for the first ``limit`` rows."""
    rows = list(rows)
    where = locate_rows(source, rows[:limit])
    text = ", ".join(where[r] for r in sorted(where))
    if len(rows) > limit:
        text += f" and {len(rows) - limit} more"
    return text
