"""The Monitor's events table in both languages: the time and the event's name each on one line, whatever the details
beside them (issue 42 item 8's walkthrough: in Chinese the events column shrank to two characters, "最佳检查点" on
three lines, since a Chinese word breaks between any two characters and a table gives a column no more than its
narrowest line; "best checkpoint" took two lines in English)."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import sync_playwright

from engines.runs.rundir import RunDir
from testing import waiting
from testing.studio import CHROMIUM, launch_chromium, start_fake_run

HEADER = '#run-header [data-testid="run-header"]'
#: per row of the events table: [lines of its time, lines of its event's name, its text]. A line is a distinct top of
#: the rectangles a range over the cell's text makes (one per line box it lies on)
LINES_JS = """() => [...document.querySelectorAll('#events .aw-events tr')].map(row => {
  const lines = cell => {
    const range = document.createRange();
    range.selectNodeContents(cell);
    return new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top))).size;
  };
  return [lines(row.cells[0]), lines(row.cells[1]), row.innerText.replace(/\\s+/g, ' ')];
})"""


def wait_for(fn, timeout_s, what):
    return waiting.wait_for(fn, timeout_s, what, retry_errors=True)


@pytest.fixture(scope="module")
def run_with_events(shared_studio):
    """A finished run whose events have long details beside short and long names (a best checkpoint, a checkpoint
    with its path, the closing summary)."""
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get install -y chromium"
    run, _pid = start_fake_run(shared_studio.runs_dir, "--steps", "10", "--rate", "50")
    wait_for(lambda: run.read_status().get("state") == "finished", 60, "the fake run finished")
    run = RunDir(run.path)
    run.event("checkpoint", step=10, path=str(run.path / "checkpoints" / "checkpoint-10"))
    run.event("best_checkpoint", name="checkpoint-10", step=10, metric="eval/reward", value=0.30000000000000004)
    run.event(
        "summary",
        train_runtime=356.6695,
        train_loss=0.0605,
        epoch=100.0,
        steps=10,
        seconds=356.669,
        steps_per_second=0.8411,
    )
    return shared_studio, run


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_the_events_time_and_name_each_take_one_line(run_with_events, locale):
    studio, run = run_with_events
    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            page = browser.new_context(locale=locale, viewport={"width": 1440, "height": 1000}).new_page()
            page.goto(studio.url)
            wait_for(lambda: page.is_visible("#tab-monitor-button"), 60, "the tabs")
            page.click("#tab-monitor-button")
            page.fill("#monitor-run input", run.run_id)
            page.keyboard.press("Enter")
            wait_for(lambda: page.get_attribute(HEADER, "data-state") == "finished", 60, "the run shown finished")
            wait_for(lambda: len(page.evaluate(LINES_JS)) >= 5, 30, "its events")
            rows = page.evaluate(LINES_JS)
            if locale == "zh-CN":
                assert any("最佳检查点" in text for *_, text in rows), rows  # the page is in Chinese
            broken = [text for time_lines, name_lines, text in rows if (time_lines, name_lines) != (1, 1)]
            assert not broken, f"{locale}: an event's time or name on more than one line: {broken}"
        finally:
            browser.close()
