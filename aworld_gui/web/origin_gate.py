"""Only the studio's own pages talk to the studio: no other web site, through the visitor's browser (issue 41, the
seventh probe).

Two ways a page of another site reached the studio through the browser of someone who can:

* **DNS rebinding.** A site whose name first points at its own server and then at 127.0.0.1 is, for the browser, one
  origin: its script then reads and calls everything a local user can — on a studio without a login (the default,
  on 127.0.0.1), the API's ``check`` with an uploaded reward, i.e. code run as the studio's user. The server sees it
  only in the ``Host`` header, the rebinding name. So a request's ``Host`` must be an address (a rebinding needs a
  name), ``localhost``, this machine's name or a name the operator lists (``--allowed-hosts``).
* **Cross-origin requests.** Gradio answers CORS requests from any origin, with credentials, whenever the studio is
  reached by a name or address other than localhost, and from every ``localhost`` port when it is; and it sets its
  login cookie ``SameSite=None``. So a request a browser marks with an ``Origin`` must come from the studio's own
  origin (the ``Host`` it was sent to) or a name the operator lists; anything else is ``403`` before Gradio (or the
  login) sees it. Clients that are no browser (``gradio_client``, ``curl``) send no ``Origin`` and are not affected.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any, Callable
from urllib.parse import urlsplit
from .replies import reply

#: the operator's names for the studio (a reverse proxy's, a tunnel's): ``--allowed-hosts`` / this variable
ALLOWED_ENV = "AWORLD_STUDIO_ALLOWED_HOSTS"
REFUSED_HOST = b"This studio is not served under that name (a DNS-rebinding guard): open it by its address, or list the name with --allowed-hosts."
REFUSED_ORIGIN = b"Requests from another web site's page are refused (the studio's pages only): list a proxy's name with --allowed-hosts."


def parse_hosts(text: str | None) -> list[str]:
    """``"a.example, .corp.example"`` → ``["a.example", ".corp.example"]`` (a leading dot: that name and every name
    under it)."""
    return [h.strip().lower().rstrip(".") or h for h in (text or "").split(",") if h.strip()]


def machine_names() -> set[str]:
    names = {"localhost"}
    for name in (socket.gethostname(), socket.getfqdn()):
        if name:
            names.add(name.lower().rstrip("."))
    return names


def _hostname(netloc: str) -> str:
    """The name or address of ``host[:port]`` (``[::1]:7860`` → ``::1``), lower case, without a final dot."""
    return (urlsplit("//" + netloc).hostname or "").rstrip(".")


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class OriginGate:
    """``allowed``: the operator's names (``--allowed-hosts``); a ``.`` first names a domain and everything under it."""

    def __init__(self, app: Any, allowed: list[str] | None = None):
        self.app = app
        self.listed = {h for h in (allowed or []) if not h.startswith(".")}
        self.domains = tuple(h for h in (allowed or []) if h.startswith("."))
        self.machine = machine_names()

    def listed_name(self, name: str) -> bool:
        """A name the operator listed (or one under a listed domain)."""
        return name in self.listed or name.endswith(self.domains) or ("." + name) in self.domains

    def host_allowed(self, host: str) -> bool:
        name = _hostname(host)
        return bool(name) and (_is_address(name) or name in self.machine or self.listed_name(name))

    def origin_allowed(self, origin: str, host: str) -> bool:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False  # "null" (a sandboxed frame, a file), or something else
        if parts.netloc.lower() == host.lower():
            return True  # the page the studio served (another port of the same name is another site's)
        return self.listed_name(_hostname(parts.netloc))  # a proxy's name: it may change the Host it sends on

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope.get("type") not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        host = headers.get("host", "")
        refused = None
        if not self.host_allowed(host):
            refused = REFUSED_HOST
        elif "origin" in headers and not self.origin_allowed(headers["origin"], host):
            refused = REFUSED_ORIGIN
        if refused is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4403})
        else:
            await reply(send, 403, refused)
