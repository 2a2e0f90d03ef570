"""Keep an idle studio page from costing the training machine CPU.

Gradio 6's ``StatusTracker`` (the loading indicator of every component and of the app itself) runs a
``requestAnimationFrame`` loop for its elapsed-time label while a status is pending, and the app's
loading tracker leaves that loop running after the page has loaded (even a one-textbox Gradio 6.31
app does this). A browser on the training machine then wakes 60 times a second for nothing: measured
here, ~8 % of a core for Chromium on an idle page, taken from a 2-core training run.

The fix serves the tracker's script with its frame request slowed to 1 a second (``THROTTLE_MS``):
the elapsed-time label of a running event still ticks (by whole seconds), and the leaked loop costs
~1/60 of before. Each frame wakes the page, Chromium's compositor and its GPU process, and on a
2-core machine every such wake-up preempts a training thread that its partner then waits for. (Going
from 4 frames a second to 1 did not change a watching page's CPU measurably on its own; together with
the Monitor's poll going from 0.4 s to 0.5 s, Chromium went from ~7.4 % to ~5.7 % of a core,
benchmarks/gui_overhead.py.)
The script is Gradio's own file, patched in memory at start; if a Gradio version no longer has the
pattern, nothing is changed and a warning is logged (tests/test_browser_studio.py then fails on the
idle page's frame rate, so the regression cannot pass unnoticed).
"""
from __future__ import annotations

import logging
import re
from pathlib import Path

log = logging.getLogger(__name__)

THROTTLE_MS = 1000
PATTERN = re.compile(r"typeof window<`u`\?window\.requestAnimationFrame:")
REPLACEMENT = f"typeof window<`u`?(f=>setTimeout(()=>window.requestAnimationFrame(f),{THROTTLE_MS})):"


def patched_statustracker() -> tuple[str, str] | None:
    """(asset file name, patched JavaScript) of Gradio's StatusTracker chunk, or None."""
    import gradio

    assets = Path(gradio.__file__).parent / "templates" / "frontend" / "assets"
    for path in sorted(assets.glob("statustracker-*.js")):
        text = path.read_text(encoding="utf-8")
        patched, n = PATTERN.subn(REPLACEMENT, text, count=1)
        if n:
            return path.name, patched
    return None


def install(app) -> bool:
    """Serve the patched chunk ahead of Gradio's ``/assets/{path}`` route on a launched app's
    FastAPI ``app``. Returns whether it was installed."""
    from starlette.responses import Response
    from starlette.routing import Route

    found = patched_statustracker()
    if found is None:
        log.warning("Gradio's StatusTracker chunk has no known frame loop: idle pages are not throttled")
        return False
    name, body = found

    async def statustracker(request):
        return Response(body, media_type="text/javascript", headers={"Cache-Control": "no-cache"})

    app.router.routes.insert(0, Route(f"/assets/{name}", statustracker, methods=["GET"]))
    return True
