#!/usr/bin/env python
"""Cost of one Monitor refresh tick on a run with 100,000 logged steps (target: ≤ 20 ms), and how
that cost depends on the run's history (it should not) and on the new lines per tick (it should).

    python -m benchmarks.gui_tick [--steps 100000] [--ticks 200]

A "tick" is one turn of the Monitor's stream loop (``MonitorTab.live``, which
aworld_gui/core/live_stream.py runs every 0.5 s for each watching page) with everything due at once — the worst case: read the new bytes, update the
series, render the header, draw the reward, loss and a two-metric custom curve as SVG, the
trajectories, the log tail and the events, and encode the message as JSON. Lines (and a sample) are
appended to the run between ticks. Reported in wall time and in CPU time of the calling thread.
Writes benchmarks/results/gui_tick.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from aworld_gui.core import run_cache
from aworld_gui.core.run_cache import RunCache
from aworld_gui.core.studio import Studio
from benchmarks.results_file import pct, write_result
from engines.runs.rundir import RunDir
from engines.runs.json_lines import dumps_line
from testing.fake_run import metric_row, write_history


class _NoWorker:
    """The Monitor never touches the check worker; keep the benchmark free of its start-up."""

    def start(self) -> None:
        pass

    def close(self) -> None:
        pass


def stats(wall: list[float], cpu: list[float]) -> dict:
    return {
        "wall_ms": {
            "p50": round(1000 * statistics.median(wall), 2),
            "p95": round(1000 * pct(wall, 0.95), 2),
            "max": round(1000 * max(wall), 2),
        },
        "cpu_ms": {"p50": round(1000 * statistics.median(cpu), 2), "p95": round(1000 * pct(cpu, 0.95), 2)},
    }


def measure(history: int, ticks: int, new_per_tick: int, base: Path) -> dict:
    from aworld_gui.tabs.monitor_tab import MonitorTab

    runs = base / f"runs-{history}-{new_per_tick}"
    run = RunDir.create(runs, "bench")
    run.write_spec({"engine": "bench", "agent": {"model": "/models/x"}})
    run.mark_process("running", started=time.time() - history * 0.1, step=history, total_steps=history * 2)
    write_history(run, history)
    tab = MonitorTab(Studio(runs, worker=_NoWorker(), cache=RunCache()))
    t0 = time.perf_counter()
    out = tab.live(run.run_id, "bench", [], 0.6, {})  # reattach: loads the whole history
    first = time.perf_counter() - t0
    wall, cpu, sizes = [], [], []
    step = history
    for _ in range(ticks):
        with open(run.file("metrics.jsonl"), "a", encoding="utf-8") as f:
            for _ in range(new_per_tick):
                step += 1
                f.write(dumps_line(metric_row(step, time.time())))
        run.write_status(step=step)
        run.append_sample({"step": step, "prompt": "Say A", "completion": "A", "rewards": {"r": 1.0}, "reward": 1.0})
        w0, c0 = time.perf_counter(), time.thread_time()
        # everything due (empty keys): header, reward/loss/custom curves, trajectories, log, events
        out = tab.live(run.run_id, "bench", ["kl", "lr"], 0.6, {})
        body = json.dumps(out)  # what the server sends back
        cpu.append(time.thread_time() - c0)
        wall.append(time.perf_counter() - w0)
        sizes.append(len(body))
    reward_svg = out["charts"]["reward"]
    return {
        "history_steps": history,
        "new_lines_per_tick": new_per_tick,
        "ticks": ticks,
        "first_load_s": round(first, 3),
        "tick": stats(wall, cpu),
        "reward_curve_points": int(reward_svg.split('data-points="')[1].split('"')[0]),
        "reply_kb": round(statistics.median(sizes) / 1024, 1),
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=100_000)
    p.add_argument("--ticks", type=int, default=200)
    a = p.parse_args()
    run_cache.MIN_REFRESH_S = 0.0  # measure every tick's read (browser tabs share reads in the studio)
    results = []
    with tempfile.TemporaryDirectory() as d:
        base = Path(d)
        for history, new in ((a.steps, 5), (a.steps, 1), (a.steps, 50), (10_000, 5), (1_000, 5)):
            r = measure(history, a.ticks, new, base)
            results.append(r)
            print(json.dumps(r), flush=True)
    main_case = results[0]
    summary = {
        "benchmark": "gui_tick",
        "what": (
            "one turn of the Monitor's stream loop with every part due (header, 3 SVG curves, trajectories, log, "
            f"events, JSON-encoded) on a run with {a.steps} logged steps, 5 new lines per tick"
        ),
        "target": "p95 <= 20 ms",
        "p95_ms": main_case["tick"]["wall_ms"]["p95"],
        "passed": main_case["tick"]["wall_ms"]["p95"] <= 20.0,
        "cases": results,
    }
    out = write_result("gui_tick.json", summary)
    print(f"tick p95 {summary['p95_ms']} ms on {a.steps} steps (target ≤ 20 ms) → {out}")
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
