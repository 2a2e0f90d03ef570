"""The seventh probe's findings (docs/probes/probe7.md): the studio over HTTP, as a remote client and as a logged-in
user. Each test names its finding and fails without its fix."""

from __future__ import annotations

import copy
import json

import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from aworld_gui.rendering import probe_view
from aworld_gui.web.origin_gate import OriginGate, parse_hosts
from aworld_gui.web.page import launch_kwargs

REBOUND = "rebind.attacker.example"
PAYLOAD = '<img src=x onerror="window.__probe7=1">'


def _gated(allowed: str = "") -> TestClient:
    async def ok(request):
        return PlainTextResponse("served")

    app = Starlette(
        routes=[Route("/gradio_api/upload", ok, methods=["GET", "POST"])],
        middleware=[Middleware(OriginGate, allowed=parse_hosts(allowed))],
    )
    return TestClient(app, base_url="http://127.0.0.1:7860")


@pytest.mark.parametrize(
    "host, origin, served",
    [
        ("127.0.0.1:7860", None, True),  # a client that is no browser (gradio_client, curl)
        ("127.0.0.1:7860", "http://127.0.0.1:7860", True),  # the studio's own page
        ("localhost:7860", "http://localhost:7860", True),
        ("[::1]:7860", "http://[::1]:7860", True),
        ("10.1.2.3:7860", "http://10.1.2.3:7860", True),  # served on the network, opened by its address
        (f"{REBOUND}:7860", f"http://{REBOUND}:7860", False),  # DNS rebinding: a name that now points here
        (f"{REBOUND}:7860", None, False),
        ("127.0.0.1:7860", "http://localhost:7933", False),  # another local site (another port)
        ("127.0.0.1:7860", "https://evil.example", False),  # any other site
        ("10.1.2.3:7860", "https://evil.example", False),  # Gradio's CORS lets every origin in here
        ("127.0.0.1:7860", "null", False),  # a sandboxed frame or a file
    ],
)
def test_finding1_2_only_the_studios_own_pages_reach_it(host, origin, served):
    """HIGH. The studio checked neither the Host a request was sent to nor the page that sent it. A site rebinding its
    name to 127.0.0.1 read and called the whole API of a studio without a login (uploaded a reward and ran it through
    ``check``: code as the studio's user); Gradio answers CORS with credentials from any origin when the studio is not
    reached as localhost, and from every localhost port when it is."""
    headers = {"host": host, **({"origin": origin} if origin else {})}
    client = _gated()
    for method in ("GET", "POST"):
        r = client.request(method, "/gradio_api/upload", headers=headers)
        assert (r.status_code == 200) == served, (method, headers, r.status_code, r.text)


def test_finding1_2_a_name_the_operator_lists_is_served():
    client = _gated("studio.example.com, .corp.example")
    for name in ("studio.example.com", "a.corp.example", "corp.example"):
        r = client.post("/gradio_api/upload", headers={"host": name, "origin": f"https://{name}"})
        assert r.status_code == 200, name
    # a TLS proxy that sends the studio its own Host: the page's origin is the proxy's listed name
    r = client.post("/gradio_api/upload", headers={"host": "127.0.0.1:7860", "origin": "https://studio.example.com"})
    assert r.status_code == 200
    assert client.get("/gradio_api/upload", headers={"host": "other.example.com"}).status_code == 403


def test_finding1_2_the_gate_is_the_studios_outermost_layer(tmp_path):
    class Demo:
        aworld_routes: list = []

        class studio:
            runs_dir = tmp_path / "runs"

    middleware = launch_kwargs(Demo())["app_kwargs"]["middleware"]
    assert middleware[0].cls is OriginGate


def test_finding1_a_rebound_name_runs_no_code_in_a_studio_without_login(shared_studio):
    """HIGH, end to end: the default studio (127.0.0.1, no login) reached under a rebinding name. Before the fix the
    upload and the ``check`` below ran the reward (``RCE as uid 0``); now both are 403 and the page by its address
    still works."""
    base = shared_studio.url.rstrip("/")  # the session's studio: the default one, no login
    port = base.rsplit(":", 1)[1]
    rebound = httpx.Client(
        base_url=base, timeout=60, headers={"host": f"{REBOUND}:{port}", "origin": f"http://{REBOUND}:{port}"}
    )
    code = b"import os\ndef pwn(completion, **kw):\n    raise RuntimeError('RCE as uid %d' % os.getuid())\n"
    up = rebound.post("/gradio_api/upload", files={"files": ("pwn.py", code)})
    assert up.status_code == 403, up.text
    assert rebound.get("/config").status_code == 403
    call = rebound.post("/gradio_api/call/list_runs", json={"data": []})
    assert call.status_code == 403
    # another site's page (Gradio's CORS allowed every localhost port, with credentials)
    other = httpx.Client(base_url=base, timeout=60, headers={"origin": "http://localhost:1"})
    assert other.post("/gradio_api/call/list_runs", json={"data": []}).status_code == 403
    # the studio's own page, and a client that is no browser
    own = httpx.Client(base_url=base, timeout=60, headers={"origin": base})
    assert own.get("/config").status_code == 200
    r = own.post("/gradio_api/call/list_runs", json={"data": []})
    assert r.status_code == 200, r.text
    assert "event: complete" in own.get(f"/gradio_api/call/list_runs/{r.json()['event_id']}").text


# -- the Probe's stored report ---------------------------------------------------------------------------------
REPORT = {
    "key": "0123456789abcdef0123",
    "settings": {"model": "/m/tiny", "temperature": 1.0, "samples": 16, "max_completion_length": 2},
    "pass_rates": {
        "prompts": 24,
        "pass_threshold": 1.0,
        "mean_reward": 0.05,
        "histogram": {"edges": [0.0, 0.5, 1.0], "counts": [22, 2]},
        "share_pass_rate_zero": 0.9,
        "share_pass_rate_one": 0.0,
    },
    "zero_spread": {"group_size": 16, "observed": 0.0, "estimated": {"32": 0.006}},
    "lengths": {
        "max_completion_length": 2,
        "truncated_share": 1.0,
        "p50": 2,
        "p95": 2,
        "max": 2,
        "length_cutting_under_5_percent": 40,
    },
    "terms": {"letter_reward": {"samples": 384, "mean": 0.05, "std": 0.1, "min": 0.0, "max": 1.0, "constant": False}},
    "tools": {"calls_per_rollout": 1.0, "failing_share": 0.0, "turns_mean": 1.0, "max_turns": 3},
    "forecast": {"items": [{"what": "one step", "seconds": 0.13, "basis": "extrapolated", "how": "sum"}], "note": ""},
    "verdicts": [],
}
FORGED_FIELDS = [
    ("pass_rates", "prompts"),
    ("settings", "samples"),
    ("settings", "temperature"),
    ("lengths", "p50"),
    ("lengths", "p95"),
    ("lengths", "max"),
    ("lengths", "max_completion_length"),
    ("lengths", "length_cutting_under_5_percent"),
    ("tools", "max_turns"),
]


def test_finding3_a_forged_stored_report_is_shown_as_text():
    """MEDIUM. User code can write the runs folder, so ``<runs>/.probes/<key>.json``: a run planted a report for the
    demo setup's key (the same for every page) whose numbers were HTML, and every page that pressed Probe on that setup
    ran the script (gr.HTML sets it as markup). Every value is escaped now; a report of another shape says so."""
    assert 'data-testid="probe-report"' in probe_view.report_html(REPORT)
    for part, field in FORGED_FIELDS:
        forged = copy.deepcopy(REPORT)
        forged[part][field] = PAYLOAD
        html = probe_view.report_html(forged)
        assert "<img" not in html, (part, field)
    forged = copy.deepcopy(REPORT)
    forged["pass_rates"]["histogram"]["counts"] = [PAYLOAD, 1]
    assert "<img" not in probe_view.report_html(forged)
    # another shape (a number as text where a format needs a number; a part missing): said, not an exception
    forged = copy.deepcopy(REPORT)
    forged["pass_rates"]["mean_reward"] = PAYLOAD
    html = probe_view.report_html({**forged, "path": "/runs/.probes/x.json"})
    assert 'data-state="unreadable"' in html and "<img" not in html
    assert 'data-state="unreadable"' in probe_view.report_html({"key": "k", "settings": {}})
    # the filter's answer (the worker's, from the same report)
    res = {
        "ok": True,
        "kept": PAYLOAD,
        "rows": PAYLOAD,
        "band": [0, 1],
        "dropped": {},
        "path": "/p",
        "fewer_than_a_step": PAYLOAD,
    }
    assert "<img" not in probe_view.filtered_html(res)


def test_finding3_a_report_planted_for_a_setup_is_shown_escaped_end_to_end(tmp_path):
    """The same through the studio's path: the probe task reads the planted file as the stored report of the setup
    (reused, nothing sampled) and the page's report is derived from it."""
    from aworld_gui.core import inputs as inp
    from aworld_gui.core.run_cache import RunCache
    from aworld_gui.core.studio import Studio
    from aworld_gui.core.probes import Probes

    studio = Studio(tmp_path / "runs", cache=RunCache())
    studio.worker.start(wait=True)
    try:
        probes, si = Probes(studio), inp.demo_inputs()
        job = probes.start(si, "page", 4, 2)
        assert job.done.wait(300) and job.result["ok"], job.result
        path = tmp_path / "runs" / ".probes" / f"{job.result['report']['key']}.json"
        planted = json.loads(path.read_text(encoding="utf-8"))
        planted["lengths"]["p50"] = planted["settings"]["samples"] = PAYLOAD
        path.write_text(json.dumps(planted), encoding="utf-8")  # what a run's reward can do
        again = probes.start(si, "page", 4, 2)
        assert again.done.wait(120) and again.result["ok"] and again.result["reused"], again.result
        html = probe_view.report_html(again.result["report"], reused=True)
        assert 'data-testid="probe-report"' in html and "<img" not in html and "&lt;img" in html
    finally:
        studio.worker.close()


# -- bodies ------------------------------------------------------------------------------------------------------
def _capped() -> TestClient:
    from aworld_gui.web.body_cap import BodyCap

    async def echo(request):
        body = await request.body()
        return PlainTextResponse(str(len(body)))

    routes = [Route(p, echo, methods=["POST"]) for p in ("/login", "/gradio_api/call/check", "/gradio_api/upload")]
    return TestClient(Starlette(routes=routes, middleware=[Middleware(BodyCap)]), base_url="http://127.0.0.1:7860")


def test_finding4_no_body_is_bigger_than_what_it_carries():
    """MEDIUM. Only uploads were capped: ``POST /login`` — open to every client — with a 400 MB file part had the
    studio spool 400 MB into /tmp for as long as the client kept sending, and a 200 MB JSON call took the studio from
    0.2 to 1.35 GB. Now a login body is at most 64 KiB, any other 16 MiB (the upload keeps Gradio's cap), whether the
    length is declared or the body is sent in chunks."""
    from aworld_gui.web.body_cap import CAP, LOGIN_CAP

    client = _capped()
    assert client.post("/login", content=b"u" * 100).text == "100"
    assert client.post("/login", content=b"u" * (LOGIN_CAP + 1)).status_code == 413
    assert client.post("/gradio_api/call/check", content=b"{" * (CAP + 1)).status_code == 413
    assert client.post("/gradio_api/call/check", content=b"{" * 1000).text == "1000"

    def chunks(n):
        for _ in range(n):
            yield b"A" * (1 << 20)

    r = client.post("/login", content=chunks(4))  # no length declared
    assert r.status_code == 413, r.text
    r = client.post("/gradio_api/call/check", content=chunks(CAP // (1 << 20) + 2))
    assert r.status_code == 413, r.text
    assert client.post("/gradio_api/upload", content=chunks(20)).text == str(20 << 20)  # Gradio's own cap


def test_finding4_the_cap_is_in_front_of_the_login(tmp_path):
    from aworld_gui.web.body_cap import BodyCap
    from aworld_gui.web.login_throttle import LoginThrottle

    class Demo:
        aworld_routes: list = []

        class studio:
            runs_dir = tmp_path / "runs"

    order = [m.cls for m in launch_kwargs(Demo())["app_kwargs"]["middleware"]]
    assert order.index(BodyCap) < order.index(LoginThrottle)


def test_a_fifo_or_a_huge_file_planted_for_the_probe_holds_no_thread_and_no_memory(tmp_path):
    """Found after the probe (review): user code writes the runs folder, where the studio reads a probe's progress and
    its stored reports. A FIFO in the progress file's place held the studio's thread in ``open`` for as long as no one
    wrote into it; a stored report was read whole, whatever its size or kind."""
    import os
    import threading

    from aworld_gui.core.probes import ProbeJob
    from engines.probe import store

    fifo = tmp_path / "progress"
    os.mkfifo(fifo)
    answers: list = []
    reader = threading.Thread(target=lambda: answers.append(ProbeJob("c", fifo).doing()), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive() and answers == [None]
    (tmp_path / "plain").write_text("sampling 3 of 64 prompts")
    assert ProbeJob("c", tmp_path / "plain").doing() == "sampling 3 of 64 prompts"

    key = "k" * 16
    planted = store.probe_path(tmp_path, key)
    planted.parent.mkdir(parents=True)
    os.mkfifo(planted)
    assert store.read_stored(tmp_path, key) is None  # not waited on
    planted.unlink()
    planted.write_text(json.dumps({"key": key, "pad": ""}))
    assert store.read_stored(tmp_path, key)["path"] == str(planted)
    with open(planted, "r+") as f:
        f.truncate(store.STORED_MAX_BYTES + 1)  # sparse: no disk used
    assert store.read_stored(tmp_path, key) is None
