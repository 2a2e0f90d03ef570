"""The studio in a real headless Chromium (Debian's ``chromium`` package) driven by Playwright:
upload the demo files → all checks green → Launch → the reward curve gains points → restart the
studio mid-run → still listed and streaming → Stop → ``stopped``; a bad dataset upload shows its
error and keeps Launch disabled. Screenshots go to ``artifacts/screenshots/``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from testing import waiting

from aworld_gui.core import inputs as inp
from testing.form_page import form_report, form_settled, show_overrides
from testing.studio import CHROMIUM, StudioProcess, launch_chromium

from playwright.sync_api import sync_playwright  # noqa: E402 - in requirements.txt

SHOTS = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"
MODULES = ("agent", "dataset", "reward", "config", "engine")
CONFIG = "learning_rate: 0.001\nprompts_per_step: 8\nnum_generations: 16\nmax_steps: 5000\nsave_steps: 5000\n"


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def chip_status(page, module: str) -> str | None:
    return page.get_attribute(f'#checks-strip .aw-chip[data-module="{module}"]', "data-status")


def wait_for(fn, timeout_s: float, what: str):
    return waiting.wait_for(fn, timeout_s, what, retry_errors=True)  # elements may be re-rendering


def all_green(page) -> bool:
    return all(chip_status(page, m) in ("ok", "warning") for m in MODULES)


def upload(page, button_id: str, path: Path | str) -> None:
    with page.expect_file_chooser() as fc:
        page.click(f"#{button_id}")
    fc.value.set_files(str(path))


def pick(page, dropdown: str, text: str) -> None:
    """Choose the option of a Gradio dropdown that the typed text filters to."""
    page.click(f"{dropdown} input")
    page.keyboard.press("Control+A")
    page.keyboard.type(text)
    page.keyboard.press("Enter")
    wait_for(lambda: text in page.input_value(f"{dropdown} input"), 10, f"{text} picked")


def header(page) -> dict:
    """The run header's attributes, read in one go (the page updates the element in place)."""
    attrs = page.evaluate("""() => {
        const el = document.querySelector('#run-header [data-testid="run-header"]');
        return el ? Object.fromEntries(['state', 'run', 'step', 'reward-points'].map(k => [k, el.dataset[k.replace(/-p/, 'P')]]))
                  : null; }""")
    if not attrs:
        return {}
    return {
        "state": attrs["state"],
        "run": attrs["run"],
        "step": int(attrs["step"] or 0),
        "points": int(attrs["reward-points"] or 0),
    }


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    base = tmp_path_factory.mktemp("studio-browser")
    studio = StudioProcess(base / "runs").start()
    yield studio
    studio.stop()
    from engines.runs.lifecycle import kill_run, list_run_dirs

    for run in list_run_dirs(studio.runs_dir):  # runs this test launched and did not stop
        kill_run(run.path, grace_s=2)


@pytest.fixture(scope="module")
def page(app):
    # a missing browser fails these tests (never a silent skip): the README's test command installs it
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium"
    with sync_playwright() as p:
        browser = launch_chromium(p)
        pg = browser.new_page(viewport={"width": 1440, "height": 1000})
        pg.goto(app.url)
        yield pg
        browser.close()


def test_opens_with_the_demo_preselected_and_all_checks_green(page):
    wait_for(lambda: all_green(page), 120, "the first check of the demo")
    assert page.is_enabled("#launch-btn")
    assert "Say the letter A:" in page.inner_text("#rendered")  # the rendered first prompt (a tab)
    assert "letters-agent" in page.inner_text("#agent-spec")
    assert "model turns per rollout" in page.inner_text("#agent-spec")  # not the trainer's max_steps
    page.click("#glossary-setup button")
    wait_for(
        lambda: "prompts_per_step × num_generations" in page.inner_text("#glossary-setup"), 10, "the settings explained"
    )
    shot(page, "01-setup-demo-green")


def test_a_wide_screen_centres_the_page_and_headers_break_between_words(page):
    """At 1920×1080 the content was pinned left with a ~470 px gutter; table headers broke mid-word."""
    page.set_viewport_size({"width": 1920, "height": 1080})
    try:
        page.wait_for_timeout(500)
        box = page.locator(".gradio-container").bounding_box()
        left, right = box["x"], 1920 - box["x"] - box["width"]
        assert abs(left - right) <= 20 and box["width"] >= 1600, box
        shot(page, "01b-setup-1920")
        # Gradio sets break-word on a span inside the th: read the style of the element holding the header's
        # text (not the th, not the column menu's button)
        holders = page.locator("#reward-preview th, #reward-weights th, #train-preview th").evaluate_all(
            """ths => ths.map(th => {
                const own = e => [...e.childNodes].some(n => n.nodeType === Node.TEXT_NODE && n.nodeValue.trim());
                const el = [th, ...th.querySelectorAll('*')].filter(e => own(e) && !e.closest('button'))[0];
                if (!el) return null;
                const style = getComputedStyle(el);
                return {text: el.textContent.trim(), tag: el.tagName, inside: el !== th,
                        wordBreak: style.wordBreak, overflowWrap: style.overflowWrap};
            }).filter(h => h)"""
        )
        assert len(holders) >= 4 and any(h["inside"] for h in holders), holders
        for h in holders:
            assert (h["wordBreak"], h["overflowWrap"]) == ("normal", "normal"), h
    finally:
        page.set_viewport_size({"width": 1440, "height": 1000})


def test_an_empty_runs_tab_says_so(page):
    page.get_by_role("tab", name="Runs").click()
    wait_for(lambda: page.is_visible("#runs-empty"), 30, "the empty Runs tab's note")
    assert "No runs yet" in page.inner_text("#runs-empty")
    assert not page.is_enabled("#runs-stop") and not page.is_enabled("#runs-delete")
    page.get_by_role("tab", name="Setup").click()


def test_presets_load_a_whole_setup_and_save_the_current_one(page, app):
    page.click("#presets button")
    pick(page, "#preset-select", "calc-tools")
    page.click("#preset-load")
    wait_for(
        lambda: (
            page.input_value("#agent-select input") == "calc_agent.yaml · demo"
            and "calc_train.jsonl" in page.input_value("#train-select input")
        ),
        30,
        "the calc preset in Setup",
    )
    wait_for(
        lambda: all_green(page) and "'calc-agent'" in page.inner_text("#status-agent"),
        90,
        "the calc preset checked green",
    )
    page.fill("#preset-name input", "my calc")
    page.click("#preset-save")
    wait_for(lambda: "Saved as preset" in page.inner_text("#preset-msg"), 30, "the preset saved")
    assert (app.runs_dir / ".presets" / "my calc.yaml").exists()
    shot(page, "01c-presets")
    pick(page, "#preset-select", "letters-grpo")  # back to the demo for the next tests
    page.click("#preset-load")
    wait_for(
        lambda: (
            page.input_value("#agent-select input") == "letters_agent.yaml · demo"
            and all_green(page)
            and "'letters-agent'" in page.inner_text("#status-agent")
        ),
        90,
        "the letters preset checked green",
    )
    page.click("#presets button")


def test_an_idle_page_does_not_wake_the_machine_every_frame(page, tmp_path):
    """Gradio 6 leaves a 60-per-second animation-frame loop running on a loaded page
    (aworld_gui/web/gradio_patches.py): served patched, the loop ends and an idle page asks for no frames."""
    import json

    wait_for(lambda: all_green(page), 120, "the first check of the demo")  # nothing pending any more
    page.wait_for_timeout(6000)  # the checks' spinners end their last turn
    trace = tmp_path / "trace.json"
    page.context.browser.start_tracing(page=page, path=str(trace), categories=["devtools.timeline"])
    page.wait_for_timeout(3000)
    page.context.browser.stop_tracing()
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    frames = sum(1 for e in events if e.get("name") == "FireAnimationFrame")
    assert frames <= 1, f"{frames} animation frames in 3 s on an idle page (Gradio's unpatched loop: ~180)"


def test_a_bad_dataset_upload_shows_its_error_and_disables_launch(page, tmp_path):
    bad = tmp_path / "broken_train.jsonl"
    bad.write_text('{"prompt": "Say A", "answer": "A"}\n{"prompt": oops\n')
    upload(page, "train-upload", bad)
    wait_for(lambda: chip_status(page, "dataset") == "error", 30, "the dataset error")
    assert "broken_train.jsonl" in page.inner_text("#status-dataset")
    assert not page.is_enabled("#launch-btn")
    shot(page, "02-bad-dataset-upload")


def test_a_reward_upload_that_does_not_import_is_an_error_until_replaced(page, tmp_path):
    """It used to leave the Reward badge OK and Launch enabled (and train with the previous reward)."""
    page.reload()
    wait_for(lambda: all_green(page) and page.is_enabled("#launch-btn"), 120, "the demo checked green")
    bad = tmp_path / "broken_reward.py"
    bad.write_text("def score(completion, answer:\n    return 1.0\n")
    upload(page, "reward-upload", bad)
    wait_for(lambda: chip_status(page, "reward") == "error", 60, "the reward error")
    card = page.inner_text("#status-reward")
    assert "broken_reward.py cannot be used" in card and "SyntaxError" in card
    assert page.is_visible("#status-reward") and not page.is_enabled("#launch-btn")
    box = page.locator("#status-reward").bounding_box()
    assert box["y"] < page.evaluate("() => document.querySelector('#reward-pick').getBoundingClientRect().y + scrollY")
    page.locator("#status-reward").scroll_into_view_if_needed()
    shot(page, "02b-broken-reward-upload")
    # still an error after another check (an edit elsewhere re-runs every check)
    page.fill("#cfg-max_steps input", "401")
    page.keyboard.press("Tab")
    page.wait_for_timeout(2000)
    wait_for(
        lambda: chip_status(page, "reward") == "error" and not page.is_enabled("#launch-btn"),
        60,
        "the reward still in error",
    )
    # replaced: a working file of the same name clears it
    bad.write_text("def score(completion, answer, **kw):\n    return float(completion == answer)\n")
    upload(page, "reward-upload", bad)
    wait_for(lambda: all_green(page) and page.is_enabled("#launch-btn"), 60, "green once replaced")


def test_an_own_train_set_clears_the_demo_test_set(page, tmp_path):
    """Uploading your own train set used to keep the demo's letters test set silently."""
    own = tmp_path / "my_questions.jsonl"
    own.write_text("".join(f'{{"question": "What is {i} + 1?", "solution": "{i + 1}"}}\n' for i in range(12)))
    wait_for(lambda: "letters_test.jsonl" in page.input_value("#test-select input"), 30, "the demo's test set shown")
    upload(page, "train-upload", own)
    wait_for(lambda: page.input_value("#test-select input") == "(none)", 30, "the demo test set cleared")
    note = page.inner_text("#data-note")
    assert "letters_test.jsonl" in note and "belongs to another training set" in note
    wait_for(
        lambda: (
            "detected: question" in page.inner_text("#dataset-card")
            and "detected: solution" in page.inner_text("#dataset-card")
        ),
        60,
        "the new columns detected",
    )
    # a test set with other columns: the error says what to do in the studio, not in Python
    page.fill("#test-select input", str(inp.DEMO_TEST))
    page.keyboard.press("Enter")
    wait_for(lambda: chip_status(page, "dataset") == "error", 60, "the column mismatch")
    card = page.inner_text("#status-dataset")
    assert "choose a test set with the same columns, or (none)" in card and "columns=" not in card
    assert page.inner_text("#data-note").strip() == ""  # the note about the cleared one is gone
    shot(page, "02c-own-train-set")


def test_upload_the_demo_files_launch_and_watch_the_reward_curve(page, app):
    upload(page, "agent-upload", inp.DEMO_AGENT)
    upload(page, "train-upload", inp.DEMO_TRAIN)
    upload(page, "test-upload", inp.DEMO_TEST)
    upload(page, "reward-upload", inp.REWARDS_DIR / "letter_reward.py")
    wait_for(
        lambda: all(
            "uploaded" in page.input_value(f"#{d} input") for d in ("agent-select", "train-select", "test-select")
        ),
        30,
        "the uploads to be selected",
    )
    assert "letter_reward.py:letter_reward" in page.inner_text("#reward-pick")
    # a long run for this test: set max_steps in the config form (a form field writes the YAML)
    page.fill("#cfg-max_steps input", "5000")
    page.keyboard.press("Tab")
    wait_for(lambda: all_green(page) and page.is_enabled("#launch-btn"), 60, "all checks green after the uploads")
    page.fill("#run-name input", "letters demo")
    page.fill("#run-note textarea", "the uploaded demo files")
    shot(page, "03-setup-uploaded-demo-green")
    page.click("#launch-btn")
    h = wait_for(lambda: (x := header(page)).get("state") in ("queued", "running") and x, 60, "the Monitor header")
    assert "letters demo" in page.inner_text("#run-header") and "-trl-letters-demo-" in h["run"]
    first = wait_for(lambda: (x := header(page))["points"] >= 3 and x, 240, "reward points from the trl run")
    assert first["state"] == "running" and first["run"] == h["run"]
    later = wait_for(lambda: (x := header(page))["points"] > first["points"] + 3 and x, 120, "more reward points")
    assert later["step"] > first["step"]
    page.wait_for_timeout(1500)
    shot(page, "04-monitor-training")


def test_restarting_the_studio_mid_run_keeps_the_run_listed_and_streaming(page, app):
    before = header(page)
    assert before["state"] == "running"
    app.stop()
    time.sleep(1.0)
    app.start()
    page.goto(app.url)
    page.get_by_role("tab", name="Monitor").click()
    after = wait_for(
        lambda: (x := header(page)).get("run") == before["run"] and x["step"] > before["step"] and x,
        120,
        "the same run streaming after the restart",
    )
    assert after["state"] == "running"
    assert after["points"] >= before["points"]  # full history is back, not only new steps
    page.wait_for_timeout(1500)
    shot(page, "05-monitor-after-restart")
    page.get_by_role("tab", name="Runs").click()
    wait_for(lambda: before["run"] in page.inner_text("#runs-table"), 30, "the run in the Runs table")
    page.wait_for_timeout(1000)
    shot(page, "06-runs")
    page.get_by_role("tab", name="Monitor").click()


def test_stop_from_the_monitor(page):
    # the Monitor may be drawing its header again (the last test came back to it from Runs): read it once it is there
    run = wait_for(lambda: header(page).get("run"), 30, "the run in the Monitor's header")
    page.click("#stop-btn")
    wait_for(lambda: header(page).get("state") in ("stopping", "stopped"), 30, "the stop request")
    final = wait_for(lambda: (x := header(page)).get("state") in ("stopped", "failed") and x, 120, "stopped")
    assert final == {**final, "state": "stopped", "run": run}
    # a stopped run offers neither Stop nor Kill (the buttons follow the run's state)
    wait_for(
        lambda: not page.is_visible("#stop-btn") and not page.is_visible("#kill-btn"),
        10,
        "Stop and Kill hidden once the run stopped",
    )
    page.wait_for_timeout(1000)
    shot(page, "07-monitor-stopped")


def check_id(page) -> str:
    """Which check the Setup strip shows (a new id after every check)."""
    return page.get_attribute("#checks-strip .aw-strip", "data-check") or ""


def test_clone_the_run_back_into_setup(page, app):
    """Waits for the clone's own effects — Setup shown with the run's agent file, then a check made
    after the clone, all green — never for something that was already true before the click (the
    demo agent's name contains "agent.yaml" too: the test used to pass its waits at once and assert
    on a page the clone had not reached yet)."""
    max_steps = "#cfg-max_steps input"
    page.get_by_role("tab", name="Setup").click()
    shown = (page.input_value("#agent-select input"), page.input_value(max_steps))
    # the restart's reload put the demo back in Setup: what the clone must replace
    assert shown[0] != "agent.yaml · uploaded" and shown[1] != "5000", shown
    page.get_by_role("tab", name="Runs").click()
    run_id = wait_for(lambda: page.input_value("#runs-selected input"), 30, "a selected run")
    before = check_id(page)
    page.click("#runs-clone")
    wait_for(
        lambda: page.input_value("#agent-select input") == "agent.yaml · uploaded" and page.is_visible("#launch-btn"),
        60,
        "Setup with the cloned agent file",
    )
    wait_for(
        lambda: check_id(page) not in ("", before) and all_green(page) and page.is_enabled("#launch-btn"),
        90,
        "a check of the clone, all green",
    )
    # the form's fields are rendered from that check a moment after it turns green (CI read 400 in between)
    show_overrides(page)
    try:
        wait_for(lambda: form_settled(page, engine=None), 60, "the form rendered from the clone's check")
    except AssertionError as e:
        raise AssertionError(f"{e}; {form_report(page)}") from None
    # Setup holds the run's own inputs: its agent (written back from run.yaml), its data, its max_steps
    clone = app.runs_dir / inp.UPLOADS / f"clone-{run_id}" / "agent.yaml"
    assert clone.is_file() and "letters-agent" in clone.read_text(encoding="utf-8")
    assert page.input_value("#train-select input").endswith("· uploaded")
    assert page.input_value(max_steps) == "5000"
    page.wait_for_timeout(500)
    shot(page, "08-setup-cloned-from-run")


def test_runs_actions_follow_the_selected_run(page, app):
    """Stop is offered only for an active run, Delete only for one that is not; a stopped run offers no
    Stop (Stop on a finished run used to write a STOP file into it)."""
    page.get_by_role("tab", name="Runs").click()
    run_id = wait_for(lambda: page.input_value("#runs-selected input"), 30, "a selected run")
    run_dir = app.runs_dir / run_id
    wait_for(
        lambda: not page.is_enabled("#runs-stop") and page.is_enabled("#runs-delete"),
        30,
        "Stop disabled and Delete enabled for a stopped run",
    )
    assert page.is_enabled("#runs-open") and page.is_enabled("#runs-clone")
    assert page.is_enabled("#runs-ckpt-btn")  # the stopped run saved a checkpoint
    stop_file = run_dir / "STOP"
    stop_file.unlink(missing_ok=True)
    page.click("#runs-stop", force=True)  # a disabled button does nothing
    page.wait_for_timeout(1000)
    assert not stop_file.exists()
    # the run's name and note, launched with it, can be changed here
    assert page.input_value("#runs-name input") == "letters demo"
    assert page.input_value("#runs-note textarea") == "the uploaded demo files"
    page.fill("#runs-name input", "letters demo (stopped early)")
    page.click("#runs-label-save")
    wait_for(lambda: "letters demo (stopped early)" in page.inner_text("#runs-table"), 30, "the new name listed")
    assert "the uploaded demo files" in page.inner_text("#runs-table")
    page.get_by_role("tab", name="Setup").click()


def test_the_log_tail_follows_a_growing_log(page, app):
    """The Monitor's log pane is always a piece of the run's train.log, grows with it (new lines
    appended in place) and drops its oldest lines once past the tail's 300 (run_cache.LOG_LINES)."""
    from aworld_gui.core.run_cache import LOG_LINES
    from testing.studio import end_process_group, start_fake_run

    run, pid = start_fake_run(app.runs_dir, "--steps", "100000", "--rate", "250")  # 25 log lines/s
    try:
        page.get_by_role("tab", name="Monitor").click()
        page.fill("#monitor-run input", run.run_id)
        page.keyboard.press("Enter")
        wait_for(lambda: header(page).get("run") == run.run_id, 30, "the fake run in the Monitor")

        snapshots: list[list[str]] = []  # the pane, every 0.3 s until it has dropped its first lines
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            text = page.text_content("#aw-log") or ""
            log = run.log_path.read_text(encoding="utf-8").replace("\r", "\n")  # only grows: read after
            assert text in log, f"the log pane shows text that is not a piece of train.log: {text[-300:]!r}"
            snapshots.append(text.splitlines())
            if len(snapshots[0]) >= 3 and snapshots[-1] and snapshots[-1][0] != snapshots[0][0]:
                break
            if not snapshots[0]:
                snapshots.pop()
            page.wait_for_timeout(300)
        first, last = snapshots[0], snapshots[-1]
        assert len(first) >= 3 and last[0] != first[0], "the pane never dropped its oldest lines"
        grown = next(x for x in snapshots if len(x) > len(first))
        assert grown[: len(first)] == first  # new lines appended below what was there
        assert len(set(map(len, snapshots))) > 2  # it grew in several steps
        assert len(last) <= LOG_LINES and last[-1].startswith("step ")
    finally:
        end_process_group(pid)


def test_a_reload_with_a_live_run_opens_the_monitor_on_it(page, app):
    """A run trains and a newer one waits in the queue: a page opened now shows the Monitor on the
    one training (it used to open Setup, and the Monitor on the newest, queued run)."""
    import subprocess
    import sys

    import psutil

    from engines.runs.rundir import QUEUED, RunDir
    from testing.studio import end_process_group, start_fake_run

    run, pid = start_fake_run(app.runs_dir, "--steps", "100000", "--rate", "5")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        queued = RunDir.create(app.runs_dir, "fake")
        queued.write_spec({"engine": "fake", "run_id": queued.run_id})
        queued.write_status(
            state=QUEUED,
            pid=sleeper.pid,
            pid_create_time=psutil.Process(sleeper.pid).create_time(),
            launched=time.time(),
            created=time.time(),
            queue_position=1,
            waiting_for=run.run_id,
        )
        page.reload()
        wait_for(
            lambda: page.is_visible("#run-header") and header(page).get("run") == run.run_id,
            60,
            "the Monitor open on the training run",
        )
        assert header(page)["state"] == "running"
        shot(page, "09-reload-opens-the-training-run")
        page.fill("#monitor-run input", queued.run_id)  # the queued one is a pick away
        page.keyboard.press("Enter")
        wait_for(lambda: header(page).get("run") == queued.run_id, 30, "the queued run in the Monitor")
        said = f"#1 in line · waits for run {run.run_id}"  # the Runs table's words (aworld_gui/core/queue_note.py)
        wait_for(lambda: said in page.inner_text("#run-header"), 30, "its place in the queue")
    finally:
        sleeper.kill()
        sleeper.wait()
        end_process_group(pid)


def test_runs_overlay_draws_every_run_added(page, app):
    """Adding runs to the overlay one by one draws a line and a legend entry for each (a gr.LinePlot
    used to keep only the first set's lines and legend), for every metric picked."""
    from engines.runs.rundir import RunDir
    from testing.fake_run import write_history

    made = []
    for i in range(3):
        run = RunDir.create(app.runs_dir, "fake")
        run.write_spec({"engine": "fake", "run_id": run.run_id, "config": {"learning_rate": 10 ** -(i + 2)}})
        write_history(run, 40 + 20 * i)
        run.write_status(state="finished", step=40 + 20 * i, total_steps=40 + 20 * i, created=time.time())
        made.append(run.run_id)
        time.sleep(0.01)
    page.reload()
    page.get_by_role("tab", name="Runs").click()
    wait_for(lambda: all(r in page.inner_text("#runs-table") for r in made), 60, "the three runs listed")
    assert not page.is_visible("#runs-empty")

    def keys() -> list[str]:
        return page.locator("#compare-plot .aw-key").all_inner_texts()

    # the overlay's first fill (the latest three runs) drawn; then clear it and add the runs one at a time
    wait_for(lambda: len(keys()) == 3 and all(r in " ".join(keys()) for r in made), 30, "the overlay's first fill")
    while page.locator("#compare-runs .token-remove").count():
        page.locator("#compare-runs .token-remove").first.click()
        page.wait_for_timeout(300)
    wait_for(lambda: not keys(), 30, "the overlay cleared")
    for n, run_id in enumerate(made, start=1):
        page.click("#compare-runs input")
        page.keyboard.type(run_id)
        page.keyboard.press("Enter")
        page.keyboard.press("Escape")
        wait_for(
            lambda: len(keys()) == n and all(r in " ".join(keys()) for r in made[:n]),  # noqa: B023
            30,
            f"{n} run(s) in the overlay's legend",
        )
        assert page.locator("#compare-plot polyline").count() == n
    page.fill("#compare-metric input", "loss")
    page.keyboard.press("Enter")
    wait_for(
        lambda: len(keys()) == 3 and "loss" in page.get_attribute("#compare-plot svg", "aria-label"),
        30,
        "the loss of the three runs",
    )
    page.locator("#compare-plot").scroll_into_view_if_needed()
    shot(page, "10-runs-overlay-three-runs")


def test_no_two_elements_of_any_tab_share_an_id(page):
    """Issue 32 §4: an id names one element (labels, scripts and tests find it by id). Every tab, opened in turn
    with runs in the studio, has none twice."""
    tabs = ["tab-setup", "tab-monitor", "tab-runs", "tab-sweeps", "tab-evaluate", "tab-chat"]
    twice = {}
    for tab in tabs:
        page.click(f"#{tab}-button")
        page.wait_for_timeout(1500)
        dup = page.evaluate(
            "() => { const n = {}; for (const e of document.querySelectorAll('[id]')) if (e.id) n[e.id] = (n[e.id] || 0) + 1;"
            " return Object.entries(n).filter(([, c]) => c > 1); }"
        )
        if dup:
            twice[tab] = dup
    assert not twice, twice
