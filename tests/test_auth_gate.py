"""Issue 29, item 5: with a login, a client that has not logged in learns nothing but the login form: the
page carries no API description, and Gradio's other routes answer 401 (they answered before)."""

from __future__ import annotations

import time

import httpx
import pytest

from testing.studio import StudioProcess
from testing.waiting import wait_for

LOGIN = ("admin", "gate-login-2290")
CLOSED = [
    "gradio_api/info",
    "gradio_api/heartbeat/abc",
    "gradio_api/cancel",
    "gradio_api/app_id",
    "gradio_api/user",
    "gradio_api/token",
    "app_id",
    "user",
    "token",
    "gradio_api/runs",
    "config",
    "gradio_api/upload",
    "gradio_api/file=/etc/hostname",
    "gradio_api/call/check",
    "gradio_api/queue/data?session_hash=x",
]


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    base = tmp_path_factory.mktemp("auth-gate")
    app = StudioProcess(base / "runs", extra=["--auth", ":".join(LOGIN)]).start(timeout_s=240)
    yield app
    app.stop()


def test_without_login_only_the_login_form_answers(studio):
    with httpx.Client(base_url=studio.url, timeout=60) as anon:
        page = anon.get("/")
        assert page.status_code == 200 and "auth_required" in page.text
        assert "gradio_api_info = null;" in page.text and "/check" not in page.text  # no endpoint named
        for path in CLOSED:
            method = (
                anon.post if path in ("gradio_api/cancel", "gradio_api/upload", "gradio_api/call/check") else anon.get
            )
            r = method("/" + path)
            assert r.status_code == 401, (path, r.status_code, r.text[:200])
        wrong = anon.post("/login", data={"username": LOGIN[0], "password": "nope"})
        assert wrong.status_code in (400, 401)


def test_the_studio_survives_its_own_start_up_check(studio):
    """Gradio's launch asks /gradio_api/startup-events without a login and raises (the studio exits) on 401."""
    wait_for(lambda: "startup-events" in studio.log_text(), 120, "launch's start-up check")
    time.sleep(2.0)
    assert studio.proc.poll() is None, studio.log_text()[-2000:]
    assert "401 Unauthorized" not in studio.log_text()


def test_after_login_everything_answers_again(studio):
    for _attempt in range(2):  # a second session too
        with httpx.Client(base_url=studio.url, timeout=60) as user:
            assert user.post("/login", data={"username": LOGIN[0], "password": LOGIN[1]}).status_code == 200
            info = user.get("/gradio_api/info")
            assert info.status_code == 200 and "/check" in info.text
            page = user.get("/")
            assert "gradio_api_info = null;" not in page.text and "/check" in page.text
            assert user.get("/config").status_code == 200
