"""Resume in the studio (issue 45): a run whose trainer was killed shows Resume in the Monitor; pressed, the run goes on
in the same run, on the same curve, from its checkpoint — in English and in Chinese; a page reloaded while the resumed
run trains opens the Monitor on it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import yaml
from playwright.sync_api import sync_playwright

from engines.runs.lifecycle import list_run_dirs
from testing import waiting
from testing.studio import launch_chromium

from test_browser_studio import SHOTS
from test_resume import CONFIG, HELD_REWARD, ROOT, steps, train_args


def wait_for(fn, timeout_s, what):
    return waiting.wait_for(fn, timeout_s, what, retry_errors=True)


def header(page, attribute: str) -> str:
    return page.get_attribute('#run-header [data-testid="run-header"]', attribute) or ""


def killed_run(runs, base, demo):
    """A run of the letters demo in the studio's runs folder, its trainer SIGKILLed in step 10 (its checkpoint at 7),
    and the hold that held it: held again while the file is there (:func:`hold`)."""
    reward, config = base / "held_reward.py", base / "config.yaml"
    reward.write_text(HELD_REWARD)
    config.write_text(yaml.safe_dump(CONFIG))
    before = {r.run_id for r in list_run_dirs(runs)}
    hold(base, runs, before)
    proc = subprocess.Popen(
        [sys.executable, "-m", "engines", *train_args(demo, reward, config, runs)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        mine = lambda: [r for r in list_run_dirs(runs) if r.run_id not in before]  # noqa: E731
        wait_for(lambda: (mine() and 9 in steps(mine()[0])) or proc.poll() is not None, 300, "the run held in step 10")
        assert proc.poll() is None, "the run ended before it was held"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        (base / "hold").unlink(missing_ok=True)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return mine()[0]


def hold(base, runs, others) -> None:
    """Hold the runs of ``runs`` but ``others`` in step 10 (test_resume.HELD_REWARD) until ``base/hold`` is removed."""
    (base / "hold").write_text("\n".join([str(runs), *others]))


def resumed_at(run, step: int) -> bool:
    """Whether the run's second attempt trains and has logged ``step`` (it is held in the next one, :func:`hold`)."""
    status = run.read_status()
    return status.get("attempt") == 2 and status.get("state") == "running" and step in steps(run)


def monitor_on(browser, url: str, locale: str, run_id: str):
    """A page in ``locale`` with the Monitor on ``run_id``."""
    page = browser.new_context(locale=locale, viewport={"width": 1440, "height": 1000}).new_page()
    page.goto(url)
    wait_for(lambda: page.evaluate("() => window.awLoadAnswered === true"), 60, "the page loaded")
    page.locator("#tabs [role=tab]").nth(1).click()  # the Monitor
    page.fill("#monitor-run input", run_id)
    page.keyboard.press("Enter")
    wait_for(lambda: header(page, "data-state") == "failed", 60, "the killed run shown failed")
    wait_for(lambda: page.is_visible("#resume-btn"), 60, "Resume offered")
    assert not page.is_visible("#stop-btn")
    return page


def test_a_killed_run_is_resumed_from_the_monitor_and_goes_on_on_the_same_curve(shared_studio, tmp_path, demo):
    studio = shared_studio
    run = killed_run(studio.runs_dir, tmp_path, demo)
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = monitor_on(browser, studio.url, "zh-CN", run.run_id)
        assert page.inner_text("#resume-btn").strip() == "恢复训练" and "失败" in page.inner_text("#run-header")
        page.screenshot(path=str(SHOTS / "16-monitor-resume-chinese.png"), full_page=True)
        page.close()
        page = monitor_on(browser, studio.url, "en-US", run.run_id)
        assert page.inner_text("#resume-btn").strip() == "Resume"
        others = {r.run_id for r in list_run_dirs(studio.runs_dir)} - {run.run_id}
        hold(tmp_path, studio.runs_dir, others)  # the resumed attempt held in step 10: a reload while it trains
        page.click("#resume-btn")
        # the resumed attempt's own step 9 (the killed one's header said step 9 too, so that alone waits for nothing:
        # a reload then came while the resume was still queued, and rightly opened Setup)
        wait_for(lambda: resumed_at(run, 9), 180, "the resumed run training at step 9")
        wait_for(lambda: header(page, "data-state") == "running", 60, "the resumed run shown training")
        page.reload()  # the page opens on the live run, the same curve: steps 1-7 of the first attempt, 8-9 resumed
        wait_for(lambda: header(page, "data-run") == run.run_id, 60, "the reloaded page on the resumed run")
        wait_for(lambda: "resumed" in page.inner_text("#events"), 60, "the resume among the reloaded page's events")
        assert header(page, "data-state") == "running" and header(page, "data-step") == "9"
        assert sorted(steps(run)) == list(range(1, 10))  # the dead attempt's 8-9 set aside, the resumed 8-9 in
        page.screenshot(path=str(SHOTS / "17-monitor-resumed-reloaded.png"), full_page=True)
        (tmp_path / "hold").unlink()
        wait_for(lambda: header(page, "data-state") == "finished", 180, "the resumed run finished")
        assert header(page, "data-step") == "12" and header(page, "data-run") == run.run_id
        wait_for(lambda: not page.is_visible("#resume-btn"), 30, "no Resume for a run at its end")
        wait_for(lambda: "resumed" in page.inner_text("#events"), 60, "the resume among the events")
        page.screenshot(path=str(SHOTS / "17-monitor-resumed.png"), full_page=True)
        browser.close()
    assert [r.run_id for r in list_run_dirs(studio.runs_dir)].count(run.run_id) == 1
    status = run.read_status()
    assert status["state"] == "finished" and status["attempt"] == 2 and sorted(steps(run)) == list(range(1, 13))
