"""Two names swapped in one step, as user code racing the studio would (``renameat2(RENAME_EXCHANGE)``, Linux): a
plain file and a link change places, so a check of a path and a later open by the same path can see different
things. For the tests that show the studio opens once and serves what it checked."""

from __future__ import annotations

import ctypes
import os

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_libc = ctypes.CDLL(None, use_errno=True)


def exchange(a: str | os.PathLike, b: str | os.PathLike) -> None:
    """Swap the entries ``a`` and ``b`` of one folder atomically (either may be a link)."""
    if _libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(a))
