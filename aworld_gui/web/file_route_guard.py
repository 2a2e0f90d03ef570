"""Gradio's file route serves nothing through a link (issue 41).

The studio lets Gradio serve two folders: its upload cache and ``<runs>/.exports`` (checkpoint zips, run specs,
exported models: ``launch(allowed_paths=...)``). Gradio judges a requested path by where it resolves *at request
time*, and user code (a reward, a tool) can write into the runs folder: a reward that replaced ``.exports`` with a
link to ``/`` made ``GET /gradio_api/file=/etc/shadow`` answer with the file. This ASGI middleware, in front of
Gradio, refuses (403) a file request under one of those folders when the path, or any folder on it from that
folder down, is a link — the folder itself included: each folder's own path is resolved once, when the studio
starts, and a path served must resolve to itself. Requests for other paths are left to Gradio's own rules.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

#: the routes that serve a file by its path (Gradio 6 serves both)
FILE_ROUTES = ("/gradio_api/file=", "/file=")
REFUSED = b"this file is a link, or lies behind one: it is not served (docs/SECURITY.md)"


def served_folders(runs_dir: str | os.PathLike) -> list[str]:
    """The folders Gradio serves for the studio, as their paths are now (the runs folder and Gradio's upload cache
    resolved; ``.exports`` is made later, and must stay a folder of the runs folder)."""
    from gradio.utils import get_upload_folder

    return [os.path.join(os.path.realpath(runs_dir), ".exports"), os.path.realpath(get_upload_folder())]


def through_a_link(path: str, folders: Iterable[str]) -> bool:
    """Whether ``path`` lies in one of ``folders`` (by its name) but resolves elsewhere: it, or a folder between it
    and that folder, or that folder itself, is a link."""
    lexical = os.path.normpath(os.path.abspath(path))
    for folder in folders:
        if lexical == folder or lexical.startswith(folder + os.sep):
            return os.path.realpath(lexical) != lexical
    return False


class FileRouteGuard:
    """Refuses Gradio's file route for a path :func:`through_a_link` (403, said in words)."""

    def __init__(self, app, runs_dir: str | os.PathLike) -> None:
        self.app = app
        self.folders = served_folders(Path(runs_dir))

    async def __call__(self, scope, receive, send) -> None:
        if scope.get("type") == "http" and scope.get("method") in ("GET", "HEAD"):
            path = scope.get("path", "")
            for route in FILE_ROUTES:
                if path.startswith(route) and through_a_link(path[len(route) :], self.folders):
                    await send(
                        {
                            "type": "http.response.start",
                            "status": 403,
                            "headers": [(b"content-type", b"text/plain; charset=utf-8")],
                        }
                    )
                    await send({"type": "http.response.body", "body": REFUSED})
                    return
        await self.app(scope, receive, send)
