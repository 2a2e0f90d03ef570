"""The Monitor never shows frozen figures as live: with the studio down the run header says "studio
unreachable — runs keep training" (in the page's language), and once the studio is back the same page —
never reloaded — hides it and streams again; twice, with an English and a Chinese page open at once. A stand-in run
trains meanwhile."""

from __future__ import annotations

import os
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from testing import waiting
from testing.studio import CHROMIUM, StudioProcess, end_process_group, launch_chromium, start_fake_run

SHOTS = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"
BANNER = '#run-header [data-testid="studio-unreachable"]'


def wait_for(fn, timeout_s, what):
    return waiting.wait_for(fn, timeout_s, what, retry_errors=True)


def step(page) -> int:
    return int(page.get_attribute('#run-header [data-testid="run-header"]', "data-step") or 0)


LOCALES = {"en-US": "Studio unreachable — runs keep training", "zh-CN": "无法连接工作室 — 运行仍在继续训练"}


def test_the_monitor_says_when_the_studio_is_unreachable_and_recovers_by_itself(tmp_path):
    """One studio, one stand-in run, a page in each language open on it at once: each says it in its own words."""
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium"
    app = StudioProcess(tmp_path / "runs").start()
    run, pid = start_fake_run(app.runs_dir, "--steps", "100000", "--rate", "4")
    try:
        with sync_playwright() as p:
            browser = launch_chromium(p)
            pages = {
                locale: browser.new_context(locale=locale, viewport={"width": 1440, "height": 1000}).new_page()
                for locale in LOCALES
            }
            for page in pages.values():
                page.goto(app.url)  # a live run: the page opens on the Monitor with it
            for locale, page in pages.items():
                wait_for(
                    lambda: (
                        page.get_attribute('#run-header [data-testid="run-header"]', "data-run") == run.run_id  # noqa: B023
                        and step(page) > 0  # noqa: B023
                    ),
                    90,
                    f"the run in the Monitor ({locale})",
                )
                assert not page.is_visible(BANNER)
            for time_ in (1, 2):  # the second time too
                app.stop()
                frozen = {}
                for locale, page in pages.items():
                    wait_for(
                        lambda page=page: page.is_visible(BANNER),
                        30,
                        f"the page saying the studio is unreachable ({locale})",
                    )
                    assert LOCALES[locale] in page.inner_text(BANNER)
                    frozen[locale] = step(page)
                    SHOTS.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(SHOTS / f"unreachable-{locale}-{time_}.png"), full_page=False)
                time.sleep(2)
                assert run.read_status()["step"] > max(frozen.values())  # the run kept training meanwhile
                app.start()
                for locale, page in pages.items():
                    wait_for(
                        lambda: not page.is_visible(BANNER) and step(page) > frozen[locale] + 2,  # noqa: B023
                        120,
                        f"the same page streaming again, the note gone ({locale})",
                    )
            browser.close()
    finally:
        end_process_group(pid)
        app.stop()
