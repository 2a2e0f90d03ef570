"""Every patch of Gradio's and uvicorn's internals, in one place: what each changes and why is in
docs/STUDIO.md ("Idle page", "Light process"). In short, a studio that shares its machine with
training must not wake that machine when nothing happens. Each patch names the upstream issue it works
around (docs/UPSTREAM.md: the issue text and its minimal reproduction, unfiled where no upstream issue
was found), and tests/test_gradio_patches.py and tests/test_browser_frame_guard.py each have a test that
shows the upstream behaviour on the installed Gradio with the patch off: when one fails, upstream no
longer needs that patch — remove it.

* ``queue`` (docs/UPSTREAM.md, Gradio 1) — Gradio's queue loop looks for new events every
  ``sleep_when_free`` (1 ms) and its progress loop every 10 ms: an idle app's event loop turns ~1700
  times a second. Here the queue loop sleeps until an event is pushed or a job ends (``QUEUE_IDLE_S``
  at most) and the progress loop looks once a second.
* ``server_tick`` (docs/UPSTREAM.md, uvicorn 1) — uvicorn's server loop wakes every 0.1 s (to refresh
  the ``Date`` header and look at its exit flag); here once a second.
* ``frame_guard`` (docs/UPSTREAM.md, Gradio 2) — Gradio's StatusTracker leaves a 60-per-second
  animation-frame loop running on a loaded page (the page's own loading tracker, removed while
  pending). The page gets a script, through Gradio's ``head`` option, that cancels the frames of a loop
  that changes nothing on the page (static/frame_guard.js); Gradio's bundle is served as it is.

:func:`apply` installs the server-side ones, once, before the app is launched; :func:`head` is the
frame guard's ``launch(head=...)``. ``AWORLD_STUDIO_PATCHES`` switches them: ``0`` turns every patch
off (the studio then behaves as stock Gradio does), a list of names (``queue,frame_guard``) keeps only
those. Each server-side patch first checks that the code it replaces is the code it was written against
(:func:`problems`); a mismatch leaves that patch out with a warning, and tests/test_gradio_patches.py
fails on it, so a Gradio upgrade cannot silently undo them. Gradio is pinned to the tested minor version
(:data:`TESTED_GRADIO`) in requirements.txt.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import weakref
from pathlib import Path

log = logging.getLogger(__name__)

SWITCH_ENV = "AWORLD_STUDIO_PATCHES"
PATCHES = ("queue", "server_tick", "frame_guard")
TESTED_GRADIO = "6.31"

QUEUE_IDLE_S = 2.0  # the queue loop's sleep when it is woken by a push or a finished job (a value of its own)
PROGRESS_POLL_S = 1.0  # nothing here reports progress through the queue (no gr.Progress)
SERVER_TICK_S = 1.0  # uvicorn: Date header once a second as before; exit seen within 1 s
UVICORN_TICK_S = 0.1  # what uvicorn's own main loop sleeps

_installed: set[str] = set()


def enabled(name: str | None = None) -> bool:
    """Whether patch ``name`` (any patch, when None) is switched on by ``AWORLD_STUDIO_PATCHES``: unset or
    ``1`` all, ``0`` none, else the comma-separated names listed."""
    value = os.environ.get(SWITCH_ENV, "1").strip().lower()
    if value in ("", "1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    names = {n.strip() for n in value.split(",")}
    return bool(names & set(PATCHES)) if name is None else name in names


# -- the queue ---------------------------------------------------------------------------------------
# Upstream: gradio-app/gradio, unfiled (no issue found; docs/UPSTREAM.md "Gradio 1: an idle queue polls
# every millisecond"). Gradio 6.31's Queue.start_processing sleeps sleep_when_free (1 ms) when there is
# nothing to do, start_progress_updates 10 ms; neither is an option of queue(). Still needed:
# test_stock_gradio_still_polls_its_idle_queue.
class WakeableSleep:
    """Stands in for ``asyncio`` inside ``gradio.queueing``: ``sleep(QUEUE_IDLE_S)`` — only the
    queue loop's idle sleep has that length — ends as soon as :meth:`wake` is called; everything
    else is asyncio's own."""

    def __init__(self, idle_s: float):
        self.idle_s = idle_s
        self.idle_sleeps = 0  # how often a queue loop went idle (tests)
        self._events: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event loop → its Event

    def __getattr__(self, name: str):
        return getattr(asyncio, name)

    def _event(self) -> asyncio.Event:
        """The wake-up of the running event loop's queue (each launched app has a loop of its own)."""
        loop = asyncio.get_running_loop()
        ev = self._events.get(loop)
        if ev is None:
            ev = self._events[loop] = asyncio.Event()
        return ev

    def wake(self) -> None:
        """Called on the queue's own loop (from its push and process_events)."""
        self._event().set()

    async def sleep(self, delay: float, result=None):
        if delay != self.idle_s:
            return await asyncio.sleep(delay, result)
        self.idle_sleeps += 1
        ev = self._event()
        try:
            await asyncio.wait_for(ev.wait(), delay)
        except asyncio.TimeoutError:
            pass
        ev.clear()  # the loop looks at its queue next: a push after this sets it again
        return result


def queue_problems() -> list[str]:
    import gradio.queueing as gq

    if isinstance(gq.asyncio, WakeableSleep):
        return []
    out = [
        f"gradio.queueing.Queue has no {name}"
        for name in ("push", "process_events", "start_processing")
        if not hasattr(gq.Queue, name)
    ]
    if not out:
        src = inspect.getsource(gq.Queue.start_processing)
        if "asyncio.sleep(self.sleep_when_free)" not in src:
            out.append("Queue.start_processing no longer idles with asyncio.sleep(self.sleep_when_free)")
        if "progress_update_sleep_when_free" not in inspect.getsource(gq.Queue):
            out.append("Queue has no progress_update_sleep_when_free")
    return out


def patch_queue(demo) -> WakeableSleep | None:
    """``demo``'s queue sleeps ``QUEUE_IDLE_S`` when idle and is woken by ``Queue.push`` (a new
    event) and by the end of ``Queue.process_events`` (a job slot freed). The class patch is made
    once per process; each app's queue gets the new sleep lengths."""
    import gradio.queueing as gq

    shim = gq.asyncio if isinstance(gq.asyncio, WakeableSleep) else None
    if shim is None:
        shim = WakeableSleep(QUEUE_IDLE_S)
        push, process_events = gq.Queue.push, gq.Queue.process_events

        async def push_and_wake(self, *args, **kwargs):
            try:
                return await push(self, *args, **kwargs)
            finally:
                shim.wake()

        async def process_and_wake(self, *args, **kwargs):
            try:
                return await process_events(self, *args, **kwargs)
            finally:
                shim.wake()

        gq.Queue.push, gq.Queue.process_events = push_and_wake, process_and_wake
        gq.asyncio = shim
    q = demo._queue
    q.sleep_when_free = QUEUE_IDLE_S
    q.progress_update_sleep_when_free = max(q.progress_update_sleep_when_free, PROGRESS_POLL_S)
    return shim


# -- uvicorn's tick ----------------------------------------------------------------------------------
# Upstream: Kludex/uvicorn (encode/uvicorn), unfiled (docs/UPSTREAM.md "uvicorn 1: the server wakes 10
# times a second"); the nearest is Kludex/uvicorn#2625, which is about the same 0.1 s tick, for
# --timeout-notify. uvicorn 0.54's Server.main_loop sleeps 0.1 s and has no setting for it. Still
# needed: test_stock_uvicorn_still_ticks_ten_times_a_second.
def server_tick_problems() -> list[str]:
    import uvicorn
    from gradio.http_server import Server

    if "server_tick" in _installed:
        return []
    if not issubclass(Server, uvicorn.Server):
        return ["gradio.http_server.Server is no uvicorn.Server"]
    if not (hasattr(uvicorn.Server, "main_loop") and hasattr(uvicorn.Server, "on_tick")):
        return ["uvicorn.Server has no main_loop/on_tick"]
    src = inspect.getsource(uvicorn.Server.main_loop)
    wanted = ("counter = 0", "await self.on_tick(counter)", f"await asyncio.sleep({UVICORN_TICK_S})", "counter += 1")
    missing = [w for w in wanted if w not in src]
    return [f"uvicorn.Server.main_loop changed (no {', '.join(repr(m) for m in missing)})"] if missing else []


def patch_server_tick() -> None:
    """Gradio's uvicorn server ticks once a second instead of 10 times. ``on_tick(counter)`` does
    its once-a-second work when ``counter % 10 == 0``, so the counter steps by 10."""
    from gradio.http_server import Server

    steps = max(1, round(SERVER_TICK_S / UVICORN_TICK_S))

    async def main_loop(self) -> None:
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + steps) % 864000
            await asyncio.sleep(SERVER_TICK_S)
            should_exit = await self.on_tick(counter)

    Server.main_loop = main_loop


# -- the frame guard -------------------------------------------------------------------------------
# Upstream: gradio-app/gradio, unfiled (docs/UPSTREAM.md "Gradio 2: a StatusTracker removed while pending
# keeps its animation-frame loop"): js/statustracker/static/index.svelte's run() re-requests a frame while
# _timer is set and only the status effect clears it, so the SPA's loading tracker ({#if loader_status ===
# "pending"} in js/spa/src/Index.svelte) leaks the loop on every page load. Still needed:
# tests/test_browser_frame_guard.py::test_stock_gradio_still_leaves_a_frame_loop_on_an_idle_page.
FRAME_GUARD_JS = Path(__file__).resolve().parents[1] / "static" / "frame_guard.js"


def head() -> str:
    """What the page's ``<head>`` gets (``launch(head=...)``): the frame guard's script, or nothing when
    the patch is switched off. It rewrites none of Gradio's code: it cancels animation frames that a loop
    asks for while the page does not change (static/frame_guard.js says how)."""
    if not enabled("frame_guard"):
        return ""
    return "<script>\n" + FRAME_GUARD_JS.read_text(encoding="utf-8") + "</script>"


# -- all of them -----------------------------------------------------------------------------------------
CHECKS = {"queue": queue_problems, "server_tick": server_tick_problems}


def problems() -> dict[str, list[str]]:
    """What stops each server-side patch from applying to the installed Gradio/uvicorn ({} when all apply)."""
    import gradio

    out = {name: found for name, check in CHECKS.items() if (found := check())}
    if not gradio.__version__.startswith(TESTED_GRADIO + "."):
        out["version"] = [f"Gradio {gradio.__version__} is not the tested {TESTED_GRADIO}.x"]
    return out


def apply(demo) -> None:
    """Install the server-side patches switched on for ``demo`` (after ``demo.queue()``, before
    ``demo.launch()``; the frame guard goes in through :func:`head`). Leaves out (with a warning) a
    patch whose target changed."""
    if not enabled():
        log.info("Gradio patches switched off (%s=0)", SWITCH_ENV)
        return
    found = problems()
    for name, issues in found.items():
        log.warning("Gradio patch '%s' left out: %s", name, "; ".join(issues))
    if enabled("queue") and "queue" not in found:
        patch_queue(demo)
    if enabled("server_tick") and "server_tick" not in found:
        patch_server_tick()
        _installed.add("server_tick")
