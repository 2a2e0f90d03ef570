"""Server push for the Monitor: one Server-Sent-Events stream per watching page.

A page that shows a run asks for a *ticket* (a server function of the run header, so it passes
Gradio's login like every other call), then opens ``EventSource("aworld/live/<ticket>")``. The
stream's loop reads the run's new bytes every ``poll_s`` (:meth:`MonitorTab.live`, in a worker
thread: the first read of a long run loads its whole history) and sends a message only when a part
the page shows changed; a heavy part (curves, log, trajectories) at most every ``every[part]``
seconds: a part that changed meanwhile is owed and goes with the first message after that.

Why not the page polling the studio: each ``fetch`` costs the browser a request's worth of work in
three processes (page, network service, browser) and the studio a whole FastAPI request; a message
on an open stream costs one read. With the browser on the training machine itself that difference
is training time (benchmarks/gui_overhead.py).

A ticket is a 128-bit secret naming what to watch (run, view generation, picked metrics,
smoothing); it stays valid while streams use it and for ``ttl_s`` after the last one closed.
EventSource reconnects by itself; after a studio restart the ticket is unknown (404, the stream
closes) and the page asks for a new one.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

PARTS = ("header", "charts", "samples", "log", "events")
HEAVY = ("charts", "samples", "log")


@dataclass
class Watch:
    run_id: str
    gen: str
    picks: list[str]
    smoothing: float
    locale: str = "en"  # the page's language: what the stream's HTML is translated to
    streams: int = 0
    last_used: float = 0.0  # on the streams' clock


class LiveStreams:
    """Tickets and the ``/aworld/live/{ticket}`` route. ``live`` is :meth:`MonitorTab.live`;
    ``every`` the least seconds between two sends of each heavy part (default: every poll), on ``clock``:
    a part's pace is kept between the stream's decisions to send it, read on this clock before each poll."""

    PATH = "/aworld/live/{ticket}"

    def __init__(
        self,
        live: Callable[..., dict],
        poll_s: float,
        every: dict[str, float] | None = None,
        ttl_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.live, self.poll_s, self.ttl_s, self.clock = live, poll_s, ttl_s, clock
        self.every = {part: float((every or {}).get(part, 0.0)) for part in HEAVY}
        self._watches: dict[str, Watch] = {}
        self._lock = threading.Lock()

    def ticket(
        self, run_id: str, gen: str, picks: list[str] | None, smoothing: float | None, locale: str | None = None
    ) -> str:
        now = self.clock()
        with self._lock:
            for t, w in list(self._watches.items()):  # forget tickets nobody has streamed for a while
                if w.streams == 0 and now - w.last_used > self.ttl_s:
                    del self._watches[t]
            t = secrets.token_urlsafe(16)
            self._watches[t] = Watch(
                str(run_id),
                str(gen or ""),
                [str(p) for p in (picks or []) if p],
                float(smoothing or 0.0),
                locale=str(locale or "en"),
                last_used=now,
            )
        return t

    def watch(self, ticket: str) -> Watch | None:
        with self._lock:
            return self._watches.get(ticket)

    async def messages(self, w: Watch):
        """The stream's text: a message whenever what the page shows changed."""
        keys: dict[str, Any] = {}
        last_sent = {part: -1e9 for part in HEAVY}
        with self._lock:
            w.streams += 1
        try:
            yield "retry: 2000\n\n"  # EventSource's reconnect delay (ms)
            while True:
                now = self.clock()
                due = {part for part, every in self.every.items() if now - last_sent[part] >= every - 1e-3}
                out = await asyncio.to_thread(self.live, w.run_id, w.gen, w.picks, w.smoothing, keys, due, w.locale)
                for part in HEAVY:
                    if out.get(part) is not None:
                        last_sent[part] = now
                if any(out.get(p) is not None for p in PARTS):
                    yield "data: " + json.dumps(out, separators=(",", ":")) + "\n\n"
                keys = out["keys"]
                await asyncio.sleep(self.poll_s)
        finally:
            with self._lock:
                w.streams -= 1
                w.last_used = self.clock()

    def route(self):
        """The stream's route, served ahead of Gradio's catch-all routes (see ``page.launch_kwargs``)."""
        from starlette.responses import PlainTextResponse, StreamingResponse
        from starlette.routing import Route

        async def stream(request):
            w = self.watch(request.path_params["ticket"])
            if w is None:
                return PlainTextResponse("unknown or expired ticket: ask the page for a new one", status_code=404)
            return StreamingResponse(
                self.messages(w),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )

        return Route(self.PATH, stream, methods=["GET"])
