"""The Reward card in headless Chromium: the picker lists the ecosystem's rewards (TRL, verl) beside the
built-ins; picking TRL's think_format_reward dry-runs it and the card shows what it received (TRL's
shapes: conversational completions, the dataset's columns, trainer_state, ...) and returned."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright  # noqa: E402 - in requirements.txt

from testing import waiting
from testing.studio import CHROMIUM, launch_chromium

SHOTS = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"
MODULES = ("agent", "dataset", "reward", "config", "engine")


def wait_for(fn, timeout_s: float, what: str):
    return waiting.wait_for(fn, timeout_s, what, retry_errors=True)


def chip(page, module: str) -> str | None:
    return page.get_attribute(f'#checks-strip .aw-chip[data-module="{module}"]', "data-status")


@pytest.fixture(scope="module")
def page(shared_studio):
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium"
    with sync_playwright() as p:
        browser = launch_chromium(p)
        pg = browser.new_page(viewport={"width": 1440, "height": 1100})
        pg.goto(shared_studio.url)
        wait_for(lambda: all(chip(pg, m) in ("ok", "warning") for m in MODULES), 180, "the demo's checks")
        yield pg
        browser.close()


def test_pick_a_trl_reward_from_the_registry_and_see_its_dry_run(page):
    # the demo's own reward is dry-run first: the card shows what it received
    wait_for(
        lambda: page.query_selector('[data-testid="reward-calls"] tr[data-term="letter_reward"]'),
        60,
        "the demo reward's calls",
    )
    picker = page.locator("#reward-pick input")
    picker.click()
    picker.fill("think_format")
    option = page.locator("#reward-pick li[data-testid=dropdown-option]", has_text="TRL · think_format_reward")
    wait_for(lambda: option.count() == 1, 30, "TRL's think_format_reward in the registry")
    option.first.click()
    page.keyboard.press("Escape")
    page.locator("#status-reward").click()  # blur the picker (it reopens on the next click)
    row = '[data-testid="reward-calls"] tr[data-term="think_format_reward"]'
    wait_for(lambda: page.query_selector(row), 120, "think_format_reward's dry run in the Reward card")
    wait_for(lambda: chip(page, "reward") in ("ok", "warning"), 60, "the reward check")
    text = page.inner_text(row)
    assert "TRL convention" in text
    assert "completions" in text and "list[6] of list[1] of {role, content}" in text
    for arg in ("prompts", "answer", "solution", "ground_truth", "trainer_state", "log_extra", "log_metric"):
        assert arg in text, arg
    assert "[1.0, 1.0, 1.0, 1.0, 1.0, 1.0]" in text  # every sample written in its format scores 1
    assert "<think>" in page.inner_text('[data-testid="reward-calls"]')  # the completion format used
    weights = page.inner_text("#reward-weights")
    assert "TRL · think_format_reward" in weights and "trl 1.16" in weights
    assert "think_format_reward" in page.inner_text("#reward-preview")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#status-reward").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "reward-card-trl.png"), full_page=True)
    # the registry also lists verl's scorers with the data_source values they serve
    picker.click()
    picker.fill("gsm8k")
    gsm = page.locator("#reward-pick li[data-testid=dropdown-option]", has_text="verl · gsm8k")
    wait_for(lambda: gsm.count() == 1, 30, "verl's gsm8k scorer in the registry")
    page.keyboard.press("Escape")
