"""Stop in the Monitor: the run header's state only moves forward — running, stop requested, stopping, stopped —
never back. The studio answers every Gradio event 3 s late (testing/late_answers.py) while the header's stream
keeps delivering, as under load: the Stop click's chain re-rendered the header from a read made before the run
had moved on, and that answer, landing after the stream had shown the newer state, put the older one back
(stopping → running → stopped; issue 32 §2). The header's state is recorded in the page at every change, and so
are the Stop and Kill buttons shown: Stop, then Kill, then none — the click's chain and the header's ``apply`` wrote
them, and an older answer landing last left Kill on the stopped run. The pressed Stop reads "Stopping…" at once,
seconds before any answer."""

from __future__ import annotations

import os

from playwright.sync_api import sync_playwright

from testing import waiting
from testing.studio import CHROMIUM, StudioProcess, end_process_group, launch_chromium, start_fake_run

LATE_S = 3.0  # every Gradio answer this late; the run stays stopping a second longer, so a Stop's answer
STOPPING_S = LATE_S + 1.0  # read while it is stopping lands after the stream has shown it stopped
ORDER = {"running": 0, "stopping": 1, "stopped": 2}
RECORD_JS = """() => {
  window.awStates = []; window.awButtons = [];
  const note = () => {
    const el = document.querySelector('#run-header [data-testid="run-header"]');
    const s = el && el.dataset.state;
    if (s && s !== window.awStates[window.awStates.length - 1]) window.awStates.push(s);
  };
  note();
  new MutationObserver(note).observe(document.getElementById('run-header'),
                                     {subtree: true, childList: true, attributes: true});
  const shown = id => { const b = document.getElementById(id); return !!b && b.offsetParent !== null; };
  const frame = () => {       // the buttons as painted, with when: one answer hides Stop and mounts Kill a few ms apart
    const b = ['stop-btn', 'kill-btn'].filter(shown).join(' ');
    const last = window.awButtons[window.awButtons.length - 1];
    if (!last || b !== last[0]) window.awButtons.push([b, performance.now()]);
    requestAnimationFrame(frame);
  };
  frame();
}"""


def test_a_stopped_run_s_header_never_goes_back_to_an_earlier_state(tmp_path):
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium"
    studio = StudioProcess(tmp_path / "runs", launcher=["-m", "testing.late_answers", str(LATE_S)]).start()
    run, pid = start_fake_run(studio.runs_dir, "--steps", "100000", "--rate", "10", "--stopping-s", str(STOPPING_S))
    try:
        with sync_playwright() as p:
            browser = launch_chromium(p)
            page = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
            page.goto(studio.url)  # a run trains: the page opens on the Monitor, watching it
            waiting.wait_for(
                lambda: page.evaluate(
                    """(run) => { const el = document.querySelector('#run-header [data-testid="run-header"]');
                                  return !!el && el.dataset.run === run && +el.dataset.step > 2
                                         && el.offsetParent !== null; }""",
                    run.run_id,
                ),
                90,
                "the training run streaming in the Monitor",
                retry_errors=True,
            )
            page.wait_for_timeout(2 * LATE_S * 1000)  # the page's load answered whole
            page.evaluate(RECORD_JS)
            page.click("#stop-btn")
            pending = page.evaluate("document.getElementById('stop-btn').dataset.awPending")  # at once
            waiting.wait_for(lambda: run.read_status().get("state") == "stopped", 30, "the run stopped")
            # every answer of the chain landed: the header says stopped and no button is shown (each answer is
            # LATE_S late, and later still under load: waited for, not slept)
            try:
                waiting.wait_for(
                    lambda: page.evaluate("window.awStates.at(-1) === 'stopped' && window.awButtons.at(-1)[0] === ''"),
                    60,
                    "the header stopped and the buttons gone",
                )
            finally:
                states, painted = page.evaluate("[window.awStates, window.awButtons]")
                browser.close()
    finally:
        end_process_group(pid)
        studio.stop()
    assert states[-1] == "stopped" and "stopping" in states, states
    assert [ORDER[s] for s in states] == sorted(ORDER[s] for s in states), f"the header went back: {states}"
    assert pending == "Stopping…", pending
    # one answer hides Stop and mounts Kill a moment apart: a paint in between shows neither (a fresh-clone run under
    # load painted stop, none, kill, none); such a none, followed by Kill, is not a state
    shown = [b for b, _at in painted]
    buttons = [b for i, b in enumerate(shown) if not (b == "" and shown[i + 1 : i + 2] == ["kill-btn"])]
    buttons = [b for i, b in enumerate(buttons) if i == 0 or b != buttons[i - 1]]
    # Stop, Kill while stopping (unless the run stopped before an answer read it stopping), then none: never back
    assert buttons in (["stop-btn", "kill-btn", ""], ["stop-btn", ""]), f"the buttons went back: {painted}"
