"""Every patch of Gradio's and uvicorn's internals, in one place: what each changes and why is in
docs/STUDIO.md ("Why the studio patches Gradio"). In short, a studio that shares its machine with
training must not wake that machine when nothing happens:

* ``queue`` — Gradio's queue loop looks for new events every ``sleep_when_free`` (1 ms) and its
  progress loop every 10 ms. Here the queue loop sleeps until an event is pushed or a job ends
  (``QUEUE_IDLE_S`` at most) and the progress loop looks once a second.
* ``server_tick`` — uvicorn's server loop wakes every 0.1 s (to refresh the ``Date`` header and
  look at its exit flag); here once a second.
* ``status_tracker`` — Gradio's StatusTracker script leaves a 60-per-second animation-frame loop
  running on a loaded page; it is served patched so the loop ends once its status is not pending,
  and its frames come at most once a ``THROTTLE_MS`` while it is.

:func:`apply` installs them all, once, before the app is launched, and returns the routes to serve
ahead of Gradio's own. ``AWORLD_STUDIO_PATCHES=0`` turns every patch off (the studio then behaves
as stock Gradio does). Each patch first checks that the code it replaces is the code it was written
against (:func:`problems`); a mismatch leaves that patch out with a warning, and
tests/test_gradio_patches.py fails on it, so a Gradio upgrade cannot silently undo them. Gradio is
pinned to the tested minor version (:data:`TESTED_GRADIO`) in requirements.txt.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import re
import weakref
from pathlib import Path

log = logging.getLogger(__name__)

SWITCH_ENV = "AWORLD_STUDIO_PATCHES"
TESTED_GRADIO = "6.31"

QUEUE_POLL_S = 0.1  # the queue loop's sleep if it cannot be woken: not felt next to a click's round trip
QUEUE_IDLE_S = 2.0  # the queue loop's sleep when it is woken by a push or a finished job (a value of its own)
PROGRESS_POLL_S = 1.0  # nothing here reports progress through the queue (no gr.Progress)
SERVER_TICK_S = 1.0  # uvicorn: Date header once a second as before; exit seen within 1 s
UVICORN_TICK_S = 0.1  # what uvicorn's own main loop sleeps
THROTTLE_MS = 1000  # StatusTracker frames while a status is pending

_installed: set[str] = set()


def enabled() -> bool:
    return os.environ.get(SWITCH_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


# -- the queue ---------------------------------------------------------------------------------------
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


# -- the StatusTracker script --------------------------------------------------------------------------
RAF = re.compile(r"typeof window<`u`\?window\.requestAnimationFrame:")
RAF_THROTTLED = f"typeof window<`u`?(f=>setTimeout(()=>window.requestAnimationFrame(f),{THROTTLE_MS})):"
# The elapsed-time loop, ``function ze(){me(()=>{F(Pe,(performance.now()-w(de))/1e3),W&&ze()})}``, goes
# on while its flag ``W`` is set; the tracker's status effect (``o.status===`pending`?Ve():…``) clears
# it, but a tracker whose status turns complete without that effect running keeps ticking for ever.
LOOP = re.compile(
    r"(function (\w+)\(\)\{\w+\(\(\)=>\{\w+\(\w+,\(performance\.now\(\)-\w+\(\w+\)\)/1e3\),)"
    r"(\w+)&&\2\(\)\}\)\}"
)
STATUS = re.compile(r"(\w+)\.status===`pending`\?\w+\(\):")


def patch_status_tracker_js(text: str) -> str | None:
    """Gradio's StatusTracker chunk with its elapsed-time loop ended once the status is no longer
    pending (the flag cleared, so the next pending status starts it again) and its frames slowed to
    one every ``THROTTLE_MS``; None if the chunk lacks any of the patterns."""
    loop = LOOP.search(text)
    status = STATUS.search(text, loop.end()) if loop else None  # the same component's status effect
    if not (loop and status and RAF.search(text)):
        return None
    head, fn, flag = loop.groups()
    ended = f"{head}{flag}&&({status.group(1)}.status===`pending`?{fn}():{flag}=!1)}})}}"
    text = text[: loop.start()] + ended + text[loop.end() :]
    return RAF.sub(RAF_THROTTLED, text, count=1)


def status_tracker_assets() -> list[Path]:
    import gradio

    return sorted((Path(gradio.__file__).parent / "templates" / "frontend" / "assets").glob("statustracker-*.js"))


def patched_status_tracker() -> tuple[str, str] | None:
    """(asset file name, patched JavaScript) of Gradio's StatusTracker chunk, or None."""
    for path in status_tracker_assets():
        patched = patch_status_tracker_js(path.read_text(encoding="utf-8"))
        if patched is not None:
            return path.name, patched
    return None


def status_tracker_problems() -> list[str]:
    assets = status_tracker_assets()
    if not assets:
        return ["Gradio ships no statustracker-*.js asset"]
    if patched_status_tracker() is None:
        return [f"{', '.join(p.name for p in assets)} no longer has the frame loop this patch ends"]
    return []


def status_tracker_route():
    from starlette.responses import Response
    from starlette.routing import Route

    name, body = patched_status_tracker()

    async def serve(request):
        return Response(body, media_type="text/javascript", headers={"Cache-Control": "no-cache"})

    return Route(f"/assets/{name}", serve, methods=["GET"])


# -- all of them -----------------------------------------------------------------------------------------
CHECKS = {"queue": queue_problems, "server_tick": server_tick_problems, "status_tracker": status_tracker_problems}


def problems() -> dict[str, list[str]]:
    """What stops each patch from applying to the installed Gradio/uvicorn ({} when all apply)."""
    import gradio

    out = {name: found for name, check in CHECKS.items() if (found := check())}
    if not gradio.__version__.startswith(TESTED_GRADIO + "."):
        out["version"] = [f"Gradio {gradio.__version__} is not the tested {TESTED_GRADIO}.x"]
    return out


def apply(demo) -> list:
    """Install every patch for ``demo`` (after ``demo.queue()``, before ``demo.launch()``); returns the
    routes to serve ahead of Gradio's own (``launch(app_kwargs={"routes": ...})``). Does nothing when
    switched off; leaves out (with a warning) a patch whose target changed."""
    if not enabled():
        log.info("Gradio patches switched off (%s=0)", SWITCH_ENV)
        return []
    found = problems()
    for name, issues in found.items():
        log.warning("Gradio patch '%s' left out: %s", name, "; ".join(issues))
    routes = []
    if "queue" not in found:
        patch_queue(demo)
    if "server_tick" not in found:
        patch_server_tick()
        _installed.add("server_tick")
    if "status_tracker" not in found:
        routes.append(status_tracker_route())
    return routes
