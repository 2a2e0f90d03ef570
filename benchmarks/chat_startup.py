"""A chat model's start: from the studio's first message to its model loaded and listening
(``ChatService.ensure``), forked from the preloaded fork server (the studio's way since 2026-11-28) against a fresh
interpreter, in one process, alternating. The base model of the shipped demo; the fork server ready, as it is once
the studio has launched, evaluated or chatted once. Written to benchmarks/results/chat_startup.json.

    python -m benchmarks.chat_startup [--rounds 4]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from aworld_gui.core.chat_client import ChatService
from benchmarks.results_file import write_result
from engines.core.modules import Modules
from engines.core.prepare import prepare_run
from engines.runs.launcher import Launcher
from testing import letters_demo as d


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    runs = Path(tempfile.mkdtemp()) / "runs"
    run = prepare_run(
        Modules(d.AGENT, d.TRAIN, d.TEST, d.REWARD, {"max_steps": 1}, train_engine_name="trl"), runs_dir=str(runs)
    )
    launcher = Launcher().start()
    assert launcher._settled.wait(300) and launcher.ready(), launcher._failed
    seconds: dict[str, list[float]] = {"forked": [], "fresh": []}
    try:
        for i in range(args.rounds):
            for how in ("forked", "fresh") if i % 2 == 0 else ("fresh", "forked"):
                chat = ChatService(runs, launcher=launcher if how == "forked" else None)
                t0 = time.perf_counter()
                chat.ensure(str(run.path), "base")
                seconds[how].append(round(time.perf_counter() - t0, 3))
                assert (chat._proc.popen is None) == (how == "forked")
                chat.stop()
    finally:
        launcher.close()
    summary = {how: {"median_s": statistics.median(v), "all_s": v} for how, v in seconds.items()}
    print(summary)
    write_result("chat_startup.json", summary)


if __name__ == "__main__":
    main()
