"""Keep an idle studio page from costing the training machine CPU.

Gradio 6's ``StatusTracker`` (the loading indicator of every component and of the app itself) runs a
``requestAnimationFrame`` loop for its elapsed-time label while a status is pending, and the app's
loading tracker leaves that loop running after the page has loaded (even a one-textbox Gradio 6.31
app does this). A browser on the training machine then wakes 60 times a second for nothing: measured
here, ~8 % of a core for Chromium on an idle page, taken from a 2-core training run.

The studio serves that script patched (in memory, at start): the loop ends as soon as its
tracker's status is no longer pending (and is started again by the next pending status), and while
an event is pending its frames come once every ``THROTTLE_MS`` (the elapsed-time label ticks by
whole seconds). Each frame wakes the page, Chromium's compositor and its GPU process, and on a
2-core machine every such wake-up preempts a training thread that its partner then waits for.
Measured here: the idle page once the checks are done asks for at most 1 frame in 3 s (throttled only, the
leaked loop cost 3; unpatched, 180).
If a Gradio version no longer has the patterns, nothing is changed and a warning is logged
(tests/test_browser_studio.py then fails on the idle page's frame count, so the regression cannot
pass unnoticed).
"""
from __future__ import annotations

import logging
import re
from pathlib import Path

log = logging.getLogger(__name__)

THROTTLE_MS = 1000
PATTERN = re.compile(r"typeof window<`u`\?window\.requestAnimationFrame:")
REPLACEMENT = f"typeof window<`u`?(f=>setTimeout(()=>window.requestAnimationFrame(f),{THROTTLE_MS})):"
# The elapsed-time loop, ``function ze(){me(()=>{F(Pe,(performance.now()-w(de))/1e3),W&&ze()})}``, goes
# on while its flag ``W`` is set; the tracker's status effect (``o.status===`pending`?Ve():…``) clears
# it, but a tracker whose status turns complete without that effect running keeps ticking for ever.
LOOP = re.compile(r"(function (\w+)\(\)\{\w+\(\(\)=>\{\w+\(\w+,\(performance\.now\(\)-\w+\(\w+\)\)/1e3\),)"
                  r"(\w+)&&\2\(\)\}\)\}")
STATUS = re.compile(r"(\w+)\.status===`pending`\?\w+\(\):")


def patch(text: str) -> str | None:
    """Gradio's StatusTracker chunk with its elapsed-time loop ended once the status is no longer
    pending (the flag cleared, so the next pending status starts it again) and its frames slowed to
    one every ``THROTTLE_MS``; None if the chunk lacks either pattern."""
    loop = LOOP.search(text)
    status = STATUS.search(text, loop.end()) if loop else None   # the same component's status effect
    if not (loop and status and PATTERN.search(text)):
        return None
    head, fn, flag = loop.groups()
    ended = f"{head}{flag}&&({status.group(1)}.status===`pending`?{fn}():{flag}=!1)}})}}"
    text = text[:loop.start()] + ended + text[loop.end():]
    return PATTERN.sub(REPLACEMENT, text, count=1)


def patched_statustracker() -> tuple[str, str] | None:
    """(asset file name, patched JavaScript) of Gradio's StatusTracker chunk, or None."""
    import gradio

    assets = Path(gradio.__file__).parent / "templates" / "frontend" / "assets"
    for path in sorted(assets.glob("statustracker-*.js")):
        patched = patch(path.read_text(encoding="utf-8"))
        if patched is not None:
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
