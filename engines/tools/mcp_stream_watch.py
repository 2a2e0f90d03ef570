"""What an MCP server sends, watched beside the SDK: a stdio server's stdout lines that are not JSON-RPC (the SDK
drops them, then waits out its time limit — the first is kept to say what the server wrote instead), the end of
its stdout (the server died: a request sent after it is never answered), and the content types an HTTP MCP server
never answers with (a web page at the address).
"""

from __future__ import annotations

from typing import Any

#: what an HTTP MCP server never answers with (a web page or a file at the address)
NOT_MCP_TYPES = ("text/html", "text/plain", "application/xml", "text/xml")
#: the most characters of a server's stray output a message quotes
NOT_MCP_CHARS = 120


def _stray_line(exc: BaseException) -> str:
    """The stdout line the SDK could not read as JSON-RPC, from its validation error."""
    try:
        text = str(exc.errors()[0].get("input"))  # pydantic's ValidationError keeps the line it was given
    except (AttributeError, IndexError, TypeError):
        text = str(exc)
    text = " ".join(text.split())
    return repr(text if len(text) <= NOT_MCP_CHARS else text[: NOT_MCP_CHARS - 1] + "…")


class Watched:
    """A stdio server's read stream, watched: a stdout line that is not JSON-RPC reaches the session as an
    exception, which it drops and then waits out its time limit; the first is kept (``seen["not_mcp"]``) to say
    what the server wrote instead. The stream's end calls ``seen["on_stream_end"]`` (the pool then sends no call
    on that session)."""

    def __init__(self, stream, seen: dict[str, Any] | None):
        self._stream, self._seen = stream, seen

    def _note(self, item):
        if isinstance(item, Exception) and self._seen is not None:
            self._seen.setdefault("not_mcp", f"its stdout began {_stray_line(item)}")
        return item

    async def __aenter__(self):
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self._stream.__aexit__(*exc)

    def __aiter__(self):
        return self

    def _ended(self) -> None:
        if self._seen is not None and callable(self._seen.get("on_stream_end")):
            self._seen["on_stream_end"]()

    async def __anext__(self):
        try:
            return self._note(await self._stream.__anext__())
        except Exception:  # StopAsyncIteration (its stdout ended) or the stream closed: the server is gone
            self._ended()
            raise

    async def receive(self):
        try:
            return self._note(await self._stream.receive())
        except Exception:
            self._ended()
            raise

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
