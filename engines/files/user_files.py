"""Reading a text file a user gave (an agent YAML, a config, a reward ``.py``): a size limit, binary
files and encodings told apart, and every problem said with the file's name and, where there is
one, the line and column.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..results.check_result import CheckError

MB = 1 << 20
#: what a file starts with → what it is (for "this is a PNG image, not a YAML file")
MAGIC = (
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive (an .xlsx/.docx file is one)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\x7fELF", "an executable (ELF)"),
    (b"PAR1", "a parquet file"),
    (b"SQLite format 3", "an SQLite database"),
    (b"\xd0\xcf\x11\xe0", "an old Office document (.xls/.doc)"),
)


def size_text(n: int) -> str:
    return f"{n / MB:.1f} MB" if n >= MB else f"{n / 1024:.0f} KB" if n >= 1024 else f"{n} bytes"


def binary_kind(head: bytes) -> str | None:
    """What a binary file is (from its first bytes), or None when it may be text."""
    for magic, what in MAGIC:
        if head.startswith(magic):
            return what
    sample = head[:8192]
    if b"\x00" in sample:
        return "a binary file (it holds NUL bytes)"
    return None


def utf8_error_at(data: bytes, start: int) -> tuple[int, int]:
    """(line, column), both 1-based, of byte offset ``start``."""
    line = data.count(b"\n", 0, start) + 1
    col = start - (data.rfind(b"\n", 0, start) + 1) + 1
    return line, col


def decode_utf8(data: bytes, module: str, what: str) -> str:
    """``data`` as text, or a CheckError naming the first byte that is not UTF-8 (line, column)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line, col = utf8_error_at(data, e.start)
        byte = data[e.start : e.start + 1].hex()
        raise CheckError(
            module,
            f"{what} is not UTF-8 text: byte 0x{byte} at line {line}, column {col} cannot be read",
            "save the file as UTF-8 (e.g. your editor's 'Save with encoding' → UTF-8)",
        )


def find_bad_utf8(path: str | os.PathLike, chunk: int = 4 * MB) -> tuple[int, int, str] | None:
    """(line, column, byte hex) of the first byte of a file that is not UTF-8, read in chunks; None if all is."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    line, col_base, offset = 1, 0, 0
    with open(path, "rb") as f:
        while True:
            data = f.read(chunk)
            final = not data
            try:
                decoder.decode(data, final)
            except UnicodeDecodeError as e:
                # e.start is relative to the decoder's buffer (pending bytes + data)
                pending = len(e.object) - len(data)
                pos = e.start - pending
                if pos < 0:
                    pos = 0
                lines = data.count(b"\n", 0, pos)
                if lines:
                    col = pos - data.rfind(b"\n", 0, pos)
                else:
                    col = col_base + pos + 1
                return line + lines, col, e.object[e.start : e.start + 1].hex()
            if final:
                return None
            nl = data.count(b"\n")
            if nl:
                line += nl
                col_base = len(data) - data.rfind(b"\n") - 1
            else:
                col_base += len(data)
            offset += len(data)


def read_user_text(path: str | os.PathLike, module: str, what: str, max_bytes: int, hint: str = "") -> str:
    """The text of a user's file, or a CheckError for one that is too large, binary or not UTF-8.
    ``what`` names it in messages, e.g. "agent file 'agent.yaml'"."""
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError as e:
        raise CheckError(module, f"{what} cannot be read: {e.strerror or e}")
    if size > max_bytes:
        raise CheckError(
            module,
            f"{what} is {size_text(size)}; at most {size_text(max_bytes)} is read",
            hint or "is it the right file? a config this large is usually data by mistake",
        )
    try:
        data = p.read_bytes()
    except OSError as e:
        raise CheckError(module, f"{what} cannot be read: {e.strerror or e}")
    kind = binary_kind(data[:8192])
    if kind:
        raise CheckError(module, f"{what} is {kind}, not text", "give the text file itself")
    return decode_utf8(data, module, what)
