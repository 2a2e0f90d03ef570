"""The Runs table shows the runs as they are, whatever order its answers land in (issue 42: the queue's words the
Monitor said were missing from Runs). Two refreshes of the table can be in flight at once — the one the Runs tab's
pick starts and the timer's next tick — and answer out of order. The refresh skipped sending the table when the runs
were as it had last *sent* them, so an older answer landing last left the page showing it, for good once the runs
stopped changing. Here the tab's refresh is answered late (testing/late_answers.py) while the run changes under it,
so the older answer always lands last."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import sync_playwright

from engines.runs.rundir import RunDir
from testing import waiting
from testing.studio import CHROMIUM, StudioProcess, launch_chromium, start_fake_run

HELD_S = 6  # the tab's refresh answers this late: the timer's tick (2 s) answers before it
#: each text the Runs table showed, in order (a MutationObserver's on the whole page: the tab's content may be mounted
#: anew when it is picked)
RECORD_JS = """() => {
  window.awRunsSeen = [];
  const note = () => {
    const el = document.querySelector('#runs-table');
    const t = el ? el.innerText : '';
    if (t && t !== window.awRunsSeen.at(-1)) window.awRunsSeen.push(t);
  };
  new MutationObserver(note).observe(document.body, {subtree: true, childList: true, characterData: true});
  note();
}"""


def landed_after(texts: list[str], newer: str, older: str) -> bool:
    """Whether the table showed ``older`` after it had shown ``newer``."""
    first = next((i for i, t in enumerate(texts) if newer in t), None)
    return first is not None and any(older in t for t in texts[first + 1 :])


def wait_for(fn, timeout_s, what):
    return waiting.wait_for(fn, timeout_s, what, retry_errors=True)


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    """A studio whose Runs-tab refresh answers HELD_S late (its own: the launcher holds them), and a finished run."""
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get install -y chromium"
    base = tmp_path_factory.mktemp("runs-table")
    log = base / "held.log"
    app = StudioProcess(
        base / "runs",
        launcher=["-m", "testing.late_answers", str(HELD_S), "--only", "refresh"],
        env={"AWORLD_LATE_ANSWERS_LOG": str(log)},
    ).start()
    app.held_log = log
    try:
        yield app
    finally:
        app.stop()


def held(app, what: str = "ran") -> int:
    """How many refreshes of the Runs tab have run with their answer held (``ran``), or been answered (``answered``)."""
    lines = app.held_log.read_text().splitlines() if app.held_log.exists() else []
    return sum(line.startswith(what + " ") for line in lines)


def test_an_older_answer_landing_last_does_not_stay_in_the_runs_table(studio):
    run, _pid = start_fake_run(studio.runs_dir, "--steps", "2", "--rate", "20")
    wait_for(lambda: run.read_status().get("state") == "finished", 60, "the fake run finished")
    run = RunDir(run.path)
    run.write_label("first name", "")
    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            page = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
            page.goto(studio.url)
            wait_for(lambda: page.evaluate("() => window.awLoadAnswered === true"), 60, "the load's answer")
            page.get_by_role("tab", name="Runs").click()
            wait_for(lambda: "first name" in page.inner_text("#runs-table"), 60, "the runs listed")
            # answered: an event still waiting for its answer is not sent again when the tab is picked again (Gradio's
            # trigger mode "once")
            wait_for(lambda: held(studio, "answered") == 1, 30, "the tab's first refresh answered")
            page.get_by_role("tab", name="Setup").click()  # the table's timer stops
            page.evaluate(RECORD_JS)
            run.write_label("second name", "")  # what the tab's next refresh reads; its answer is held
            page.get_by_role("tab", name="Runs").click()
            wait_for(lambda: held(studio) == 2, 30, "the tab's refresh run, its answer held")
            run.write_label("third name", "")  # what the timer's next tick reads, and answers first
            seen = lambda: page.evaluate("() => window.awRunsSeen")  # noqa: E731
            # the order load gives now and then, here every time: the newer table first, then the older one
            wait_for(lambda: landed_after(seen(), "third name", "second name"), HELD_S * 5, "the older answer last")
            # ... and the table shows the run as it is again
            wait_for(lambda: "third name" in page.inner_text("#runs-table"), 30, "the run's name as it is now")
        finally:
            browser.close()
