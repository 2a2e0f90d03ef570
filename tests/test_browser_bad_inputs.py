"""Bad input as a user meets it in the studio, in headless Chromium: a YAML error names both lines, a
literal key in an uploaded agent is not kept (and the page says so), and a newer check cancels a hanging
one instead of waiting out its time limit. Screenshots go to ``artifacts/screenshots/``."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from aworld_gui.core import inputs as inp
from testing.studio import CHROMIUM, StudioProcess, launch_chromium
from testing.waiting import wait_for as _wait_for

from playwright.sync_api import sync_playwright  # noqa: E402 - in requirements.txt

SHOTS = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"
MODULES = ("agent", "dataset", "reward", "config", "engine")
MODEL = inp.ASSETS / "models" / "tiny-letters"
CHECK_TIMEOUT_S = 90


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def chip(page, module: str) -> str | None:
    return page.get_attribute(f'#checks-strip .aw-chip[data-module="{module}"]', "data-status")


def wait_for(fn, timeout_s: float, what: str):
    return _wait_for(fn, timeout_s, what, retry_errors=True)


def upload(page, button_id: str, path: Path) -> None:
    with page.expect_file_chooser() as fc:
        page.click(f"#{button_id}")
    fc.value.set_files(str(path))


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium"
    base = tmp_path_factory.mktemp("browser-bad-inputs")
    app = StudioProcess(base / "runs", extra=["--check-timeout", str(CHECK_TIMEOUT_S)]).start(timeout_s=180)
    with sync_playwright() as p:
        browser = launch_chromium(p)
        pg = browser.new_page(viewport={"width": 1440, "height": 1100})
        pg.goto(app.url)
        wait_for(lambda: all(chip(pg, m) in ("ok", "warning") for m in MODULES), 180, "the demo's first check")
        pg.app = app
        yield pg
        browser.close()
    app.stop()


def test_a_yaml_error_names_where_it_starts_and_where_it_fails(page, tmp_path):
    agent = tmp_path / "quote_agent.yaml"
    agent.write_text(f'name: quotes\nmodel: {MODEL}\nsystem_prompt: "Reply with one letter.\ntemperature: 1.0\n')
    upload(page, "agent-upload", agent)
    wait_for(lambda: chip(page, "agent") == "error", 60, "the agent error")
    text = page.inner_text("#status-agent")
    assert "quote_agent.yaml" in text and "opened on line 3" in text and "never closed" in text, text
    assert "Traceback" not in page.inner_text("body")
    assert not page.is_enabled("#launch-btn")
    shot(page, "bad-input-01-yaml-error")


def test_a_literal_key_in_an_uploaded_agent_is_not_kept(page, tmp_path):
    agent = tmp_path / "keyed_agent.yaml"
    agent.write_text(
        f"name: keyed\nmodel: {MODEL}\nsystem_prompt: Reply with one capital letter.\n"
        "api_key: sk-browser-literal-0101\n"
    )
    upload(page, "agent-upload", agent)
    wait_for(lambda: "not stored" in page.inner_text("body"), 60, "the note on the masked key")
    wait_for(lambda: chip(page, "agent") in ("ok", "warning"), 60, "the agent check")
    body = page.inner_text("body")
    assert "api_key (line 4)" in body and "sk-browser-literal-0101" not in body
    assert "sk-browser-literal-0101" not in page.content()
    stored = list(page.app.runs_dir.glob(".uploads/*/keyed_agent.yaml"))
    assert stored and "sk-browser-literal-0101" not in stored[0].read_text()
    shot(page, "bad-input-02-literal-key-masked")
    # the demo agent again, and its check shown (the chip is already green from the keyed agent's check: waiting
    # on it alone let that check's result land during the next test)
    upload(page, "agent-upload", inp.DEMO_AGENT)
    wait_for(
        lambda: "letters-agent" in page.inner_text("#status-agent") and chip(page, "agent") in ("ok", "warning"),
        60,
        "the demo agent's check shown",
    )


def test_a_newer_check_cancels_a_hanging_one(page, tmp_path):
    """A reward that hangs when called keeps its check busy up to the time limit (90 s here); fixing the
    reward starts a new check that cancels the hanging one and is shown within seconds."""
    hanging = tmp_path / "hang" / "my_reward.py"
    hanging.parent.mkdir()
    hanging.write_text(
        'import time\n\ndef score(completion, answer, **kw):\n    """Hangs."""\n    time.sleep(600)\n    return 1.0\n'
    )

    def shown_check():
        return page.get_attribute("#checks-strip .aw-strip", "data-check")

    wait_for(lambda: "letters-agent" in page.inner_text("#status-agent"), 60, "the demo agent's check shown")
    before = shown_check()
    upload(page, "reward-upload", hanging)
    wait_for(lambda: "my_reward.py" in page.inner_text("#reward-weights"), 60, "the hanging reward to be picked")
    time.sleep(5)  # its check is now stuck in the reward's dry run
    assert shown_check() == before  # (no result yet)
    fixed = tmp_path / "fixed" / "my_reward.py"
    fixed.parent.mkdir()
    fixed.write_text(
        'def score(completion, answer, **kw):\n    """Right letter."""\n'
        "    return 1.0 if completion.strip()[:1] == answer else 0.0\n"
    )
    t0 = time.monotonic()
    upload(page, "reward-upload", fixed)  # the same file name: a new version of the picked function
    wait_for(
        lambda: shown_check() != before and chip(page, "reward") == "ok", CHECK_TIMEOUT_S - 20, "the new check's result"
    )
    assert time.monotonic() - t0 < CHECK_TIMEOUT_S - 20  # not after the hanging check's limit
    assert "timed out" not in page.inner_text("#status-reward")
    shot(page, "bad-input-03-newer-check-shown")
    time.sleep(2)
    assert chip(page, "reward") == "ok"  # the cancelled check changed nothing afterwards
