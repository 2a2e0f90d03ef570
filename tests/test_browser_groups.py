"""The GRPO group view in headless Chromium: a finished run with recorded groups (testing/group_samples.py);
the Monitor's "GRPO groups of a step" shows the latest step, another step is picked, the zero-spread filter
keeps only the group without spread. Screenshot: docs/screenshots/grpo-groups.jpg."""

from __future__ import annotations

import os
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from engines.runs.rundir import RunDir
from testing import waiting
from testing.group_samples import write_group_samples
from testing.studio import CHROMIUM, launch_chromium

ROOT = Path(__file__).resolve().parent.parent
SHOT = ROOT / "docs" / "screenshots" / "grpo-groups.jpg"


def test_the_groups_view_picks_a_step_and_filters_to_zero_spread_groups(shared_studio):
    app = shared_studio
    runs = app.runs_dir  # the newest run: the one the Monitor opens on
    run = RunDir.create(runs, "fake")
    run.write_spec({"engine": "fake", "run_id": run.run_id, "agent": {"name": "a", "model": "m"}, "config": {}})
    run.append_metrics(1, {"reward": 0.4, "loss": 0.1, "frac_reward_zero_std": 2 / 3})
    run.append_metrics(2, {"reward": 0.5, "loss": 0.1, "frac_reward_zero_std": 1 / 3})
    write_group_samples(run)
    run.write_status(state="finished", step=2, total_steps=2, ended=time.time())
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get install -y chromium"
    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1440, "height": 1200})
        page.goto(app.url)
        page.get_by_role("tab", name="Monitor").click()
        page.get_by_text("GRPO groups of a step").click()
        view = "#groups-view [data-testid=groups-view]"
        waiting.wait_for(lambda: page.is_visible(view), 120, "the latest step's groups", retry_errors=True)
        assert page.inner_text("#groups-view [data-testid=zero-share]") == "33%"  # step 2: 1 of 3
        page.click("#groups-step input")
        page.get_by_role("option", name="1", exact=True).click()
        waiting.wait_for(
            lambda: page.inner_text("#groups-view [data-testid=zero-share]") == "67%", 30, "step 1", retry_errors=True
        )
        assert page.locator("#groups-view [data-testid=group]").count() == 2
        assert page.locator("#groups-view [data-testid=groups-histogram] rect").count() == 10
        page.click("#groups-zero input")
        waiting.wait_for(
            lambda: page.locator("#groups-view [data-testid=group]").count() == 1, 30, "the filter", retry_errors=True
        )
        assert page.get_attribute("#groups-view [data-testid=group]", "data-zero-spread") == "true"
        assert "zero spread: no gradient" in page.inner_text("#groups-view [data-testid=group]")
        page.locator("#groups-panel").scroll_into_view_if_needed()
        page.locator("#groups-panel").screenshot(path=str(SHOT), type="jpeg", quality=80)
        browser.close()
