"""The studio with Gradio answers held back: ``python -m testing.late_answers SECONDS [--only NAME] <aworld-studio
args>``.

A loaded studio (or network) delivers an event's answer late while the Monitor's stream, on its own connection,
keeps delivering. Browser tests run the studio this way to order the two as load does, every time. Each queued
event's handler runs at once; its answer is sent ``SECONDS`` later (a wrapper of Gradio's
``route_utils.call_process_api``, for tests only — the studio's own patches are in aworld_gui/web/gradio_patches.py).

``--only NAME`` holds only the answers of the handler ``NAME`` run after another (a ``.then``): one answer late
among others on time, as load orders them now and then (the Runs tab's ``refresh`` after the tab's pick lands after
the timer's next one). Where ``$AWORLD_LATE_ANSWERS_LOG`` is set, each held answer is noted there twice: ``ran NAME``
once its handler has run, ``answered NAME`` when it is sent.
"""

from __future__ import annotations

import asyncio
import os
import sys


def hold_answers(seconds: float, only: str | None = None) -> None:
    from gradio import route_utils

    answer = route_utils.call_process_api
    log = os.environ.get("AWORLD_LATE_ANSWERS_LOG")

    def note(line: str) -> None:
        if log:
            with open(log, "a", encoding="utf-8") as f:
                f.write(line + "\n")

    def held(fn) -> bool:
        if only is None:
            return True
        name = getattr(getattr(fn, "fn", None), "__name__", None)
        return name == only and getattr(fn, "trigger_after", None) is not None

    async def late(*args, **kwargs):
        fn = kwargs.get("fn", args[3] if len(args) > 3 else None)
        out = await answer(*args, **kwargs)
        if held(fn):
            note(f"ran {getattr(fn.fn, '__name__', '?')}")
            await asyncio.sleep(seconds)
            note(f"answered {getattr(fn.fn, '__name__', '?')}")
        return out

    route_utils.call_process_api = late


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    seconds, rest = float(args[0]), args[1:]
    only = None
    if rest[:1] == ["--only"]:
        only, rest = rest[1], rest[2:]
    # A studio whose environment holds what looks like a credential starts itself again at once, as
    # ``aworld_gui.web.serve`` (aworld_gui/web/clean_start.py): without this module, nothing held. A test studio needs
    # none of them (a variable named like TOX_TESTENV_PASSENV was enough to lose the late answers).
    from aworld_gui.web import clean_start

    for name in clean_start.credential_names(os.environ):
        os.environ.pop(name)
    if clean_start.needed(rest, os.environ):
        raise SystemExit("testing.late_answers: a studio with a login restarts without this module; give it none")
    hold_answers(seconds, only)
    from aworld_gui.web.serve import main as serve

    return serve(rest)


if __name__ == "__main__":
    sys.exit(main())
