"""Gradio's file route, for the studio's two served folders, serves what it checked (issue 41).

The studio lets Gradio serve two folders: its upload cache and ``<runs>/.exports`` (checkpoint zips, run specs,
exported models: ``launch(allowed_paths=...)``). User code (a reward, a tool) can write into the runs folder, and
Gradio judges a requested path by where it resolves, then opens it by path again — twice a race: a reward that
swapped ``.exports/x.txt`` for a link between the two (``renameat2(RENAME_EXCHANGE)`` in a loop) had the studio —
root, with every capability — read ``/proc/<pid>/environ`` of other processes and its own memory
(``/proc/self/mem`` through a Range request) for it: the fourth probe read the uninvited keys and the login so.

This ASGI middleware, in front of Gradio, serves every file request under those folders itself: it opens the file
once, from ``/`` one name at a time without following a link (:func:`engines.runs.no_links.open_beneath`; each
folder's own path is resolved once, when the studio starts), checks the descriptor (a plain file of one name) and
sends that descriptor's bytes — what was checked is what is read. A link anywhere on the way is refused (403, said
in words); nothing there is 404. Range requests are answered whole (a range served from a size read apart from
the bytes was the way to the studio's memory). Requests for other paths are left to Gradio's own rules.
"""

from __future__ import annotations

import mimetypes
import os
from pathlib import Path
from typing import Iterator
from urllib.parse import quote

from engines.runs.no_links import LinkRefused, open_beneath
from .replies import reply

#: the routes that serve a file by its path (Gradio 6 serves both)
FILE_ROUTES = ("/gradio_api/file=", "/file=")
REFUSED = b"The studio serves no file through a link, and only plain files (docs/SECURITY.md)."
CHUNK = 1 << 20


def served_folders(runs_dir: str | os.PathLike) -> list[str]:
    """The folders Gradio serves for the studio, as their paths are now (the runs folder and Gradio's upload cache
    resolved; ``.exports`` is made later, and must stay a folder of the runs folder)."""
    from gradio.utils import get_upload_folder

    return [os.path.join(os.path.realpath(runs_dir), ".exports"), os.path.realpath(get_upload_folder())]


def served_folder(path: str, folders: list[str]) -> tuple[str, str] | None:
    """(folder, path relative to it) when ``path`` names something in one of ``folders``, by its name (``..``
    resolved lexically, links not), else None."""
    lexical = os.path.normpath(os.path.abspath(path))
    for folder in folders:
        if lexical == folder or lexical.startswith(folder + os.sep):
            return folder, os.path.relpath(lexical, folder)
    return None


def _headers(name: str, size: int, exported: bool) -> list[tuple[bytes, bytes]]:
    """Gradio's own choice (route_utils.file_fetch): a file the studio exported is shown inline as its type; an upload
    only when its type cannot carry script, else downloaded as bytes."""
    from gradio.route_utils import XSS_SAFE_MIMETYPES

    mime, _ = mimetypes.guess_type(name)
    if exported or mime in XSS_SAFE_MIMETYPES:
        media, disposition = mime or "application/octet-stream", "inline"
    else:
        media, disposition = "application/octet-stream", "attachment"
    quoted = quote(name)
    disposition += f"; filename*=utf-8''{quoted}" if quoted != name else f'; filename="{name}"'
    return [
        (b"content-type", media.encode("latin-1")),
        (b"content-disposition", disposition.encode("latin-1")),
        (b"content-length", str(size).encode()),
        (b"cache-control", b"no-store"),
    ]


def _chunks(fd: int, size: int) -> Iterator[bytes]:
    """The descriptor's first ``size`` bytes (what its ``fstat`` said when it was opened), then it is closed."""
    try:
        left = size
        while left > 0:
            data = os.read(fd, min(CHUNK, left))
            if not data:
                return
            left -= len(data)
            yield data
    finally:
        os.close(fd)


class FileRouteGuard:
    """Serves Gradio's file route for the studio's served folders from one descriptor opened without links."""

    def __init__(self, app, runs_dir: str | os.PathLike) -> None:
        self.app = app
        self.folders = served_folders(Path(runs_dir))

    async def __call__(self, scope, receive, send) -> None:
        if scope.get("type") == "http" and scope.get("method") in ("GET", "HEAD"):
            path = scope.get("path", "")
            for route in FILE_ROUTES:
                found = served_folder(path[len(route) :], self.folders) if path.startswith(route) else None
                if found is not None:
                    await self._serve(*found, head=scope["method"] == "HEAD", send=send)
                    return
        await self.app(scope, receive, send)

    async def _serve(self, folder: str, relative: str, head: bool, send) -> None:
        from starlette.concurrency import iterate_in_threadpool

        try:
            fd = open_beneath(folder, relative)
        except LinkRefused as e:
            await _plain(send, 403, f"{e}. {REFUSED.decode()}".encode())
            return
        except (FileNotFoundError, NotADirectoryError):
            await _plain(send, 404, b"no such file")
            return
        except OSError:  # a folder itself (EISDIR), or unreadable
            await _plain(send, 403, b"not a file that is served")
            return
        size = os.fstat(fd).st_size
        headers = _headers(os.path.basename(relative), size, exported=folder == self.folders[0])
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if head:
            os.close(fd)
            await send({"type": "http.response.body", "body": b""})
            return
        async for chunk in iterate_in_threadpool(_chunks(fd, size)):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


async def _plain(send, status: int, body: bytes) -> None:
    await reply(send, status, body)
