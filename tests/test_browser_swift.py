"""The `swift` engine in the studio, in a real headless Chromium: an engine whose environment is missing offers
its setup as a button and follows its progress until the engine is available; a swift run launched from Setup
streams its reward curve to the Monitor and stops from there. Screenshots go to ``artifacts/screenshots/``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aworld_gui.tabs.engine_setup import EngineSetups
from engines.swift import environment as E
from testing import waiting
from testing.studio import CHROMIUM, StudioProcess, launch_chromium
from testing.swift_fakes import stand_in_venv

from playwright.sync_api import sync_playwright  # noqa: E402 - in requirements.txt

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "artifacts" / "screenshots"
MODULES = ("agent", "dataset", "reward", "config", "engine")
SWIFT_CONFIG = (
    (ROOT / "assets/configs/letters_swift.yaml")
    .read_text()
    .replace("max_steps: 400", "max_steps: 5000")
    .replace("save_steps: 100", "save_steps: 5000")
)


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def wait_for(fn, timeout_s: float, what: str):
    return waiting.wait_for(fn, timeout_s, what, retry_errors=True)


def chip(page, module: str) -> str | None:
    return page.get_attribute(f'#checks-strip .aw-chip[data-module="{module}"]', "data-status")


def all_green(page) -> bool:
    return all(chip(page, m) in ("ok", "warning") for m in MODULES)


def header(page) -> dict:
    attrs = page.evaluate("""() => {
        const el = document.querySelector('#run-header [data-testid="run-header"]');
        return el ? {state: el.dataset.state, run: el.dataset.run, step: el.dataset.step,
                     points: el.dataset.rewardPoints} : null; }""")
    if not attrs:
        return {}
    return {
        "state": attrs["state"],
        "run": attrs["run"],
        "step": int(attrs["step"] or 0),
        "points": int(attrs["points"] or 0),
    }


def choose_engine(page, name: str) -> None:
    page.fill("#engine-select input", name)
    page.keyboard.press("Enter")
    wait_for(lambda: page.input_value("#engine-select input").startswith(name), 30, f"engine {name} chosen")


def set_config_yaml(page, text: str) -> None:
    if not page.is_visible("#config-yaml .cm-content"):
        page.get_by_text("Advanced: config YAML (overrides)").click()
    page.click("#config-yaml .cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)


@pytest.fixture()
def browser_page():
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium"
    with sync_playwright() as p:
        browser = launch_chromium(p)
        yield browser.new_page(viewport={"width": 1440, "height": 1000})
        browser.close()


def test_a_missing_environment_is_offered_as_a_setup_button_with_progress(tmp_path, monkeypatch, browser_page):
    venv = stand_in_venv(tmp_path / "venv-swift")  # a virtualenv whose setup has not finished
    monkeypatch.setenv(E.VENV_ENV, str(venv))
    monkeypatch.delenv(E.PYTHON_ENV, raising=False)
    page = browser_page
    with StudioProcess(tmp_path / "runs") as studio:
        page.goto(studio.url)
        wait_for(lambda: all_green(page), 180, "the demo checked")
        assert not page.is_visible("#engine-setup")  # trl needs no setup
        wait_for(
            lambda: "setup did not finish" in page.inner_text("#engines-table"),
            30,
            "swift listed as unavailable, with why",
        )
        choose_engine(page, "swift")
        wait_for(lambda: page.is_visible("#engine-setup-btn"), 30, "the setup button")
        assert "needs an environment of its own" in page.inner_text("#engine-setup-status")
        wait_for(lambda: chip(page, "engine") == "error", 60, "the engine chip in error")
        assert not page.is_enabled("#launch-btn")
        shot(page, "swift-01-setup-offered")
        page.click("#engine-setup-btn")
        wait_for(
            lambda: page.get_attribute("#engine-setup-status .aw-setup", "data-state") == "running",
            30,
            "the setup running",
        )
        wait_for(
            lambda: int(page.get_attribute("#engine-setup-status .aw-setup", "data-fraction") or 0) >= 10,
            60,
            "pip's progress shown",
        )
        assert "collecting" in page.inner_text("#engine-setup-status").lower()
        assert not page.is_enabled("#engine-setup-btn")  # one setup at a time
        shot(page, "swift-02-setup-progress")
        wait_for(lambda: not page.is_visible("#engine-setup"), 120, "the panel gone once ready")
        wait_for(lambda: "ms-swift 4.6.0" in page.inner_text("#engines-table"), 60, "swift available in the table")
        assert (venv / E.MARKER).is_file()
        state = EngineSetups(studio.runs_dir).state("swift")
        assert state["state"] == "done" and state["fraction"] == 1.0
        shot(page, "swift-03-setup-done")


def test_launch_a_swift_run_from_the_studio_and_watch_its_reward_curve(tmp_path, monkeypatch, browser_page):
    ok, reason = E.availability()
    assert ok, f"ms-swift's environment is needed: {reason}"
    page = browser_page
    studio = StudioProcess(tmp_path / "runs", extra=["--check-timeout", "240"]).start()
    try:
        page.goto(studio.url)
        wait_for(lambda: all_green(page), 180, "the demo checked")
        choose_engine(page, "swift")
        # the trl demo's overrides are put aside for trl; pasted here, they are not all ms-swift's: said against
        # the key, with the likely one
        set_config_yaml(page, (ROOT / "assets/configs/letters_grpo.yaml").read_text())
        wait_for(lambda: chip(page, "config") == "error", 240, "the config checked by ms-swift's names")
        card = page.inner_text("#status-config")
        assert "unknown setting 'eval_samples'" in card and 'did you mean "eval_steps"' in card
        shot(page, "swift-04-trl-config-rejected")
        set_config_yaml(page, SWIFT_CONFIG)
        wait_for(lambda: all_green(page) and page.is_enabled("#launch-btn"), 240, "the swift setup green")
        assert "swift rlhf" in page.inner_text("#status-config") and "parser accepted it" in page.inner_text(
            "#status-config"
        )
        shot(page, "swift-05-setup-green")
        page.fill("#run-name input", "letters on swift")
        page.click("#launch-btn")
        h = wait_for(lambda: (x := header(page)).get("state") in ("queued", "running") and x, 240, "the Monitor")
        assert "-swift-letters-on-swift-" in h["run"]
        first = wait_for(lambda: (x := header(page))["points"] >= 3 and x, 300, "reward points from ms-swift")
        assert first["state"] == "running"
        wait_for(lambda: header(page)["points"] >= first["points"] + 3, 120, "more reward points")
        # the curves redraw every few seconds (monitor_tab.CHART_S): a drawn curve with the points seen so far
        wait_for(
            lambda: any(
                int(n or 0) >= first["points"]
                for n in page.eval_on_selector_all(
                    ".aw-chart svg", "els => els.map(e => e.parentElement.dataset.points)"
                )
            ),
            60,
            "a curve drawn with the reward points",
        )
        shot(page, "swift-06-monitor-reward-curve")
        page.click("#stop-btn")
        final = wait_for(lambda: (x := header(page)).get("state") in ("stopped", "failed") and x, 180, "stopped")
        assert final["state"] == "stopped"
        shot(page, "swift-07-monitor-stopped")
    finally:
        studio.stop()
        from engines.runs.lifecycle import kill_run, list_run_dirs

        for run in list_run_dirs(studio.runs_dir):
            kill_run(run.path, grace_s=2)
