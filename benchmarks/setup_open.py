#!/usr/bin/env python
"""How long the Setup page takes to be ready: from ``goto`` to the form showing the check of the page's own spec
(the state line current, its spec the page's YAML, every slot showing what the line wants:
testing/form_page.form_settled) — what a user waits for before the form can be trusted, and what every browser
test pays per page opened.

    python -m benchmarks.setup_open [--samples 12] [--tree OTHER_CHECKOUT --label-other before]

With ``--tree``, a second studio runs another checkout's code (e.g. a ``git worktree`` of an earlier commit) and the
pages alternate between the two (A B B A ...), so both are measured on one machine in one run. Writes
benchmarks/results/setup_open.json.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.results_file import pct, write_result
from testing.form_page import form_settled, show_overrides
from testing.studio import StudioProcess, launch_chromium

ROOT = Path(__file__).resolve().parent.parent
STATE_LINE = "#form-state [data-testid=form-state]"


def studio_of(tree: Path, runs: Path) -> StudioProcess:
    """A studio running ``tree``'s code (its folder first on the import path)."""
    serve = f"import sys, runpy; sys.path.insert(0, {str(tree)!r}); runpy.run_module('aworld_gui.web.serve', run_name='__main__')"
    return StudioProcess(runs, launcher=["-c", serve])


def open_once(browser, url: str) -> dict:
    """One page: seconds from ``goto`` to the state line, and to the form settled; the queued events it sent."""
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    joins = []
    page.on("request", lambda r: joins.append(1) if "/queue/join" in r.url else None)
    t0 = time.monotonic()
    page.goto(url)
    page.wait_for_selector(STATE_LINE, timeout=60_000)
    line = time.monotonic() - t0
    show_overrides(page)
    while not form_settled(page):
        if time.monotonic() - t0 > 90:
            raise TimeoutError("the Setup form did not settle within 90 s")
        time.sleep(0.02)
    settled = time.monotonic() - t0
    page.close()
    return {"state_line_s": line, "settled_s": settled, "queued_events": len(joins)}


def summary(samples: list[dict]) -> dict:
    settled = [s["settled_s"] for s in samples]
    return {
        "samples": len(samples),
        "settled_s": {
            "p50": round(statistics.median(settled), 2),
            "p95": round(pct(settled, 0.95), 2),
            "min": round(min(settled), 2),
            "max": round(max(settled), 2),
        },
        "state_line_s_p50": round(statistics.median(s["state_line_s"] for s in samples), 2),
        "queued_events_p50": statistics.median(s["queued_events"] for s in samples),
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=12, help="pages opened per studio")
    p.add_argument("--label", default="this", help="what this checkout is called in the results")
    p.add_argument("--tree", type=Path, help="another checkout to measure alongside, page for page")
    p.add_argument("--label-other", default="other")
    args = p.parse_args()
    from playwright.sync_api import sync_playwright

    trees = {args.label: ROOT} | ({args.label_other: args.tree.resolve()} if args.tree else {})
    base = Path(tempfile.mkdtemp(prefix="setup-open-"))
    studios = {name: studio_of(tree, base / name / "runs").start() for name, tree in trees.items()}
    got: dict[str, list[dict]] = {name: [] for name in trees}
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            for st in studios.values():  # a first page each, not counted (the studio's first answers)
                open_once(browser, st.url)
            names = list(trees)
            for i in range(args.samples):
                order = names if i % 2 == 0 else names[::-1]  # A B, B A: neither always goes first
                for name in order:
                    got[name].append(open_once(browser, studios[name].url))
            browser.close()
    finally:
        for st in studios.values():
            st.stop()
    result = {
        "benchmark": "setup_open",
        "what": "goto → the Setup form showing the check of the page's own spec (testing/form_page.form_settled), "
        "headless Chromium, the demo",
        "studios": {name: summary(samples) for name, samples in got.items()},
    }
    if args.tree:
        a, b = (result["studios"][n]["settled_s"]["p50"] for n in names)
        result["ratio_p50"] = {f"{names[0]}/{names[1]}": round(a / b, 3)}
    print(write_result("setup_open.json", result).read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
