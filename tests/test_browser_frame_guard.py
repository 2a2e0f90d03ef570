"""The frame guard (aworld_gui/static/frame_guard.js, patch ``frame_guard`` of gradio_patches.py) on a stock
one-textbox Gradio app in headless Chromium: stock Gradio 6.31 still leaves an animation-frame loop running on
an idle page (docs/UPSTREAM.md, Gradio 2 — when that test fails, remove the guard); with the guard's script in
the page's head the idle page asks for no frames, and an event's shown timer still counts."""

from __future__ import annotations

import json
import time

import gradio as gr
import pytest
from playwright.sync_api import sync_playwright

from aworld_gui.web import gradio_patches as patches
from testing.studio import launch_chromium

SLOW_S = 2.5  # the button's event: long enough for its timer to count


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as pw:
        b = launch_chromium(pw)
        yield b
        b.close()


def stock_app(head: str | None):
    with gr.Blocks() as demo:
        box = gr.Textbox(label="in")
        out = gr.Textbox(label="out")
        gr.Button("go").click(lambda x: (time.sleep(SLOW_S), f"{x}!")[1], box, out)
    demo.queue()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, head=head)
    return demo


def frames_in(page, tmp_path, ms: int = 3000) -> int:
    """Animation frames the page's renderer fired in ``ms`` (a Chromium trace)."""
    trace = tmp_path / f"trace-{time.monotonic_ns()}.json"
    page.context.browser.start_tracing(page=page, path=str(trace), categories=["devtools.timeline"])
    page.wait_for_timeout(ms)
    page.context.browser.stop_tracing()
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    return sum(1 for e in events if e.get("name") == "FireAnimationFrame")


@pytest.fixture
def page(browser):
    page = browser.new_page()
    yield page
    page.close()  # a trace sees every page of the browser: a page left open would count in the next test's


def loaded(page, demo):
    page.goto(demo.local_url)
    page.wait_for_selector("textarea")
    page.wait_for_timeout(3000)  # loaded, and quiet for longer than the guard waits


def test_stock_gradio_still_leaves_a_frame_loop_on_an_idle_page(page, tmp_path):
    """The upstream bug, patch off. Measured on 6.31: ~180 frames in 3 s (one a display frame). When this
    fails, Gradio's StatusTracker ends its loop when removed: remove the frame_guard patch."""
    demo = stock_app(head=None)
    try:
        loaded(page, demo)
        frames = frames_in(page, tmp_path)
        assert frames > 60, f"stock Gradio's idle page asked for {frames} frames in 3 s: no leaked loop any more"
    finally:
        demo.close()


def test_the_guard_ends_the_loop_and_leaves_a_shown_timer_counting(page, tmp_path, monkeypatch):
    monkeypatch.setenv(patches.SWITCH_ENV, "frame_guard")
    demo = stock_app(head=patches.head())
    try:
        loaded(page, demo)
        frames = frames_in(page, tmp_path)
        guard = page.evaluate("() => window.aworldFrameGuard")
        assert frames <= 1, f"{frames} animation frames in 3 s on an idle page with the guard"
        assert guard["cancelled"] >= 1, guard  # it was the guard that ended the stock loop

        page.fill("textarea >> nth=0", "hi")
        page.click("button")
        page.wait_for_selector(".progress-text")
        page.wait_for_timeout(300)
        first = page.inner_text(".progress-text")
        page.wait_for_timeout(1200)
        later = page.inner_text(".progress-text")
        assert first != later, f"the event's timer stood still at {first!r}"  # a shown timer is not a quiet loop
        page.wait_for_function("() => document.querySelectorAll('textarea')[1].value === 'hi!'", timeout=15000)
        # the event's last change: Gradio's screen-reader status, set ~2.5 s after the event and cleared 1 s
        # later; each change costs the guard one frame of its own, 0.3 s after it
        page.wait_for_timeout(4500)
        frames = frames_in(page, tmp_path)
        assert frames <= 1, f"{frames} animation frames in 3 s on the page idle again after an event"
    finally:
        demo.close()
