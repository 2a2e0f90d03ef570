"""Every tab of the studio in both languages, as docs/screenshots/tab-<tab>-<language>.jpg (issue 32: screenshots of
every tab in both languages, looked at). A studio on a fresh runs folder with a stand-in run that trains
(:mod:`testing.fake_run`) and a finished one, opened in Chromium as an English and a Chinese browser.

    python -m testing.tab_screenshots [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from testing import waiting
from testing.studio import StudioProcess, end_process_group, launch_chromium, start_fake_run

ROOT = Path(__file__).resolve().parent.parent
#: (the tab's elem_id, its name in the file) in the page's order
TABS = [
    ("tab-setup", "setup"),
    ("tab-monitor", "monitor"),
    ("tab-runs", "runs"),
    ("tab-sweeps", "sweeps"),
    ("tab-evaluate", "evaluate"),
    ("tab-chat", "chat"),
]
LANGUAGES = {"en": "en-US", "zh": "zh-CN"}


def settle(page, tab: str) -> None:
    """Wait for what each tab shows once it has loaded (the check in Setup, the live header in the Monitor)."""
    if tab == "setup":
        waiting.wait_for(lambda: page.is_enabled("#launch-btn"), 120, "the demo checked", retry_errors=True)
    elif tab == "monitor":
        waiting.wait_for(
            lambda: page.get_attribute('#run-header [data-testid="run-header"]', "data-step") not in (None, "0"),
            60,
            "the live header",
            retry_errors=True,
        )
    page.wait_for_timeout(1500)  # the last renders


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        runs.mkdir()
        done, done_pid = start_fake_run(runs, "--steps", "60", "--rate", "30")
        waiting.wait_for(lambda: done.read_status().get("state") == "finished", 60, "the finished stand-in run")
        done.write_label(name="letters · lr 1e-3", note="a finished run")
        live, live_pid = start_fake_run(runs, "--steps", "100000", "--rate", "4")
        try:
            with StudioProcess(runs) as app, sync_playwright() as p:
                browser = launch_chromium(p)
                for lang, locale in LANGUAGES.items():
                    page = browser.new_context(locale=locale, viewport={"width": 1440, "height": 1000}).new_page()
                    page.goto(app.url)
                    waiting.wait_for(lambda: page.is_visible("#tab-runs-button"), 60, "the tabs")  # noqa: B023
                    for elem_id, name in TABS:
                        page.click(f"#{elem_id}-button")
                        settle(page, name)
                        path = out / f"tab-{name}-{lang}.jpg"
                        page.screenshot(path=str(path), type="jpeg", quality=70, full_page=True)
                        print(path, flush=True)
                    page.context.close()
                browser.close()
        finally:
            end_process_group(live_pid)
            end_process_group(done_pid)
            time.sleep(0.5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
