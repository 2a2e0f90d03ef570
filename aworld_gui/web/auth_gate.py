"""With a login, a client that has not logged in learns nothing but the login form.

Gradio answers some routes without a login (``/gradio_api/heartbeat``, ``/cancel``, ``/app_id``,
``/user``, ``/token``, ``/gradio_api/runs``, ...) and embeds the API's description
(``window.gradio_api_info``: every endpoint and parameter) in the login page. This ASGI middleware, in
front of Gradio when it has a login (``app.auth``), answers ``401`` to every request without a valid
session cookie except the login form itself (:data:`OPEN_PATHS`, the page's static assets), and takes
the API description out of the page it serves such a client.
"""

from __future__ import annotations

import re
from http.cookies import SimpleCookie
from typing import Any, Callable
from .replies import JSON, reply

# startup-events: Gradio's launch calls it (without a login) to run the app's start-up once; it says "true"
OPEN_PATHS = {
    "/",
    "/login",
    "/login/",
    "/login_check",
    "/login_check/",
    "/logout",
    "/manifest.json",
    "/favicon.ico",
    "/theme.css",
    "/gradio_api/theme.css",
    "/gradio_api/startup-events",
}
# /aworld/live/<ticket>: the Monitor's stream, opened with a ticket only a logged-in call gets (live_stream.py)
OPEN_PREFIXES = ("/assets/", "/static/", "/gradio_api/static/", "/svelte/", "/gradio_api/assets/", "/aworld/live/")
_API_INFO = re.compile(rb"gradio_api_info = [^\n]*;")


def _user(scope: dict) -> Any:
    app = scope.get("app")
    headers = dict(scope.get("headers") or [])
    cookie = SimpleCookie()
    try:
        cookie.load(headers.get(b"cookie", b"").decode("latin-1"))
    except Exception:  # noqa: BLE001 - a malformed cookie header is no login
        return None
    cid = getattr(app, "cookie_id", "")
    for name in (f"access-token-{cid}", f"access-token-unsecure-{cid}"):
        if name in cookie:
            return (getattr(app, "tokens", None) or {}).get(cookie[name].value)
    return None


def _login_required(scope: dict) -> bool:
    app = scope.get("app")
    return getattr(app, "auth", None) is not None and getattr(app, "auth_dependency", None) is None


class AuthGate:
    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope.get("type") not in ("http", "websocket") or not _login_required(scope) or _user(scope) is not None:
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if scope.get("root_path") and path.startswith(scope["root_path"]):
            path = path[len(scope["root_path"]) :] or "/"
        if scope["type"] == "http" and (path in OPEN_PATHS or path.startswith(OPEN_PREFIXES)):
            if path == "/" and scope.get("method") == "GET":
                await self._page_without_api_info(scope, receive, send)
            else:
                await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4401})
            return
        await reply(send, 401, b'{"detail": "Not authenticated: log in first"}', JSON)

    async def _page_without_api_info(self, scope: dict, receive: Callable, send: Callable) -> None:
        start: dict = {}
        chunks: list[bytes] = []

        async def hold(message: dict) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, hold)
        body = _API_INFO.sub(b"gradio_api_info = null;", b"".join(chunks))
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body})
