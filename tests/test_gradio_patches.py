"""aworld_gui/web/gradio_patches.py: each patch applies to the pinned Gradio, fails loudly (here) the day its
target changes, can be switched off, and does what it is for (the queue sleeps until an event)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import gradio as gr
import gradio.queueing as gq
import uvicorn
from gradio_client import Client

from aworld_gui.web import gradio_patches as patches


def test_every_patch_applies_to_the_installed_gradio_and_uvicorn():
    """Fails on a Gradio/uvicorn upgrade that changed what a patch replaces (or another minor version)."""
    assert patches.problems() == {}
    name, body = patches.patched_status_tracker()
    assert name.startswith("statustracker-") and patches.RAF_THROTTLED in body


def test_a_changed_status_tracker_bundle_is_reported(monkeypatch, tmp_path):
    original = patches.status_tracker_assets()[0].read_text(encoding="utf-8")
    assert patches.patch_status_tracker_js(original) is not None
    changed = original.replace("performance.now()", "Date.now()")  # what a rebuilt bundle might do
    assert patches.patch_status_tracker_js(changed) is None
    fake = tmp_path / "statustracker-new.js"
    fake.write_text(changed, encoding="utf-8")
    monkeypatch.setattr(patches, "status_tracker_assets", lambda: [fake])
    assert patches.problems()["status_tracker"] == ["statustracker-new.js no longer has the frame loop this patch ends"]


def test_a_changed_uvicorn_main_loop_is_reported(monkeypatch):
    async def main_loop(self) -> None:  # e.g. a uvicorn that ticks every 0.25 s
        counter = 0
        while not await self.on_tick(counter):
            counter += 1
            await __import__("asyncio").sleep(0.25)

    monkeypatch.setattr(patches, "_installed", set())
    monkeypatch.setattr(uvicorn.Server, "main_loop", main_loop)
    (problem,) = patches.problems()["server_tick"]
    assert "uvicorn.Server.main_loop changed" in problem and "asyncio.sleep(0.1)" in problem


def test_a_changed_queue_loop_is_reported(monkeypatch):
    async def start_processing(self) -> None:  # a queue that no longer idles on sleep_when_free
        pass

    if isinstance(gq.asyncio, patches.WakeableSleep):
        monkeypatch.setattr(gq, "asyncio", __import__("asyncio"))
    monkeypatch.setattr(gq.Queue, "start_processing", start_processing)
    assert patches.problems()["queue"] == [
        "Queue.start_processing no longer idles with asyncio.sleep(self.sleep_when_free)"
    ]


def test_a_mismatched_patch_is_left_out_and_the_others_apply(monkeypatch, caplog):
    monkeypatch.setattr(patches, "status_tracker_problems", lambda: ["changed"])
    monkeypatch.setitem(patches.CHECKS, "status_tracker", patches.status_tracker_problems)
    with gr.Blocks() as demo:
        gr.Number()
    demo.queue()
    routes = patches.apply(demo)
    assert routes == []  # no patched StatusTracker served
    assert demo._queue.sleep_when_free == patches.QUEUE_IDLE_S  # the queue patch still applied
    assert "Gradio patch 'status_tracker' left out: changed" in caplog.text


def test_the_switch_turns_every_patch_off():
    code = (
        "import json, gradio as gr, gradio.queueing as gq, uvicorn\n"
        "from gradio.http_server import Server\n"
        "from aworld_gui.web import gradio_patches as p\n"
        "with gr.Blocks() as demo: gr.Number()\n"
        "demo.queue()\n"
        "loop = Server.main_loop\n"
        "routes = p.apply(demo)\n"
        "print(json.dumps({'routes': len(routes), 'queue': type(gq.asyncio).__name__,\n"
        "                  'sleep': demo._queue.sleep_when_free, 'tick': Server.main_loop is loop}))\n"
    )
    out = {}
    for switch in ("0", "1"):
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
            env={**__import__("os").environ, patches.SWITCH_ENV: switch},
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        out[switch] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["0"] == {"routes": 0, "queue": "module", "sleep": out["0"]["sleep"], "tick": True}
    assert out["0"]["sleep"] < patches.QUEUE_IDLE_S
    assert out["1"] == {"routes": 1, "queue": "WakeableSleep", "sleep": patches.QUEUE_IDLE_S, "tick": False}


def test_the_idle_queue_sleeps_until_an_event_is_pushed():
    check_an_app()
    check_an_app()  # a second app has an event loop of its own: its queue is woken too


def check_an_app():
    with gr.Blocks() as demo:
        box = gr.Number()
        gr.Button("add").click(lambda x: (x or 0) + 1, box, box, api_name="add")
    demo.queue()
    routes = patches.apply(demo)
    assert isinstance(gq.asyncio, patches.WakeableSleep), "the queue's sleep was not made wakeable"
    assert demo._queue.sleep_when_free == patches.QUEUE_IDLE_S
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, app_kwargs={"routes": routes})
    try:
        client = Client(demo.local_url, verbose=False)
        assert client.predict(1, api_name="/add") == 2
        shim = gq.asyncio
        before = shim.idle_sleeps
        time.sleep(3.0)
        idle = shim.idle_sleeps - before
        # Polling every 0.1 s would be ~30 turns; sleeping until woken: one per QUEUE_IDLE_S.
        assert idle <= 3, f"the idle queue loop turned {idle} times in 3 s"
        t0 = time.monotonic()
        for i in range(5):
            assert client.predict(i, api_name="/add") == i + 1
        took = time.monotonic() - t0
        # Were a push not waking the loop, each call would wait for the rest of its idle sleep
        # (QUEUE_IDLE_S = 2 s; ~1 s on average): five calls, ~5 s.
        assert took < patches.QUEUE_IDLE_S, f"5 calls took {took:.2f} s: the queue was not woken by them"
        # the patched StatusTracker is what the app serves
        name, body = patches.patched_status_tracker()
        import urllib.request

        with urllib.request.urlopen(demo.local_url + "assets/" + name, timeout=10) as r:
            assert r.read().decode() == body
    finally:
        demo.close()
