#!/usr/bin/env python
"""Cost of one Monitor refresh tick on a run with 100,000 logged steps (target: ≤ 20 ms), and how
that cost depends on the run's history (it should not) and on the new lines per tick (it should).

    python benchmarks/gui_tick.py [--steps 100000] [--ticks 200]

A "tick" here is one refresh of everything the Monitor shows at once (the header tick and the
slow tick together, the worst case): read the new bytes, update the series, render the header,
build both curves and a custom-metrics curve, the trajectories/log/events parts, and Gradio's
postprocessing of every output (``Blocks.process_api`` on an event with the Monitor's outputs).
Lines (and a sample) are appended to the run between ticks. Reported in wall time and in CPU time of
the calling thread. Writes benchmarks/results/gui_tick.json.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aworld_gui import monitor  # noqa: E402
from aworld_gui.fake_run import metric_row, write_history  # noqa: E402
from aworld_gui.monitor import RunCache  # noqa: E402
from aworld_gui.studio import Studio  # noqa: E402
from engines.rundir import RunDir, dumps_line  # noqa: E402


class _NoWorker:
    """The Monitor never touches the check worker; keep the benchmark free of its start-up."""

    def start(self) -> None:
        pass

    def close(self) -> None:
        pass


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * len(s))) - 1))]


def stats(wall: list[float], cpu: list[float]) -> dict:
    return {"wall_ms": {"p50": round(1000 * statistics.median(wall), 2), "p95": round(1000 * pct(wall, .95), 2),
                        "max": round(1000 * max(wall), 2)},
            "cpu_ms": {"p50": round(1000 * statistics.median(cpu), 2), "p95": round(1000 * pct(cpu, .95), 2)}}


async def measure(history: int, ticks: int, new_per_tick: int, base: Path) -> dict:
    import gradio as gr
    from gradio.state_holder import SessionState

    from aworld_gui.monitor_tab import MonitorTab

    runs = base / f"runs-{history}-{new_per_tick}"
    run = RunDir.create(runs, "bench")
    run.write_spec({"engine": "bench", "agent": {"model": "/models/x"}})
    run.mark_process("running", started=time.time() - history * 0.1, step=history, total_steps=history * 2)
    write_history(run, history)
    tab = MonitorTab(Studio(runs, worker=_NoWorker(), cache=RunCache()))
    view: dict = {}

    def one_refresh(run_id, picks, smoothing):
        return tab.update(run_id, picks, smoothing, view)

    with gr.Blocks() as demo:
        ui = tab.build()
        gr.Button().click(one_refresh, [ui.run, ui.picker, ui.smoothing], tab.outputs())
    block_fn = next(iter(demo.fns.values()))
    state = SessionState(demo)

    async def call():
        return await demo.process_api(block_fn=block_fn, inputs=[run.run_id, [], 0.6], state=state,
                                      session_hash="bench")

    t0 = time.perf_counter()
    out = await call()                      # reattach: loads the whole history
    first = time.perf_counter() - t0
    wall, cpu = [], []
    step = history
    for _ in range(ticks):
        with open(run.file("metrics.jsonl"), "a", encoding="utf-8") as f:
            for _ in range(new_per_tick):
                step += 1
                f.write(dumps_line(metric_row(step, time.time())))
        run.write_status(step=step)
        run.append_sample({"step": step, "prompt": "Say A", "completion": "A", "rewards": {"r": 1.0}, "reward": 1.0})
        w0, c0 = time.perf_counter(), time.thread_time()
        out = await call()
        cpu.append(time.thread_time() - c0)
        wall.append(time.perf_counter() - w0)
    reward = out["data"][1]
    return {"history_steps": history, "new_lines_per_tick": new_per_tick, "ticks": ticks,
            "first_load_s": round(first, 3), "tick": stats(wall, cpu),
            "reward_plot_points": len(reward["data"]) if isinstance(reward, dict) and "data" in reward else None}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=100_000)
    p.add_argument("--ticks", type=int, default=200)
    a = p.parse_args()
    monitor.MIN_REFRESH_S = 0.0  # measure every tick's read (browser tabs share reads in the studio)
    results = []
    with tempfile.TemporaryDirectory() as d:
        base = Path(d)
        for history, new in ((a.steps, 5), (a.steps, 1), (a.steps, 50), (10_000, 5), (1_000, 5)):
            r = asyncio.run(measure(history, a.ticks, new, base))
            results.append(r)
            print(json.dumps(r), flush=True)
    main_case = results[0]
    summary = {
        "benchmark": "gui_tick",
        "what": ("one Monitor refresh with every part due (header, 3 curves, trajectories, log, events) through "
                 f"Gradio's postprocessing, on a run with {a.steps} logged steps, 5 new lines per tick"),
        "target": "p95 <= 20 ms",
        "p95_ms": main_case["tick"]["wall_ms"]["p95"],
        "passed": main_case["tick"]["wall_ms"]["p95"] <= 20.0,
        "cases": results,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_avg_1m": round(os.getloadavg()[0], 2)},
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    out = ROOT / "benchmarks" / "results" / "gui_tick.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"tick p95 {summary['p95_ms']} ms on {a.steps} steps (target ≤ 20 ms) → {out}")
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
