"""A page opened while a run trains opens on the Monitor once it has loaded, and a launch opens the Monitor once it is
answered — unless the user picked a tab meanwhile. Both switches used to land seconds later under load and pulled a
user who had clicked Runs back to the Monitor (issue 32 §2). The page's load and the launch are held at the network
here, so the click always comes first."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import sync_playwright

from engines.runs.lifecycle import list_run_dirs
from testing import waiting
from testing.studio import CHROMIUM, end_process_group, launch_chromium, start_fake_run


def wait_for(fn, timeout_s, what):
    return waiting.wait_for(fn, timeout_s, what, retry_errors=True)


def selected(page) -> str:
    return page.get_attribute('#tabs [role="tab"][aria-selected="true"]', "id") or ""


@pytest.fixture(scope="module")
def training(shared_studio):
    """The session's studio, a run training in it (deleted after the file with the runs the file launched)."""
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium"
    run, pid = start_fake_run(shared_studio.runs_dir, "--steps", "100000", "--rate", "5")
    try:
        yield shared_studio, run
    finally:
        end_process_group(pid)


def test_a_tab_picked_while_the_page_loads_stays_picked_and_an_untouched_page_opens_the_monitor(training):
    studio, run = training
    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
        held, holding = [], [True]
        page.route("**/gradio_api/queue/join*", lambda route: held.append(route) if holding[0] else route.continue_())
        page.goto(studio.url)
        wait_for(lambda: page.get_by_role("tab", name="Runs").is_visible(), 60, "the tabs")
        wait_for(lambda: (page.wait_for_timeout(50), held)[1], 30, "the page's load events sent")  # routes run in waits
        assert selected(page) == "tab-setup-button"
        page.get_by_role("tab", name="Runs").click()
        holding[0] = False
        for route in held:  # in the order they were sent
            route.continue_()
        wait_for(lambda: page.evaluate("() => window.awLoadAnswered === true"), 60, "the load's answer")
        page.wait_for_timeout(1000)
        assert selected(page) == "tab-runs-button", "the user's tab was taken away"
        page.get_by_role("tab", name="Monitor").click()  # the load picked the run that trains
        wait_for(lambda: page.input_value("#monitor-run input") == run.run_id, 30, "the training run in the Monitor")

        # the same page reloaded and left alone: it opens on the Monitor, watching the training run
        page.unroute("**/gradio_api/queue/join*")
        page.reload()
        wait_for(lambda: selected(page) == "tab-monitor-button", 60, "the Monitor opened for the training run")
        assert page.input_value("#monitor-run input") == run.run_id
        browser.close()


def test_a_tab_picked_while_a_launch_is_answered_stays_picked_and_a_launch_left_alone_opens_the_monitor(training):
    studio, training_run = training
    try:
        with sync_playwright() as p:
            browser = launch_chromium(p)
            page = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
            page.goto(studio.url)
            wait_for(lambda: page.evaluate("() => window.awLoadAnswered === true"), 60, "the load's answer")
            page.get_by_role("tab", name="Setup").click()
            wait_for(lambda: page.is_enabled("#launch-btn"), 120, "the demo checked, Launch enabled")
            held, holding = [], [True]
            page.route(
                "**/gradio_api/queue/join*", lambda route: held.append(route) if holding[0] else route.continue_()
            )
            page.click("#launch-btn")
            wait_for(lambda: (page.wait_for_timeout(50), held)[1], 30, "the launch sent")
            page.get_by_role("tab", name="Runs").click()
            holding[0] = False
            for route in held:
                route.continue_()
            page.unroute("**/gradio_api/queue/join*")
            wait_for(lambda: len(list_run_dirs(studio.runs_dir)) == 2, 120, "the launched run")
            wait_for(lambda: "started" in page.inner_text("#launch-msg"), 60, "the launch's answer")
            page.wait_for_timeout(1500)
            assert selected(page) == "tab-runs-button", "the user's tab was taken away"

            page.get_by_role("tab", name="Setup").click()  # a launch left alone opens the Monitor on its run
            page.evaluate("() => { window.awLaunchAnswered = false; }")
            page.click("#launch-btn")
            wait_for(lambda: page.evaluate("() => window.awLaunchAnswered === true"), 120, "the second launch's answer")
            wait_for(lambda: selected(page) == "tab-monitor-button", 10, "the Monitor opened")
            first, second = sorted(
                (r for r in list_run_dirs(studio.runs_dir) if r.run_id != training_run.run_id),
                key=lambda r: r.read_status().get("created") or 0,
            )
            # issue 42 item 5: the Monitor on the queued launch, saying its place in the Runs table's words, and
            # showing it training when its turn comes (it stayed on the run before it, finished)
            assert page.input_value("#monitor-run input") == second.run_id
            said = f"#1 in line · waits for run {first.run_id}"
            wait_for(lambda: said in page.inner_text("#run-header"), 60, "the queued run's place in the Monitor")
            page.get_by_role("tab", name="Runs").click()
            wait_for(lambda: said in page.inner_text("#runs-table"), 60, "the same words in Runs")
            page.get_by_role("tab", name="Monitor").click()
            end_process_group(int(first.read_status()["pid"]))
            wait_for(
                lambda: page.get_attribute('#run-header [data-testid="run-header"]', "data-state") == "running",
                120,
                "the queued run shown training when its turn came",
            )
            assert page.input_value("#monitor-run input") == second.run_id
            browser.close()
    finally:
        for run in list_run_dirs(studio.runs_dir):  # the launched runs (the demo on trl) are not needed
            pid = run.read_status().get("pid")
            if run.run_id != training_run.run_id and pid:
                end_process_group(int(pid))
