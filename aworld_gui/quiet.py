"""Fewer wake-ups for a studio that shares its machine with training.

On the 2-core VMs this project runs on, every wake-up of the studio's event loop costs ~0.3 ms of
CPU (a bare asyncio loop woken 34 times a second uses ~1 % of a core), and on a machine whose cores
are busy training each one preempts a torch thread that its partner then waits for. Three timers
wake a Gradio app when nothing happens:

* Gradio's queue loop looks for new events every 1 ms (``Queue.sleep_when_free``) and its progress
  loop every 10 ms (here: the queue loop sleeps until an event is pushed or a job ends, 2 s at most;
  the progress loop looks once a second);
* uvicorn's server loop wakes every 0.1 s to refresh the ``Date`` header and look at its exit flag;
* ``Blocks.block_thread`` wakes the main thread every 0.1 s (``wait_until_interrupted`` sleeps
  until a signal instead).

Measured on an idle studio (20 s, no page open), CPU of its event-loop thread: 0.97 % of a core
(31 wake-ups/s) with the queue at 50 ms and uvicorn at 0.1 s; 0.38 % (12 wake-ups/s) with the queue
at 0.1 s; 0.05 % (2.5 wake-ups/s) with the queue loop woken on push.
(Internal attributes of Gradio 6 and uvicorn; each is left alone if a version lacks it.)
"""
from __future__ import annotations

import asyncio
import logging
import threading
import weakref

log = logging.getLogger(__name__)

QUEUE_POLL_S = 0.1       # the queue loop's sleep if it cannot be woken: not felt next to a click's round trip
QUEUE_IDLE_S = 2.0       # the queue loop's sleep when it is woken by a push or a finished job (a value of its own)
PROGRESS_POLL_S = 1.0    # nothing here reports progress through the queue (no gr.Progress)
SERVER_TICK_S = 1.0      # uvicorn: Date header once a second as before; exit seen within 1 s


class WakeableSleep:
    """Stands in for ``asyncio`` inside ``gradio.queueing``: ``sleep(QUEUE_IDLE_S)`` — only the
    queue loop's idle sleep has that length — ends as soon as :meth:`wake` is called; everything
    else is asyncio's own."""

    def __init__(self, idle_s: float):
        self.idle_s = idle_s
        self.idle_sleeps = 0          # how often a queue loop went idle (tests)
        self._events: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # event loop → its Event

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
        ev.clear()   # the loop looks at its queue next: a push after this sets it again
        return result


def wake_queue_on_push() -> WakeableSleep | None:
    """Gradio's queue loop sleeps ``QUEUE_IDLE_S`` when idle and is woken by ``Queue.push`` (a new
    event) and by the end of ``Queue.process_events`` (a job slot freed), instead of looking every
    ``sleep_when_free``. Installed once per process; None if this Gradio lacks what it wraps."""
    import gradio.queueing as gq

    if isinstance(gq.asyncio, WakeableSleep):
        return gq.asyncio
    if not all(hasattr(gq.Queue, name) for name in ("push", "process_events", "start_processing")):
        log.warning("gradio.queueing.Queue lacks push/process_events: its queue keeps polling")
        return None
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
    return shim


def relax_queue_polling(demo) -> None:
    q = getattr(demo, "_queue", None)
    if q is not None and hasattr(q, "sleep_when_free"):
        q.sleep_when_free = QUEUE_IDLE_S if wake_queue_on_push() else max(q.sleep_when_free, QUEUE_POLL_S)
    if q is not None and hasattr(q, "progress_update_sleep_when_free"):
        q.progress_update_sleep_when_free = max(q.progress_update_sleep_when_free, PROGRESS_POLL_S)


def slow_server_ticks() -> bool:
    """Gradio's uvicorn server ticks once a second instead of 10 times. ``on_tick(counter)`` does
    its once-a-second work when ``counter % 10 == 0``, so the counter steps by 10."""
    import uvicorn
    from gradio.http_server import Server

    if not (hasattr(uvicorn.Server, "main_loop") and hasattr(uvicorn.Server, "on_tick")):
        log.warning("uvicorn.Server has no main_loop/on_tick: its 0.1 s tick is left as it is")
        return False
    steps = max(1, round(SERVER_TICK_S / 0.1))

    async def main_loop(self) -> None:
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + steps) % 864000
            await asyncio.sleep(SERVER_TICK_S)
            should_exit = await self.on_tick(counter)

    Server.main_loop = main_loop
    return True


def wait_until_interrupted(demo) -> None:
    """Serve until Ctrl-C. (Gradio's ``block_thread`` wakes the main thread 10 times a second to
    look at a flag; this sleeps until a signal.) Runs keep training: they are not our children."""
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        print("Interrupted: closing the studio (runs keep training).", flush=True)
    finally:
        demo.close()
