"""Fewer wake-ups for a studio that shares its machine with training.

On the 2-core VMs this project runs on, every wake-up of the studio's event loop costs ~0.3 ms of
CPU (a bare asyncio loop woken 34 times a second uses ~1 % of a core), and on a machine whose cores
are busy training each one preempts a torch thread that its partner then waits for. Three timers
wake a Gradio app when nothing happens:

* Gradio's queue loop looks for new events every 1 ms (``Queue.sleep_when_free``) and its progress
  loop every 10 ms;
* uvicorn's server loop wakes every 0.1 s to refresh the ``Date`` header and look at its exit flag;
* ``Blocks.block_thread`` wakes the main thread every 0.1 s (``wait_until_interrupted`` sleeps
  until a signal instead).

Measured on an idle studio (20 s, no page open), CPU of its event-loop thread: 0.97 % of a core
(31 wake-ups/s) with the queue at 50 ms and uvicorn at 0.1 s; 0.38 % (12 wake-ups/s) with these.
(Internal attributes of Gradio 6 and uvicorn; each is left alone if a version lacks it.)
"""
from __future__ import annotations

import asyncio
import logging
import threading

log = logging.getLogger(__name__)

QUEUE_POLL_S = 0.1       # before an event starts: not felt next to a click's round trip
PROGRESS_POLL_S = 1.0    # nothing here reports progress through the queue (no gr.Progress)
SERVER_TICK_S = 1.0      # uvicorn: Date header once a second as before; exit seen within 1 s


def relax_queue_polling(demo) -> None:
    q = getattr(demo, "_queue", None)
    if q is not None and hasattr(q, "sleep_when_free"):
        q.sleep_when_free = max(q.sleep_when_free, QUEUE_POLL_S)
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
