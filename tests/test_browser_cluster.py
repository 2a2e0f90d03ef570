"""A run on a Ray cluster from the studio, in headless Chromium: ray_address set in the Setup's settings editor
(a Ray head on 127.0.0.1 here), Launch, the Monitor's header and curves move while the job trains on the cluster,
Stop stops it at a step boundary, the header says where its checkpoints are. Screenshot:
artifacts/screenshots/cluster-run.jpg (docs/screenshots/cluster-run.jpg is one)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from engines.runs.rundir import RunDir
from testing import waiting
from testing.form_page import form_settled, overrides, show_overrides
from testing.studio import CHROMIUM, StudioProcess, launch_chromium

SHOTS = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"
MODULES = ("agent", "dataset", "reward", "config", "engine")
HEADER = '#run-header [data-testid="run-header"]'


def wait_for(fn, timeout_s: float, what: str):
    return waiting.wait_for(fn, timeout_s, what, retry_errors=True)


def all_green(page) -> bool:
    return all(
        page.get_attribute(f'#checks-strip .aw-chip[data-module="{m}"]', "data-status") in ("ok", "warning")
        for m in MODULES
    )


def type_into(page, selector: str, text: str) -> None:
    page.click(selector)
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.type(text)


def set_setting(page, name: str, value: str) -> None:
    type_into(page, "#setting-pick input", name)
    page.keyboard.press("Enter")
    wait_for(lambda: page.input_value("#setting-pick input") == name, 10, f"{name} picked")
    type_into(page, "#setting-value textarea", value)
    page.click("#setting-set")


@pytest.fixture(scope="module")
def head(ray_head):
    return ray_head


def test_a_run_launched_in_the_studio_trains_on_the_cluster_and_stops_from_the_monitor(tmp_path, head, monkeypatch):
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium"
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    runs = tmp_path / "runs"
    with StudioProcess(runs) as studio, sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(studio.url)
        wait_for(lambda: all_green(page), 180, "the first check of the demo")
        show_overrides(page)
        wait_for(lambda: form_settled(page), 60, "the form rendered from the check")
        page.click("#all-settings button, #all-settings .label-wrap")  # the settings editor: any key, any value
        set_setting(page, "ray_storage", str(tmp_path / "cluster"))
        wait_for(lambda: all_green(page) and form_settled(page), 60, "ray_storage checked")
        set_setting(page, "max_steps", "5000")
        wait_for(lambda: all_green(page) and form_settled(page), 60, "max_steps checked")
        set_setting(page, "ray_address", head.address)
        try:  # the check says where the run will train: the files the job reads at the same paths there
            wait_for(
                lambda: (
                    all_green(page)
                    and form_settled(page)
                    and head.address in overrides(page)
                    and "same paths on the cluster" in page.inner_text("#status-config")
                ),
                60,
                "ray_address checked",
            )
        except AssertionError as e:
            raise AssertionError(f"{e}; overrides {overrides(page)!r}; config {page.inner_text('#status-config')!r}")
        page.click("#launch-btn")
        header = page.locator(HEADER)
        wait_for(
            lambda: header.count() and int(header.get_attribute("data-step") or 0) >= 3,
            300,
            "three steps of the cluster job in the Monitor",
        )
        run = RunDir(runs / header.get_attribute("data-run"))
        status = run.read_status()
        assert status["ray_address"] == head.address and status.get("ray_job_id") and status["state"] == "running"
        assert int(header.get_attribute("data-reward-points") or 0) >= 3  # the curve has the mirrored steps
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "cluster-run.jpg"), type="jpeg", quality=70)
        page.click("#stop-btn")
        wait_for(lambda: header.get_attribute("data-state") == "stopped", 180, "the run stopped")
        status = run.read_status()
        # the studio's Stop ("studio") reached the job through the marker job, which stopped at a step boundary
        assert status["cause"] == run.stop_reason() == "studio" and status["ray_job_status"] == "SUCCEEDED"
        there = RunDir(status["ray_run_dir"].split(":", 1)[1])
        assert there.stop_reason() == "studio"
        assert there.checkpoints()[-1].name == f"checkpoint-{status['step']}"
        assert str(there.path) in page.inner_text("#run-header")  # where the checkpoints are
        browser.close()
