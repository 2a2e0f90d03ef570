"""The studio with every Gradio answer held back: ``python -m testing.late_answers SECONDS <aworld-studio args>``.

A loaded studio (or network) delivers an event's answer late while the Monitor's stream, on its own connection,
keeps delivering. Browser tests run the studio this way to order the two as load does, every time. Each queued
event's handler runs at once; its answer is sent ``SECONDS`` later (a wrapper of Gradio's
``route_utils.call_process_api``, for tests only — the studio's own patches are in aworld_gui/web/gradio_patches.py).
"""

from __future__ import annotations

import asyncio
import sys


def hold_answers(seconds: float) -> None:
    from gradio import route_utils

    answer = route_utils.call_process_api

    async def late(*args, **kwargs):
        out = await answer(*args, **kwargs)
        await asyncio.sleep(seconds)
        return out

    route_utils.call_process_api = late


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    hold_answers(float(args[0]))
    from aworld_gui.web.serve import main as serve

    return serve(args[1:])


if __name__ == "__main__":
    sys.exit(main())
