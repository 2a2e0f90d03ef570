#!/usr/bin/env python
"""Training speed with the studio watching vs without it, within ONE run (target: ratio ≥ 0.98).

    python -m benchmarks.gui_overhead [--pairs 120] [--phase 4.8] [--watcher browser|remote|none]

Starts the studio, launches the shipped letters demo on the trl engine through the API (a long
``max_steps`` so it trains throughout), opens its Monitor in Chromium, then alternates phases in an
A-B-B-A order:

* watching: the studio and the watcher run normally;
* without: the studio's process group (app + check worker) and the watcher are frozen with SIGSTOP,
  so they use no CPU at all — as if neither existed. The run itself, in its own process session, is
  never touched.

The watcher:

* ``browser`` (default): the headless Chromium showing the Monitor (header pushed every
  ``monitor_tab.POLL_S``, log tail every ``LOG_S``, curves every ``CHART_S``, trajectories every
  ``SAMPLES_S``), on the training machine itself — the worst case. Chromium is started as its own
  process and Playwright only drives it to the Monitor, then disconnects: the test driver's
  DevTools traffic is not part of what a user's browser costs.
* ``remote``: the page's browser is on another machine (the usual case for a GPU box). Emulated by
  closing Chromium once the page has opened its stream and reading that same stream with ``curl``:
  the studio does exactly the work of serving a watching page, and nothing renders here.
* ``none``: the control (A/A). Nothing watches and nothing is frozen in either phase: the spread of
  its ratio is this benchmark's own noise on this machine.

Steps/s per phase come from the run's own metrics.jsonl timestamps: whole step intervals inside the
phase (which starts just before its switch signal). Comparing phases of the same run removes
run-to-run variance (±30 % on these machines). Within a run the speed wanders too, and about as
much between neighbouring single steps as between neighbouring 20-step blocks (the log-ratio's
spread is ~0.12 either way), so precision comes from many short phases, not long ones: 120 pairs
of 4.8 s.

What a watching phase holds: a thawed studio sends at once what fell due while it was frozen, so
with no settling margin (the default) each watching phase also carries that catch-up message and
Chromium's catch-up work, more than a steady watcher does (conservative). The page records every
message it receives (an init script, before the page loads); ``received_per_s`` gives, per part,
the messages handled inside watching phases per second of them, next to the steady pace.
Reported:
``ratio`` (steps/s watching ÷ without, the goal's measure) with a 95 % bootstrap interval over the
pairs, and ``median_step_ratio`` (the median step's duration without ÷ watching), which the few
long steps of a phase do not sway. Run ``--watcher none`` (A/A) to see the noise floor.
Writes benchmarks/results/gui_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

from aworld_gui.core import inputs as inp
from aworld_gui.tabs.monitor_tab import CHART_S, LOG_S, POLL_S, SAMPLES_S
from benchmarks import results_file
from benchmarks.results_file import write_result
from engines.isolation.processes import terminate_tree
from engines.runs.rundir import RunDir
from engines.runs.json_lines import iter_jsonl
from testing import free_port
from testing.studio import CHROMIUM, CHROMIUM_ARGS, StudioProcess

ROOT = Path(__file__).resolve().parent.parent

# Injected before the page loads: the page notes each message of its live stream as it handles it
# (a list append; read back once the phases are over).
RECORD_JS = r"""
(() => {
  const ES = window.EventSource, got = window.__awReceived = [];
  window.EventSource = class extends ES {
    constructor(url, opts) {
      super(url, opts);
      if (String(url).includes('aworld/live/')) this.addEventListener('message', e => {
        const d = e.data;
        got.push([Date.now() / 1000, d.includes('"header":"'), d.includes('"log":"'), d.includes('"charts":{'),
                  d.includes('"samples":"')]);
      });
    }
  };
})();
"""
PARTS = ("header", "log", "charts", "samples")  # RECORD_JS's columns after the time

CONFIG = "learning_rate: 0.001\nprompts_per_step: 8\nnum_generations: 16\nmax_steps: 100000\nsave_steps: 100000\n"


def process_tree(proc: subprocess.Popen | None) -> list[psutil.Process]:
    """A process and all its descendants (Chromium: browser, zygotes, renderer, GPU and utility
    processes)."""
    if proc is None or proc.poll() is not None:
        return []
    try:
        root = psutil.Process(proc.pid)
        return [root] + root.children(recursive=True)
    except psutil.Error:
        return []


def freeze(studio: StudioProcess, watcher: subprocess.Popen | None, sig: int) -> None:
    os.killpg(studio.proc.pid, sig)
    for p in process_tree(watcher):
        try:
            p.send_signal(sig)
        except psutil.Error:
            pass


def start_chromium(profile: str) -> tuple[subprocess.Popen, int]:
    """Chromium as a process of its own (not Playwright's child), with a DevTools port to drive it."""
    port = free_port()
    proc = subprocess.Popen(
        [
            CHROMIUM,
            "--headless",
            f"--remote-debugging-port={port}",
            f"--user-data-dir={profile}",
            "--window-size=1440,1000",
            *CHROMIUM_ARGS,
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=2):
                return proc, port
        except OSError:
            time.sleep(0.3)
    terminate_tree(proc.pid)
    raise TimeoutError("Chromium did not open its DevTools port")


def open_monitor(pw, port: int, url: str) -> str:
    """Drive the Chromium on ``port`` to the Monitor of the running run, then disconnect. Returns
    the URL of the stream the page opened."""
    browser = pw.chromium.connect_over_cdp(f"http://127.0.0.1:{port}")
    page = browser.contexts[0].pages[0]
    page.add_init_script(RECORD_JS)
    page.goto(url)
    page.get_by_role("tab", name="Monitor").click()
    page.wait_for_selector('#run-header [data-testid="run-header"][data-state="running"]', timeout=60_000)
    stream = page.wait_for_selector("[data-stream]", state="attached", timeout=30_000).get_attribute(
        "data-stream"
    )  # the page's open stream (monitor_tab.LIVE_JS)
    (ROOT / "artifacts" / "screenshots").mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ROOT / "artifacts" / "screenshots" / "bench-gui-overhead.png"))
    browser.close()  # connected over CDP: disconnects; Chromium and the page stay
    return stream


def received_messages(pw, port: int) -> list[list]:
    """What the page's stream delivered: [time, header?, log?, charts?, samples?] per message."""
    browser = pw.chromium.connect_over_cdp(f"http://127.0.0.1:{port}")
    try:
        return browser.contexts[0].pages[0].evaluate("() => window.__awReceived || []")
    finally:
        browser.close()


def received_per_s(phases: list[dict], messages: list[list]) -> dict[str, float]:
    """Messages per part handled by the page inside the watching phases, per second of them."""
    windows = [x["window"] for x in phases if x["mode"] == "watching"]
    seconds = sum(b - a for a, b in windows)
    inside = [m for m in messages if any(a <= m[0] < b for a, b in windows)]
    return {
        part: round(sum(1 for m in inside if m[1 + i]) / seconds, 3) if seconds else 0.0 for i, part in enumerate(PARTS)
    }


def cpu_seconds(procs: list[psutil.Process]) -> float:
    total = 0.0
    for proc in procs:
        try:
            t = proc.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def cpu_groups(
    studio: StudioProcess, watcher: subprocess.Popen | None, run_pid: int | None
) -> dict[str, list[psutil.Process]]:
    """Where the CPU goes: the studio (app + its check worker), the watcher (every Chromium process,
    or curl), the run (its whole process tree: the studio spawned it, so it is left out of the
    studio's)."""
    run: list[psutil.Process] = []
    if run_pid:
        run_proc = psutil.Process(run_pid)
        run = [run_proc] + run_proc.children(recursive=True)
    in_run = {p.pid for p in run}
    app = psutil.Process(studio.proc.pid)
    return {
        "studio": [app] + [c for c in app.children(recursive=True) if c.pid not in in_run],
        "watcher": process_tree(watcher),
        "run": run,
    }


def step_times(run: RunDir, t0: float, t1: float) -> list[float]:
    """When each step inside [t0, t1) was logged: whole step intervals only, so a short phase is not
    off by a fraction of a step."""
    return sorted(
        r["time"] for r in iter_jsonl(run.file("metrics.jsonl")) if "loss" in r and t0 <= r.get("time", 0) < t1
    )


def measure(a: argparse.Namespace, studio: StudioProcess, watcher: subprocess.Popen | None, run: RunDir) -> list[dict]:
    """The A-B-B-A phases: steps/s and CPU per group in each."""
    phases: list[dict] = []
    order = []
    for i in range(a.pairs):
        order += ["watching", "without"] if i % 2 == 0 else ["without", "watching"]
    frozen = False
    try:
        for mode in order:
            # The phase starts before the switch (with no settling margin): what a thawed studio
            # and browser do first, the catch-up, is counted in it.
            groups = cpu_groups(studio, watcher, run.read_status().get("pid"))
            c0 = {k: cpu_seconds(v) for k, v in groups.items()}
            t0 = time.time()
            want_frozen = mode == "without"
            if want_frozen != frozen and a.watcher != "none":
                freeze(studio, watcher, signal.SIGSTOP if want_frozen else signal.SIGCONT)
                frozen = want_frozen
            if a.settle:
                time.sleep(a.settle)
                c0 = {k: cpu_seconds(v) for k, v in groups.items()}
                t0 = time.time()
            time.sleep(max(0.0, t0 + a.phase - time.time()))
            t1 = time.time()
            cpu = {k: round(100 * (cpu_seconds(v) - c0[k]) / (t1 - t0), 1) for k, v in groups.items()}
            times = step_times(run, t0, t1)
            n, dt = max(0, len(times) - 1), (times[-1] - times[0] if len(times) > 1 else 0.0)
            phases.append(
                {
                    "mode": mode,
                    "window": [round(t0, 3), round(t1, 3)],
                    "steps": n,
                    "seconds": round(dt, 3),
                    "steps_per_s": round(n / dt, 3) if dt else 0.0,
                    "step_s": [round(b - a, 4) for a, b in zip(times, times[1:])],
                    "cpu_pct_of_a_core": cpu,
                    "load_avg_1m": round(os.getloadavg()[0], 2),
                }
            )
            print(json.dumps({k: v for k, v in phases[-1].items() if k not in ("step_s", "window")}), flush=True)
    finally:
        if frozen:
            freeze(studio, watcher, signal.SIGCONT)
    return phases


def rate(phases: list[dict], mode: str) -> float:
    """Steps/s over all phases of ``mode``."""
    sel = [x for x in phases if x["mode"] == mode]
    return sum(x["steps"] for x in sel) / max(1e-9, sum(x["seconds"] for x in sel))


def mean_ratio(phases: list[dict]) -> float:
    """steps/s watching ÷ steps/s without, over all phases of each mode."""
    without = rate(phases, "without")
    return rate(phases, "watching") / without if without else 0.0


def median_ratio(phases: list[dict]) -> float:
    """The median step's duration without ÷ watching: robust to the few long steps (long
    generations, the machine's hiccups) that dominate the spread of a short phase's mean."""
    steps = {m: [s for x in phases if x["mode"] == m for s in x.get("step_s", [])] for m in ("watching", "without")}
    if not steps["watching"] or not steps["without"]:
        return 0.0
    return statistics.median(steps["without"]) / statistics.median(steps["watching"])


def ab_pairs(phases: list[dict]) -> list[list[dict]]:
    """The A-B pairs: one watching and one without phase, next to each other in time."""
    return [phases[i : i + 2] for i in range(0, len(phases) - 1, 2)]


def bootstrap_ci(phases: list[dict], stat=mean_ratio) -> list[float] | None:
    """95 % interval of ``stat``, resampling the A-B pairs."""
    return results_file.bootstrap_ci(ab_pairs(phases), lambda pairs: stat([x for pair in pairs for x in pair]))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=120, help="A-B pairs (run as ABBA blocks)")
    p.add_argument(
        "--warmup-steps",
        type=int,
        default=200,
        help="steps trained before measuring (the demo has learned by then: steady state)",
    )
    p.add_argument(
        "--phase",
        type=float,
        default=4.8,
        help="seconds measured per phase (short phases, many pairs: neighbouring phases differ by "
        "~12 %% whatever their length, so the interval narrows with the number of pairs)",
    )
    p.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="seconds ignored after each switch (0: a thawed studio's catch-up counts as watching)",
    )
    p.add_argument(
        "--page-settle",
        type=float,
        default=45.0,
        help="seconds between opening the Monitor and the first phase: a newly opened page does "
        "one-off work for ~40 s (Chromium here: +2-4 %% of a core 20-45 s after load)",
    )
    p.add_argument(
        "--watcher",
        choices=["browser", "remote", "none"],
        default="browser",
        help="browser: Chromium on this machine shows the Monitor; remote: its stream read by curl "
        "(the page's browser on another machine); none: the A/A control (nothing differs)",
    )
    p.add_argument(
        "--browser-nice",
        type=int,
        default=0,
        help="run Chromium at this nice level (0: default priority, the honest worst case of a "
        "browser on the training machine itself)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="results file name under benchmarks/results/ (default gui_overhead.json, gui_overhead_<watcher>.json)",
    )
    a = p.parse_args()
    out_name = a.out or ("gui_overhead.json" if a.watcher == "browser" else f"gui_overhead_{a.watcher}.json")
    from gradio_client import Client, handle_file
    from playwright.sync_api import sync_playwright

    phases: list[dict] = []
    served: dict | None = None
    page_messages: list[list] = []
    with tempfile.TemporaryDirectory() as d:
        runs = Path(d) / "runs"
        with StudioProcess(runs) as studio, sync_playwright() as pw:
            client = Client(studio.url, verbose=False)
            res = client.predict(
                handle_file(str(inp.DEMO_AGENT)),
                handle_file(str(inp.DEMO_TRAIN)),
                handle_file(str(inp.DEMO_TEST)),
                handle_file(str(inp.REWARDS_DIR / "letter_reward.py")),
                "letter_reward.py:letter_reward@1",
                CONFIG,
                "trl",
                api_name="/launch",
            )
            assert res["ok"], res
            run = RunDir(res["run_dir"])
            deadline = time.time() + 300
            while time.time() < deadline and (run.read_status().get("step") or 0) < a.warmup_steps:
                time.sleep(1)
            chromium, port = start_chromium(str(Path(d) / "profile")) if a.watcher != "none" else (None, 0)
            watcher = chromium
            try:
                stream = open_monitor(pw, port, studio.url) if chromium else ""
                if a.watcher == "remote":  # the page's browser elsewhere: only its stream is served from here
                    terminate_tree(chromium.pid, grace_s=30)
                    received = Path(d) / "stream.txt"
                    watcher = subprocess.Popen(["curl", "-sSN", "-o", str(received), stream], start_new_session=True)
                if a.browser_nice:
                    for proc in process_tree(watcher):  # every Chromium process, the page's renderer included
                        try:
                            proc.nice(a.browser_nice)
                        except psutil.Error:
                            pass
                time.sleep(a.page_settle)  # the page's start-up work (first GCs, caches) is not watching
                phases = measure(a, studio, watcher, run)
                if a.watcher == "browser":
                    page_messages = received_messages(pw, port)
                if a.watcher == "remote":  # proof that the watcher was served all along
                    text = received.read_text()
                    served = {"bytes": len(text), "messages": text.count("\ndata: ") + text.startswith("data: ")}
                client.predict(res["run_id"], True, api_name="/stop")
            finally:
                for proc in (watcher, chromium):
                    if proc is not None and proc.poll() is None:
                        terminate_tree(proc.pid)

    def mean_cpu(mode: str) -> dict[str, float]:
        sel = [x["cpu_pct_of_a_core"] for x in phases if x["mode"] == mode]
        return {k: round(statistics.fmean(c[k] for c in sel), 1) for k in sel[0]} if sel else {}

    pair_ratios = []
    for a_, b_ in ab_pairs(phases):
        w, wo = (a_, b_) if a_["mode"] == "watching" else (b_, a_)
        if wo["steps_per_s"]:
            pair_ratios.append(round(w["steps_per_s"] / wo["steps_per_s"], 3))
    ratio = mean_ratio(phases)
    summary = {
        "benchmark": "gui_overhead",
        "what": (
            "trl demo run: steps/s while the studio and a watcher of its Monitor run, vs while both are "
            "frozen (SIGSTOP), alternating ABBA within one run"
        ),
        "watcher": {
            "browser": "headless Chromium showing the Monitor on this machine (Playwright disconnected)",
            "remote": "the Monitor's stream read by curl: the page's browser on another machine",
            "none": "A/A control: no watcher, nothing frozen in either phase (the ratio's spread is "
            "this benchmark's noise)",
        }[a.watcher],
        "target": "ratio >= 0.98",
        "steps_per_s": {m: round(rate(phases, m), 3) for m in ("watching", "without")},
        "ratio": round(ratio, 4),
        "cpu_pct_of_a_core": {"watching": mean_cpu("watching"), "without": mean_cpu("without")},
        "browser_nice": a.browser_nice,
        "page_settle_s": a.page_settle,
        "stream_received": served,
        "received_per_s": received_per_s(phases, page_messages) if page_messages else None,
        "steady_per_s": {
            "header": round(1 / POLL_S, 3),
            "log": round(1 / LOG_S, 3),
            "charts": round(1 / CHART_S, 3),
            "samples": round(1 / SAMPLES_S, 3),
        },
        "phase_s": a.phase,
        "settle_s": a.settle,
        "pair_ratios": pair_ratios,
        "pair_ratio_median": round(statistics.median(pair_ratios), 4) if pair_ratios else None,
        "ratio_ci95": bootstrap_ci(phases),
        "median_step_ratio": round(median_ratio(phases), 4),
        "median_step_ratio_ci95": bootstrap_ci(phases, median_ratio),
        "passed": ratio >= 0.98,
        "phases": phases,
    }
    write_result(out_name, summary)
    print(json.dumps({k: v for k, v in summary.items() if k != "phases"}, indent=1))
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
