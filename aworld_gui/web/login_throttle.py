"""Login throttling: repeated wrong passwords from one client slow down, then are blocked for a while.

An ASGI middleware in front of Gradio's ``POST /login`` (added through ``launch(app_kwargs=...)``,
see :func:`aworld_gui.web.page.launch_kwargs`). Per client address (the socket's peer — a forwarded
header could be forged):

* the first :data:`FREE_FAILURES` wrong passwords are answered as usual (each a little later than
  the one before);
* then the client is blocked: every login is answered ``429 Too Many Requests`` with a
  ``Retry-After`` — without checking the password — for :data:`BASE_BLOCK_S` seconds, doubling with
  each further failure up to :data:`MAX_BLOCK_S`; after a block, one attempt at a time is let through;
* attempts in flight count against the allowance, so parallel guesses get no more than serial ones;
* a right password (once let through) clears the client's record: nobody is locked out for good,
  and a client that stops failing is forgotten after :data:`FORGET_S`;
* a client is what its address can be changed within at no cost (:func:`client_key`): every loopback address is
  one client (a local user, or user code, can send from any of 127.0.0.0/8 — the fourth probe got five fresh
  guesses from each), an IPv6 client is its /64 (one host is given a whole /64).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import math
import time
from dataclasses import dataclass
from typing import Any, Callable
from .replies import JSON, reply

FREE_FAILURES = 5
BASE_BLOCK_S = 2.0
MAX_BLOCK_S = 300.0
FORGET_S = 900.0
DELAY_PER_FAILURE_S = 0.2
MAX_CLIENTS = 10_000


@dataclass
class _Client:
    failures: int = 0
    in_flight: int = 0
    blocked_until: float = 0.0
    last: float = 0.0


def client_key(host: str) -> str:
    """The client an address belongs to, for counting failures: ``loopback`` for any of 127.0.0.0/8 and ``::1`` (an
    IPv4-mapped one too), an IPv6 address's /64, else the address itself."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "loopback"
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    return str(ip)


def _is_login(scope: dict) -> bool:
    return (
        scope.get("type") == "http"
        and scope.get("method") == "POST"
        and scope.get("path", "").rstrip("/").endswith("/login")
    )


class LoginThrottle:
    def __init__(
        self,
        app: Any,
        free_failures: int = FREE_FAILURES,
        base_block_s: float = BASE_BLOCK_S,
        max_block_s: float = MAX_BLOCK_S,
        forget_s: float = FORGET_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.app = app
        self.free_failures, self.base_block_s, self.max_block_s = free_failures, base_block_s, max_block_s
        self.forget_s, self.clock = forget_s, clock
        self.clients: dict[str, _Client] = {}

    def _client(self, host: str, now: float) -> _Client:
        if len(self.clients) > MAX_CLIENTS:  # forget the quiet ones
            for key in [k for k, c in self.clients.items() if now - c.last > self.forget_s and not c.in_flight]:
                del self.clients[key]
        c = self.clients.setdefault(host, _Client())
        if c.failures and now - c.last > self.forget_s and now >= c.blocked_until:
            c.failures = 0
        return c

    def _refusal(self, c: _Client, now: float) -> float | None:
        """Seconds to wait when this attempt may not go through now, else None."""
        if now < c.blocked_until:
            return c.blocked_until - now
        allowed = self.free_failures - c.failures if c.failures < self.free_failures else 1
        if c.in_flight >= allowed:
            return max(self.base_block_s, 1.0)
        return None

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if not _is_login(scope):
            await self.app(scope, receive, send)
            return
        host = client_key((scope.get("client") or ("?", 0))[0])
        now = self.clock()
        c = self._client(host, now)
        wait = self._refusal(c, now)
        if wait is not None:
            await _too_many(send, wait)
            return
        c.in_flight += 1
        c.last = now
        status: dict[str, int] = {}

        async def send_status(message: dict) -> None:
            if message.get("type") == "http.response.start":
                status["code"] = int(message.get("status", 0))
            await send(message)

        try:
            if c.failures:
                await asyncio.sleep(min(c.failures, self.free_failures) * DELAY_PER_FAILURE_S)
            await self.app(scope, receive, send_status)
        finally:
            c.in_flight -= 1
        code = status.get("code", 0)
        if 200 <= code < 300:
            self.clients.pop(host, None)
        elif code in (400, 401, 403):
            c.failures += 1
            c.last = self.clock()
            if c.failures >= self.free_failures:
                block = min(self.max_block_s, self.base_block_s * 2 ** (c.failures - self.free_failures))
                c.blocked_until = c.last + block


async def _too_many(send: Callable, wait_s: float) -> None:
    retry = max(1, math.ceil(wait_s))
    body = json.dumps({"detail": f"Too many failed logins from your address: try again in {retry} s."}).encode()
    await reply(send, 429, body, JSON, [(b"retry-after", str(retry).encode())])
