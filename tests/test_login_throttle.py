"""Login throttling (aworld_gui/web/login_throttle.py): unit tests on a stand-in app with a fake clock, and
Gradio's real /login behind it in a studio started with a password."""

from __future__ import annotations

import asyncio
import os
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from aworld_gui.web.login_throttle import LoginThrottle
from testing.studio import StudioProcess

PASSWORD = "right-password"


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _password_app(scope, receive, send):
    """Gradio's login in miniature: 200 for the right password, 400 otherwise."""
    body = b""
    while True:
        msg = await receive()
        body += msg.get("body", b"")
        if not msg.get("more_body"):
            break
    ok = f"password={PASSWORD}".encode() in body
    await send({"type": "http.response.start", "status": 200 if ok else 400, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def _login(app, password: str, host: str = "10.0.0.1", path: str = "/login") -> tuple[int, dict]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": f"username=admin&password={password}".encode(), "more_body": False}

    async def send(msg):
        sent.append(msg)

    scope = {"type": "http", "method": "POST", "path": path, "client": (host, 5000), "headers": []}
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], {k.decode(): v.decode() for k, v in start.get("headers", [])}


@pytest.fixture
def throttle(monkeypatch):
    import aworld_gui.web.login_throttle as lt

    monkeypatch.setattr(lt, "DELAY_PER_FAILURE_S", 0.0)
    clock = Clock()
    return LoginThrottle(_password_app, clock=clock), clock


def test_five_failures_then_a_block_that_grows_and_ends(throttle):
    app, clock = throttle
    assert [_login(app, "wrong")[0] for _ in range(5)] == [400] * 5
    status, headers = _login(app, PASSWORD)  # blocked: even the right password waits
    assert status == 429 and headers["retry-after"] == "2"
    clock.now += 2.1
    assert _login(app, "wrong")[0] == 400  # one attempt after the block...
    status, headers = _login(app, "wrong")
    assert status == 429 and headers["retry-after"] == "4"  # ...and the next block is twice as long
    clock.now += 4.1
    assert _login(app, PASSWORD)[0] == 200  # never locked out for good
    assert [_login(app, "wrong")[0] for _ in range(5)] == [400] * 5  # a success clears the record


def test_the_block_never_exceeds_its_cap_and_is_per_client(throttle):
    app, clock = throttle
    for _ in range(40):
        _login(app, "wrong")
        clock.now += 1000.0
    status, headers = _login(app, "wrong")
    assert status in (400, 429)
    assert int(headers.get("retry-after", "0")) <= 300
    assert _login(app, PASSWORD, host="10.0.0.2")[0] == 200  # another client is not affected


def test_a_new_loopback_address_or_ipv6_host_of_the_same_network_is_the_same_client(throttle):
    """The fourth probe: from 127.0.0.1, ``curl --interface 127.0.0.2`` (any of 127.0.0.0/8, 16 million addresses) got
    five fresh guesses per address, and the right password through 127.9.9.9 while 127.0.0.1 was blocked. A client is
    what its address can be changed within at no cost: all of loopback, an IPv6 /64."""
    app, _ = throttle
    assert [_login(app, "wrong", host="127.0.0.1")[0] for _ in range(5)] == [400] * 5
    for other in ("127.0.0.2", "127.1.2.3", "127.255.255.254", "::1", "::ffff:127.0.0.9"):
        assert _login(app, "wrong", host=other)[0] == 429, other
    assert _login(app, PASSWORD, host="127.9.9.9")[0] == 429  # blocked means blocked, whatever the address
    assert [_login(app, "wrong", host=f"2001:db8::{i:x}")[0] for i in range(1, 6)] == [400] * 5
    assert _login(app, "wrong", host="2001:db8::ffff:1")[0] == 429  # the same /64
    assert _login(app, PASSWORD, host="2001:db8:0:1::1")[0] == 200  # the next /64 is another client
    assert _login(app, PASSWORD, host="10.0.0.2")[0] == 200  # as is another IPv4 address


def test_a_quiet_client_is_forgotten(throttle):
    app, clock = throttle
    for _ in range(4):
        _login(app, "wrong")
    clock.now += 901
    assert [_login(app, "wrong")[0] for _ in range(5)] == [400] * 5


def test_other_routes_pass_untouched(throttle):
    app, _ = throttle
    for _ in range(10):
        _login(app, "wrong")
    assert _login(app, PASSWORD, path="/gradio_api/info")[0] == 200


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    base = tmp_path_factory.mktemp("login")
    os.environ["AWORLD_STUDIO_AUTH"] = f"admin:{PASSWORD}"
    try:
        app = StudioProcess(base / "runs").start(timeout_s=180)
    finally:
        os.environ.pop("AWORLD_STUDIO_AUTH", None)
    yield app
    app.stop()


def test_only_the_proxies_the_operator_names_are_trusted_with_x_forwarded_for(monkeypatch):
    from aworld_gui.web.serve import build_parser, trust_forwarded_headers_from

    monkeypatch.delenv("AWORLD_STUDIO_FORWARDED_ALLOW_IPS", raising=False)
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "127.0.0.1")  # uvicorn's own default, which trusts any local client
    trust_forwarded_headers_from(build_parser().parse_args([]).forwarded_allow_ips)
    assert os.environ["FORWARDED_ALLOW_IPS"] == ""
    trust_forwarded_headers_from(
        build_parser().parse_args(["--forwarded-allow-ips", " 10.0.0.5, 10.1.0.0/16"]).forwarded_allow_ips
    )
    assert os.environ["FORWARDED_ALLOW_IPS"] == "10.0.0.5,10.1.0.0/16"


def test_a_hundred_wrong_passwords_are_throttled_and_the_right_one_works_later(studio):
    url = studio.url + "login"

    def attempt(password):
        return httpx.post(url, data={"username": "admin", "password": password}, timeout=60)

    t0 = time.monotonic()
    with ThreadPoolExecutor(20) as pool:
        codes = [r.status_code for r in pool.map(attempt, ["wrong"] * 100)]
    # 5 checked, then one per block (2 s, 4 s, 8 s, ...) for as long as the burst lasts on a busy machine
    assert codes.count(400) <= 10 and codes.count(429) >= 90, codes
    assert codes[:5].count(400) >= 1
    # a block whose end is known: the burst's may be ending by now on a loaded machine (CI's run let the right
    # password in after it, rightly), so once let through, one more wrong password starts the next, doubled; the
    # first refusal's Retry-After (a ceiling) bounds its end from below
    while (first := attempt("wrong")).status_code == 429:
        time.sleep(int(first.headers["retry-after"]))
    assert first.status_code == 400, first.text
    sent = time.monotonic()
    refusal = attempt("wrong")
    assert refusal.status_code == 429, refusal.text
    blocked_until = sent + int(refusal.headers["retry-after"]) - 1  # the block ends after this, at the latest
    # through 127.0.0.1 a new X-Forwarded-For per attempt is still this client (no proxy is trusted unless the
    # operator names it): neither a wrong nor the right password gets through while it is blocked
    forged = [
        httpx.post(
            url, data={"username": "admin", "password": pw}, headers={"X-Forwarded-For": f"10.9.{i}.1"}, timeout=60
        )
        for i, pw in enumerate(["wrong", "wrong", "wrong", PASSWORD])
    ]
    blocked = attempt(PASSWORD)
    assert time.monotonic() < blocked_until, "the block ended before the attempts it should refuse were made"
    assert [r.status_code for r in forged] == [429] * 4, [(r.status_code, r.text) for r in forged]
    assert blocked.status_code == 429
    wait = int(blocked.headers["retry-after"])
    assert 1 <= wait <= 300 and "try again in" in blocked.json()["detail"]
    time.sleep(wait + 0.5)
    ok = attempt(PASSWORD)
    assert ok.status_code == 200 and ok.json() == {"success": True}, ok.text
    assert time.monotonic() - t0 < 120
