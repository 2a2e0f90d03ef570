"""aworld_gui/web/gradio_patches.py: each server-side patch applies to the pinned Gradio, fails loudly (here)
the day its target changes, can be switched off, does what it is for (the queue sleeps until an event), and
is still needed: the stock Gradio/uvicorn still shows the behaviour it works around (docs/UPSTREAM.md).
When a ``test_stock_...`` test fails, upstream fixed it: remove that patch."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import gradio as gr
import pytest
import gradio.queueing as gq
import uvicorn
from gradio_client import Client

from aworld_gui.web import gradio_patches as patches


def test_every_patch_applies_to_the_installed_gradio_and_uvicorn():
    """Fails on a Gradio/uvicorn upgrade that changed what a patch replaces (or another minor version)."""
    assert patches.problems() == {}


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
    monkeypatch.setattr(patches, "server_tick_problems", lambda: ["changed"])
    monkeypatch.setitem(patches.CHECKS, "server_tick", patches.server_tick_problems)
    monkeypatch.setattr(patches, "patch_server_tick", lambda: pytest.fail("a mismatched patch was installed"))
    with gr.Blocks() as demo:
        gr.Number()
    demo.queue()
    patches.apply(demo)
    assert demo._queue.sleep_when_free == patches.QUEUE_IDLE_S  # the queue patch still applied
    assert "Gradio patch 'server_tick' left out: changed" in caplog.text


IDLE = """
import asyncio, json, os, sys, time
turns = [0]
run_once = asyncio.base_events.BaseEventLoop._run_once
def counted(self):
    turns[0] += 1
    return run_once(self)
asyncio.base_events.BaseEventLoop._run_once = counted
import gradio as gr, gradio.queueing as gq
from gradio.http_server import Server
from aworld_gui.web import gradio_patches as p
ticks = [0]
on_tick = Server.on_tick
async def counted_tick(self, counter):
    ticks[0] += 1
    return await on_tick(self, counter)
Server.on_tick = counted_tick
with gr.Blocks() as demo:
    gr.Number()
demo.queue()
loop = Server.main_loop
p.apply(demo)
state = {"queue": type(gq.asyncio).__name__, "sleep": demo._queue.sleep_when_free,
         "tick": Server.main_loop is loop, "head": bool(p.head())}
demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
time.sleep(2)
t0, n0, k0 = time.monotonic(), turns[0], ticks[0]
time.sleep(3)
dt = time.monotonic() - t0
print(json.dumps({**state, "turns_per_s": (turns[0] - n0) / dt, "ticks_per_s": (ticks[0] - k0) / dt}))
sys.stdout.flush()
os._exit(0)
"""


@functools.cache
def idle_app(switch: str) -> dict:
    """An idle Gradio app (one number, launched) with ``AWORLD_STUDIO_PATCHES=switch``: what was patched,
    and how often its event loop turned and uvicorn's server ticked a second over 3 s."""
    proc = subprocess.run(
        [sys.executable, "-c", IDLE],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, patches.SWITCH_ENV: switch, "GRADIO_ANALYTICS_ENABLED": "False"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def switched(value: str) -> dict:
    return {k: idle_app(value)[k] for k in ("queue", "sleep", "tick", "head")}


def test_the_switch_turns_every_patch_off_or_each_on_by_name():
    off, on, some = switched("0"), switched("1"), switched("server_tick,frame_guard")
    assert off == {"queue": "module", "sleep": off["sleep"], "tick": True, "head": False}
    assert off["sleep"] < patches.QUEUE_IDLE_S
    assert on == {"queue": "WakeableSleep", "sleep": patches.QUEUE_IDLE_S, "tick": False, "head": True}
    assert some == {"queue": "module", "sleep": off["sleep"], "tick": False, "head": True}


# -- still needed: the stock behaviour each patch works around (patch off) --------------------------------
def test_stock_gradio_still_polls_its_idle_queue():
    """docs/UPSTREAM.md, Gradio 1. Measured on 6.31: ~1700 event-loop turns a second stock (uvicorn's
    ticks are 10 of them), ~6 patched. When this fails, Gradio's queue waits for events: remove the
    queue patch."""
    stock, patched = idle_app("0"), idle_app("1")
    assert stock["turns_per_s"] > 200, f"stock Gradio's idle queue no longer polls: {stock}"
    assert patched["turns_per_s"] < 20, f"the patched queue still polls: {patched}"


def test_stock_uvicorn_still_ticks_ten_times_a_second():
    """docs/UPSTREAM.md, uvicorn 1. When this fails, uvicorn's server loop no longer wakes every 0.1 s:
    remove the server_tick patch."""
    stock, patched = idle_app("0"), idle_app("server_tick,frame_guard")
    assert stock["ticks_per_s"] > 8, f"stock uvicorn no longer ticks every 0.1 s: {stock}"
    assert patched["ticks_per_s"] < 1.5, f"the patched server still ticks often: {patched}"


def test_the_idle_queue_sleeps_until_an_event_is_pushed():
    check_an_app()
    check_an_app()  # a second app has an event loop of its own: its queue is woken too


def check_an_app():
    with gr.Blocks() as demo:
        box = gr.Number()
        gr.Button("add").click(lambda x: (x or 0) + 1, box, box, api_name="add")
    demo.queue()
    patches.apply(demo)
    assert isinstance(gq.asyncio, patches.WakeableSleep), "the queue's sleep was not made wakeable"
    assert demo._queue.sleep_when_free == patches.QUEUE_IDLE_S
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
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
    finally:
        demo.close()


CANVAS_COMPONENTS = (
    "ImageEditor",
    "Sketchpad",
    "Paint",
    "Model3D",
    "Audio",
    "Video",
    "Plot",
    "LinePlot",
    "ScatterPlot",
    "BarPlot",
)


def test_the_studio_has_no_component_that_draws_on_a_canvas():
    """The frame guard cancels a frame loop that changes no DOM; a canvas animation changes none either
    (static/frame_guard.js). Adding one of these components means switching the guard off for it."""
    root = Path(patches.__file__).resolve().parents[1]
    pattern = re.compile(r"\bgr\.(" + "|".join(CANVAS_COMPONENTS) + r")\(")
    found = [
        f"{p.relative_to(root)}: {m.group(0)}" for p in root.rglob("*.py") for m in pattern.finditer(p.read_text())
    ]
    assert found == []
