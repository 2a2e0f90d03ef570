"""A run's files read on behalf of a page, without following links: user code (a reward, a tool) can find the runs
folder and plant ``train.log -> /some/secret`` or ``checkpoints/checkpoint-1/leak.txt -> /some/secret``; the studio
must not serve the target (docs/SECURITY.md).

* :func:`open_no_link` — open a run's file for reading, refusing a link in its place (``O_NOFOLLOW``);
  :func:`read_no_link` — a small one read whole, capped;
* :func:`open_beneath` — a file under a folder opened one name at a time, no link anywhere on the way: what is
  checked is what is read (a check of the path, then an open by path, is a race user code wins by swapping a file
  for a link in between: the fourth probe read the studio's own memory so);
* :func:`plain_files_beneath` — the same for every plain file of a folder, and :func:`zip_plain_files` (a checkpoint's
  zip);
* :func:`replacing` — a file written where user code can write, never through a link planted in its place (every
  run file the studio or a run writes: ``engines.runs.rundir.atomic_write_text``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import threading
import time
import zipfile
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Callable, Iterator

#: what the log view shows for a log that is a link (a run's files are read without following links)
LINK_NOTICE = "(this file is a link: the studio reads no file of a run through a link)"


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: O_NONBLOCK: a FIFO planted in a file's place does not hang the open (it is then refused as no plain file)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class LinkRefused(PermissionError):
    """A link (or ``..``) on the way to a file, or no plain file of one name at its end."""


def open_no_link(path: str | os.PathLike, text: bool = False):
    """Open a run's file for reading without following a link in its place or in its folder's (``O_NOFOLLOW`` on
    both, the file opened from the folder's descriptor: ``OSError``), and only a plain file (a pipe planted there
    would hang the reader for ever: opened without waiting, then refused). Code that can write into the runs folder
    (a reward, a tool) could put ``train.log -> /some/secret`` there, or swap the run's folder for a link, and the
    page would serve the secret. The run folder itself is no link either when it is listed
    (engines.runs.lifecycle.list_run_dirs, the studio's run_path)."""
    folder, name = os.path.split(os.fspath(path))
    dir_fd = os.open(folder or ".", _DIR_FLAGS)
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LinkRefused(f"{name} is not a plain file: not read")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "r", encoding="utf-8") if text else os.fdopen(fd, "rb")


class FileTooLarge(OSError):
    """A run's file over the size a reader takes (user code can write any file of a run)."""


def read_no_link(path: str | os.PathLike, max_bytes: int) -> bytes:
    """A small run file (run.yaml, label.json, STOP, a lock's pid) read whole by :func:`open_no_link`: no link, no
    pipe (``LinkRefused``), at most ``max_bytes`` (:class:`FileTooLarge` past them), never waited on."""
    with open_no_link(path) as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileTooLarge(f"{os.path.basename(os.fspath(path))} is over {max_bytes} bytes: not read")
    return data


def _plain_file(fd: int, what: str) -> int:
    """``fd`` when it is a plain file with one name (a hard link of a file from elsewhere has two), else closed and
    refused."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise LinkRefused(f"{what} is not a plain file of its own (a hard link, a device or a pipe): not read")
    return fd


def open_beneath(root: str | os.PathLike, relative: str | os.PathLike) -> int:
    """A read-only descriptor of the plain file ``relative`` under the folder ``root``, opened from ``/`` one name at a
    time with ``O_NOFOLLOW`` — every folder of ``root`` and of ``relative`` included (``root`` is a path resolved
    once, by whoever trusts it) — then checked on the descriptor (``fstat``): a plain file with one name. Serve or
    read that descriptor, never the path again. :class:`LinkRefused` for a link, a ``..`` or no plain file;
    ``FileNotFoundError`` for nothing there."""
    rel = PurePosixPath(os.fspath(relative))
    if rel.is_absolute() or not rel.parts or any(p in (".", "..") for p in rel.parts):
        raise LinkRefused(f"{rel} is not a path beneath {root}")
    names = [*PurePosixPath(os.path.abspath(root)).parts[1:], *rel.parts]
    fd = os.open("/", _DIR_FLAGS)
    try:
        for name in names[:-1]:
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        found = os.open(names[-1], _FILE_FLAGS, dir_fd=fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise LinkRefused(f"{rel} lies behind a link, or is one: not read") from e
        raise
    finally:
        os.close(fd)
    return _plain_file(found, str(rel))


def plain_files_beneath(folder: str | os.PathLike) -> Iterator[tuple[str, int]]:
    """(path relative to ``folder``, read-only descriptor) of each plain file of one name under ``folder``, walked by
    descriptors (:func:`os.fwalk`: a linked folder is never entered, a folder swapped for a link while it is walked is
    not either) and each file opened from its folder's descriptor without following a link. The caller closes each
    descriptor. Links, pipes, devices and hard links are left out."""
    for top, _, files, dir_fd in os.fwalk(folder, follow_symlinks=False):
        for name in sorted(files):
            try:
                fd = _plain_file(os.open(name, _FILE_FLAGS, dir_fd=dir_fd), name)
            except OSError:  # a link (ELOOP), a file gone, or refused
                continue
            yield os.path.relpath(os.path.join(top, name), folder), fd


def folder_beneath(root: str | os.PathLike, *names: str) -> int:
    """A descriptor of the folder ``root/names…``, each made where missing, none of them a link: each opened from the
    one before's descriptor, without following a link (user code can plant ``<runs>/.uploads/<digest> -> /root``; the
    studio, as root, wrote through it). :class:`LinkRefused` for a link or anything but a folder on the way. The
    caller closes it."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in names:
            try:
                os.mkdir(name, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as e:  # ELOOP: a link; ENOTDIR: a file planted there
                raise LinkRefused(f"{name} under {root} is a link or no folder: refused") from e
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def plain_file_at(dir_fd: int, name: str) -> bool:
    """Whether ``name`` in the folder ``dir_fd`` is a plain file of one name (not a link, a folder, a pipe or a hard
    link to a file elsewhere)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


def write_beneath(dir_fd: int, name: str, write: Callable[[BinaryIO], None]) -> None:
    """``name`` in the folder ``dir_fd`` (:func:`folder_beneath`) written whole by ``write``: under a fresh name made
    with ``O_EXCL`` there, then renamed over ``name`` (a link planted at ``name`` is replaced, never written
    through)."""
    tmp = f".{name}.{os.getpid()}.{threading.get_ident()}.{secrets.token_hex(4)}.part"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


@contextlib.contextmanager
def replacing(path: str | os.PathLike, durable: bool = False) -> Iterator[BinaryIO]:
    """A new file, open for writing, that replaces ``path`` when the block ends (readers see the old file or the new
    one, never a mix; a block that raises leaves neither it nor a temporary file). It is made beside ``path`` under a
    name nobody can know beforehand, with ``O_EXCL`` — never an existing file, nor a link planted at that name (user
    code can write where run files and ``.exports`` are: a link at a fixed temporary name had the studio write through
    it, as root) — and renamed over ``path``, which replaces a link there rather than writing through it.
    ``durable`` syncs it to disk first (survives a power cut)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


#: the earliest time a zip entry can carry
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


#: what a zip leaves free on its disk: this much, or this share of the disk if that is more
ZIP_RESERVE_BYTES, ZIP_RESERVE_SHARE = 1 << 30, 0.05


class ZipTooLarge(ValueError):
    """The files to zip would not fit on the disk beside what must stay free there."""


def zip_room(out: str | os.PathLike) -> int | None:
    """How many bytes of files a zip written at ``out`` may read: the disk's free space less what must stay free
    (:data:`ZIP_RESERVE_BYTES`, or :data:`ZIP_RESERVE_SHARE` of the disk); None where the disk cannot be read."""
    from ..fit.disk_full import disk_room

    room = disk_room(out)
    if room is None:
        return None
    free, total = room
    return max(0, free - max(ZIP_RESERVE_BYTES, int(total * ZIP_RESERVE_SHARE)))


def zip_plain_files(
    folder: str | os.PathLike, out: str | os.PathLike, prefix: str, max_bytes: int | None = None
) -> None:
    """``out``, a zip of :func:`plain_files_beneath` ``folder`` (each under ``prefix/``), each written from the
    descriptor that was checked, the zip itself :func:`replacing` ``out``. It reads at most ``max_bytes`` (default:
    :func:`zip_room`): user code can write into a checkpoint (a sparse file of a terabyte, a file it keeps
    appending to), and a zip of it filled the disk, or never ended; past the limit :class:`ZipTooLarge`, nothing
    written."""
    limit = zip_room(out) if max_bytes is None else max_bytes
    read = 0

    def too_large(size: int) -> ZipTooLarge:
        return ZipTooLarge(
            f"the files of {prefix} come to more than {_gb(size)} GB, more than the "
            f"{_gb(limit)} GB the disk can take beside what must stay free there — free some space, or copy the "
            f"folder itself: {folder}"
        )

    with replacing(out) as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as z:
        for rel, file_fd in plain_files_beneath(folder):
            with os.fdopen(file_fd, "rb") as f:
                st = os.fstat(file_fd)
                if limit is not None and read + st.st_size > limit:
                    raise too_large(read + st.st_size)
                info = zipfile.ZipInfo(f"{prefix}/{rel}", max(time.localtime(st.st_mtime)[:6], ZIP_EPOCH))
                info.external_attr, info.compress_type = (st.st_mode & 0xFFFF) << 16, zipfile.ZIP_DEFLATED
                with z.open(info, "w", force_zip64=True) as dst:
                    while chunk := f.read(1 << 20):
                        read += len(chunk)
                        if limit is not None and read > limit:  # it grew while read
                            raise too_large(read)
                        dst.write(chunk)


def _gb(n: int | None) -> str:
    return f"{(n or 0) / 2**30:.1f}"
