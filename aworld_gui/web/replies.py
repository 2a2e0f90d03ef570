"""A whole HTTP answer sent from an ASGI middleware (the refusals of the studio's gates: 401, 403, 413, 429, 404)."""

from __future__ import annotations

from typing import Callable, Iterable

TEXT = b"text/plain; charset=utf-8"
JSON = b"application/json"


async def reply(
    send: Callable, status: int, body: bytes, content_type: bytes = TEXT, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """``body`` as the whole answer, with its type and length (and any other ``headers``)."""
    start = [(b"content-type", content_type), *headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})
