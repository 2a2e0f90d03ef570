"""Reading a text file a user gave (an agent YAML, a config, a reward ``.py``): a size limit, binary
files and encodings told apart, and every problem said with the file's name and, where there is
one, the line and column.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import BinaryIO, Iterator

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


#: the kernel's and the devices' trees: no file a user gives is read there (``/proc/kmsg`` blocks its reader for
#: ever, ``/proc/<pid>/environ`` is a process's secrets, ``/dev/zero`` never ends)
SYSTEM_TREES = ("/proc", "/sys", "/dev")
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotPlainFile(OSError):
    """A user's path that is no plain file to read: a FIFO, a device, a folder, a file of /proc, /sys or /dev.
    ``str()`` says which, to follow the file's name ("'x' is a named pipe (FIFO), not a file: not read")."""

    def __str__(self) -> str:
        return self.args[0] if self.args else "is not a plain file: not read"


def _system_tree(path: str) -> str | None:
    return next((t for t in SYSTEM_TREES if path == t or path.startswith(t + "/")), None)


def _refuse_system(path: str) -> None:
    tree = _system_tree(path)
    if tree:
        raise NotPlainFile(f"is in {tree}, which holds no file to read as a config: not read")


@contextlib.contextmanager
def open_plain_file(path: str | os.PathLike) -> Iterator[tuple[BinaryIO, os.stat_result]]:
    """A user's file open for reading, and its ``fstat``: only a plain file, never waited on. The path is resolved
    (its links followed) and refused under /proc, /sys or /dev; the resolved path is opened with ``O_NONBLOCK`` (a
    FIFO or a device there does not hang the open), ``O_NOFOLLOW`` (a link swapped in since is refused, not
    followed) and ``O_CLOEXEC``; then what was opened is checked: a plain file (``fstat``), not in those trees
    (``/proc/self/fd``). :class:`NotPlainFile` says why not; other ``OSError`` as the open raised it. The studio
    reads paths a user wrote (an agent's ``mcp_config``), as root: ``/proc/kmsg`` or a FIFO held a thread for ever."""
    real = os.path.realpath(os.path.expanduser(os.fspath(path)))
    _refuse_system(real)
    try:
        fd = os.open(real, _OPEN_FLAGS)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotPlainFile("became a link while it was opened: not read") from e
        raise
    try:
        st = os.fstat(fd)
        kind = next((what for test, what in _KINDS if test(st.st_mode)), None)
        if kind or not stat.S_ISREG(st.st_mode):
            raise NotPlainFile(f"is {kind or 'no plain file'}, not a file: not read")
        with contextlib.suppress(OSError):  # what was opened, wherever the path led (no /proc here: not checked)
            _refuse_system(os.readlink(f"/proc/self/fd/{fd}"))
        os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        yield f, st


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

    def too_large(size: int) -> CheckError:
        return CheckError(
            module,
            f"{what} is {size_text(size)}; at most {size_text(max_bytes)} is read",
            hint or "is it the right file? a config this large is usually data by mistake",
        )

    try:
        with open_plain_file(path) as (f, st):
            if st.st_size > max_bytes:
                raise too_large(st.st_size)
            data = f.read(max_bytes + 1)
    except NotPlainFile as e:
        raise CheckError(module, f"{what} {e}", hint or "give the path of the file itself")
    except OSError as e:
        raise CheckError(module, f"{what} cannot be read: {e.strerror or e}")
    if len(data) > max_bytes:  # it grew since its fstat
        raise too_large(len(data))
    kind = binary_kind(data[:8192])
    if kind:
        raise CheckError(module, f"{what} is {kind}, not text", "give the text file itself")
    return decode_utf8(data, module, what)
