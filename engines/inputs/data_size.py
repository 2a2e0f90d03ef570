"""How big a dataset is, known before it is read: a file too big to check is refused at once.

A 354 KB parquet can hold 20 million rows (one short string, dictionary-encoded and compressed);
reading and inspecting it ran past the check's time limit, which then blamed "a tool or reward that
loops". So before a dataset file is read:

* a parquet file's rows and uncompressed size come from its footer (``ParquetFile.metadata``:
  milliseconds, whatever the rows);
* a text file (csv, tsv, jsonl, json) is measured by its size, and a line-per-row format (csv,
  tsv, jsonl) by its lines, counted up to the limit (a fast byte scan, no parsing);
* any table once loaded (a ``save_to_disk`` folder is memory-mapped, a ``datasets.Dataset`` given to
  the API is in hand) by its rows.

The limits are :data:`DEFAULT_MAX_ROWS` rows and :data:`DEFAULT_MAX_BYTES` bytes, which a check
reads and inspects well within its time limit; ``$AWORLD_DATASET_MAX_ROWS`` and
``$AWORLD_DATASET_MAX_BYTES`` (set where the studio, the CLI or the Python API runs) change them.
Compressed files (gzip, zip) are not accepted at all: :mod:`engines.files.user_files` names them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..results.check_result import CheckError

#: rows a dataset may have (a GRPO/SFT set rarely has more than a million; a million short rows load and
#: inspect in about 2 s on a laptop core, far inside the check's 60 s)
DEFAULT_MAX_ROWS = 2_000_000
#: bytes a dataset may take uncompressed (a text file's size, a parquet's uncompressed size)
DEFAULT_MAX_BYTES = 4 << 30
ROWS_ENV = "AWORLD_DATASET_MAX_ROWS"
BYTES_ENV = "AWORLD_DATASET_MAX_BYTES"
#: formats with one row per line (a csv row with a quoted line break spans more: lines bound rows)
LINE_FORMATS = (".csv", ".tsv", ".jsonl")
_CHUNK = 16 << 20


def _limit(env: str, default: int) -> int:
    try:
        value = int(float(os.environ.get(env, "") or default))
    except ValueError:
        return default
    return value if value > 0 else default


def max_rows() -> int:
    """The most rows a dataset may have: ``$AWORLD_DATASET_MAX_ROWS``, else :data:`DEFAULT_MAX_ROWS`."""
    return _limit(ROWS_ENV, DEFAULT_MAX_ROWS)


def max_bytes() -> int:
    """The most bytes a dataset may take: ``$AWORLD_DATASET_MAX_BYTES``, else :data:`DEFAULT_MAX_BYTES`."""
    return _limit(BYTES_ENV, DEFAULT_MAX_BYTES)


def human_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GB"  # pragma: no cover


def _too_big(name: str, what: str, limit: str, env: str) -> CheckError:
    return CheckError(
        "dataset",
        f"{name} is too big to check and train on: {what}, over the limit of {limit}",
        f"give a subset of the rows, or raise the limit with ${env} where the studio, the CLI or the script runs",
    )


def check_parquet(path: Path, role: str) -> None:
    """Refuse a parquet file whose footer says it holds more rows or bytes than the limits."""
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(str(path)).metadata
    except Exception:  # noqa: BLE001 - a broken footer: the reader reports it, naming the file
        return
    rows = meta.num_rows
    unpacked = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    size = (
        f"{rows:,} rows in a {human_bytes(path.stat().st_size)} file "
        f"({human_bytes(unpacked)} uncompressed, {meta.num_row_groups} row groups)"
    )
    name = f"{role} file '{path.name}'"
    if rows > max_rows():
        raise _too_big(name, size, f"{max_rows():,} rows", ROWS_ENV)
    if unpacked > max_bytes():
        raise _too_big(name, size, human_bytes(max_bytes()), BYTES_ENV)


def check_text(path: Path, role: str, suffix: str) -> None:
    """Refuse a text dataset file bigger than the byte limit, or (one row a line) with more lines than rows
    allowed; lines are counted up to the limit only."""
    name = f"{role} file '{path.name}'"
    size = path.stat().st_size
    if size > max_bytes():
        raise _too_big(name, f"{human_bytes(size)}", human_bytes(max_bytes()), BYTES_ENV)
    if suffix not in LINE_FORMATS:
        return
    limit = max_rows() + (1 if suffix in (".csv", ".tsv") else 0)  # (a csv's header line is no row)
    lines = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            lines += chunk.count(b"\n")
            if lines > limit:
                raise _too_big(
                    name, f"more than {limit:,} lines in {human_bytes(size)}", f"{max_rows():,} rows", ROWS_ENV
                )


def check_rows(ds: Any, role: str, source: Any) -> None:
    """Refuse a loaded table with more rows than the limit (a folder, a Dataset, a .json list)."""
    rows = len(ds)
    if rows <= max_rows():
        return
    if isinstance(source, (str, os.PathLike)):
        name = f"{role} dataset '{Path(str(source)).name}'"
    else:
        name = f"{role} dataset ({type(source).__name__})"
    raise _too_big(name, f"{rows:,} rows", f"{max_rows():,} rows", ROWS_ENV)
