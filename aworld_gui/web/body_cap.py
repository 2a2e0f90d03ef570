"""No request body is bigger than what it carries (the seventh probe).

Gradio caps uploads as they stream in (``--max-upload-mb``), but nothing else: FastAPI reads a JSON body whole and
parses it (a 200 MB ``/gradio_api/call/check`` took the studio from 0.2 to 1.35 GB; a few at once and the kernel
kills what it ranks first, a training run), and Starlette writes a form's file parts to the temporary folder with no
limit — ``POST /login``, open to every client, with a 400 MB file part had the studio hold 400 MB of ``/tmp`` for as
long as the client kept sending. So a body is at most :data:`LOGIN_CAP` on the login route and :data:`CAP` on every
other route but the upload (which keeps Gradio's own cap): a larger declared length is ``413`` before anything is
read, a larger body sent without one ends in ``413`` at its first chunk over the cap.
"""

from __future__ import annotations

from typing import Any, Callable
from .replies import reply

#: the API's largest field is its config text, 1 MiB (client_api.TEXT_CAPS); a page's whole Setup is less
CAP = 16 << 20
#: a user name and a password
LOGIN_CAP = 64 << 10
TOO_BIG = b"The request's body is larger than the studio takes (files go through the upload)."


class _TooBig(Exception):
    pass


def cap_for(path: str) -> int | None:
    """The cap of a route's body, None for the upload (Gradio's cap applies as it streams)."""
    path = path.rstrip("/")
    if path.endswith("/upload"):
        return None
    if path.endswith("/login"):
        return LOGIN_CAP
    return CAP


async def _refuse(send: Callable) -> None:
    await reply(send, 413, TOO_BIG)


class BodyCap:
    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        cap = cap_for(scope.get("path", "")) if scope.get("type") == "http" else None
        if cap is None:
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > cap):
            await _refuse(send)
            return
        seen, started = 0, False

        async def counted() -> dict:
            nonlocal seen
            message = await receive()
            if message.get("type") == "http.request":
                seen += len(message.get("body", b""))
                if seen > cap:
                    raise _TooBig
            return message

        async def noted(message: dict) -> None:
            nonlocal started
            started = started or message.get("type") == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, noted)
        except _TooBig:
            if not started:
                await _refuse(send)
