"""A sweep from the studio in headless Chromium: Setup → Sweep starts it (its checks in a child process), the
studio restarts mid-sweep and the sweep goes on (its driver is a process of its own), the Sweeps tab shows
its trials and a chart per setting, the best trial is cloned into Setup. Screenshots in artifacts/screenshots/."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright  # noqa: E402 - in requirements.txt

from engines.runs.lifecycle import effective_status, kill_run, list_run_dirs
from engines.sweeps.sweep_dir import list_sweeps
from testing import waiting
from testing.studio import CHROMIUM, StudioProcess, launch_chromium

SHOTS = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"
MODULES = ("agent", "dataset", "reward", "config", "engine")


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def all_green(page) -> bool:
    return all(
        page.get_attribute(f'#checks-strip .aw-chip[data-module="{m}"]', "data-status") in ("ok", "warning")
        for m in MODULES
    )


def wait_for(fn, timeout_s: float, what: str):
    return waiting.wait_for(fn, timeout_s, what, retry_errors=True)


@pytest.fixture
def app(tmp_path):
    studio = StudioProcess(tmp_path / "runs").start()
    yield studio
    studio.stop()
    for sd in list_sweeps(studio.runs_dir):  # a sweep this test left running: its driver, then its runs
        if effective_status(sd).get("pid"):
            kill_run(sd.path, grace_s=2)
    for run in list_run_dirs(studio.runs_dir):
        kill_run(run.path, grace_s=2)


def test_a_sweep_from_setup_survives_a_studio_restart_and_its_best_trial_is_cloned(app):
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium"
    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(app.url)
        wait_for(lambda: all_green(page), 120, "the demo's checks green")
        for field, value in (("max_steps", "2"), ("prompts_per_step", "2"), ("num_generations", "4")):
            page.fill(f"#cfg-{field} input", value)
            page.keyboard.press("Tab")
        wait_for(lambda: all_green(page) and page.is_enabled("#launch-btn"), 60, "checks green with tiny trials")
        page.click("#sweep-panel button")  # open the Sweep panel
        page.fill("#sweep-trials input", "2")
        page.fill("#sweep-name input", "browser")
        shot(page, "sweep-01-setup-panel")
        page.click("#sweep-start")
        wait_for(lambda: "sweep-" in page.inner_text("#sweep-msg"), 300, "the sweep started")
        assert "refused" not in page.inner_text("#sweep-msg").lower(), page.inner_text("#sweep-msg")
        [sweep] = list_sweeps(app.runs_dir)

        # the studio restarts while the sweep runs: the sweep goes on, and the new page shows it
        app.stop()
        assert effective_status(sweep)["state"] in ("queued", "running")
        time.sleep(1.0)
        app.start()
        page.goto(app.url)
        page.get_by_role("tab", name="Sweeps").click()
        wait_for(lambda: sweep.run_id in page.input_value("#sweep-pick input"), 30, "the sweep picked")
        wait_for(lambda: page.get_attribute("#sweep-headline", "data-state") == "finished", 600, "the sweep to finish")
        summary = sweep.read_summary()
        assert [t["state"] for t in summary["trials"]] == ["complete", "complete"]
        table = page.inner_text("#sweep-trials-table")
        assert all(t["run_id"] in table for t in summary["trials"])
        assert page.locator("#sweep-charts .aw-chart[data-points='2']").count() == 2  # learning_rate, beta
        page.wait_for_timeout(1000)
        shot(page, "sweep-02-sweeps-tab")

        # the best trial cloned into Setup: its learning rate in the config
        page.click("#sweep-clone")
        best = summary["best"]
        wait_for(
            lambda: page.get_by_role("tab", name="Setup").get_attribute("aria-selected") == "true", 30, "the Setup tab"
        )
        lr = best["params"]["learning_rate"]
        wait_for(
            lambda: abs(float(page.input_value("#cfg-learning_rate input")) - lr) < 1e-12,
            60,
            "the best trial's learning rate in the Setup form",
        )
        wait_for(lambda: all_green(page), 120, "the cloned setup checked green")
        shot(page, "sweep-03-best-cloned")
        browser.close()
