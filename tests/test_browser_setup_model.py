"""Model-based test of the Setup in headless Chromium: seeded random sequences of 8 user steps (testing/
setup_model.py) made with the keyboard and the mouse on a running studio; after every step the overrides YAML, the
form and the effective config on the page equal the model, and after Launch so does the run's run.yaml. The first
test is the walkthrough's own sequence (issue 32), held out from the random ones. Cloning a run is covered by
tests/test_setup_model.py only (here a clone's expected overrides would need the engine's defaults)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import sync_playwright

from aworld_gui.tabs.config_form import spec_id
from engines.runs.rundir import RunDir
from engines.runs.lifecycle import kill_run
from testing import waiting
from testing.setup_model import (
    BOX,
    KINDS,
    OTHER_ENGINE,
    Model,
    Step,
    break_yaml,
    hand_edit,
    reward_file,
    same,
    sequence,
    unbreak,
)
from aworld_gui.tabs.config_form_render import MIN_FIELD_SLOTS
from testing.form_page import form_state, marks_show, reconcile_fns, slot_marks, snapshot
from testing.studio import CHROMIUM, launch_chromium

SEEDS = [int(s) for s in os.environ.get("AWORLD_BROWSER_SETUP_SEEDS", "11,22,33,44,55").split(",")]
BROWSER_KINDS = tuple(k for k in KINDS if k != "clone")
TRL_MAIN = [
    "mode",
    "max_steps",
    "learning_rate",
    "prompts_per_step",
    "num_generations",
    "beta",
    "max_completion_length",
    "use_peft",
]
SHOTS = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"


def wait_for(fn, timeout_s: float, what: str):
    return waiting.wait_for(fn, timeout_s, what, retry_errors=True)


def code_text(page, elem: str) -> str:
    """A code view's text, shown or in a closed accordion (each CodeMirror line is an element)."""
    return page.evaluate(
        f"() => [...document.querySelectorAll('#{elem} .cm-line')].map(l => l.textContent).join('\\n')"
    )


def type_into(page, selector: str, text: str) -> None:
    page.click(selector)
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.type(text)


def set_yaml(page, text: str) -> None:
    if not page.locator("#config-yaml .cm-content").is_visible():
        page.get_by_text("Advanced: config YAML (overrides)").click()
    page.click("#config-yaml .cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)


def preset_loaded(page) -> str | None:
    """The mark of the last preset load's answer (each load has its own)."""
    return page.evaluate(
        "() => { const e = document.querySelector('#preset-msg .aw-preset-loaded'); return e ? e.title : null; }"
    )


SHOWN_JS = """(names) => {
  const out = {};
  for (const name of [...names, "#model-pick"]) {
    const at = name.startsWith("#") ? name : "#cfg-" + name;
    const boxes = document.querySelectorAll(at + " input[type=checkbox]");
    const inputs = document.querySelectorAll(at + " input");
    const first = inputs[0];
    out[name] = boxes.length ? {n: boxes.length, value: boxes[0].checked} : {n: inputs.length, value: first ? first.value : null};
    out[name].enabled = !!first && !(first.matches(":disabled") || !!first.closest("[aria-disabled=true]"));
  }
  return out;
}"""


def shown_fields(page, names: list[str]) -> dict:
    """What each field shows (a box: ticked; else its input's text), whether its input can be edited, and the model
    picker's text (``"#model-pick"``): one read of the page for all (it was three Playwright calls a field). Waits for
    each to be in the page, as Playwright's ``input_value`` did; two inputs where one is meant fail, as its strictness
    did."""
    got = wait_for(
        lambda: (f := page.evaluate(SHOWN_JS, names)) and all(v["n"] for v in f.values()) and f,
        30,
        f"the inputs of {names} and the model picker in the page",
    )
    assert all(v["n"] == 1 for v in got.values()), f"a field with more than one input: {got}"
    return got


class Browser:
    def __init__(self, page, runs_dir: Path, models: list[str], upload: str):
        self.page, self.runs_dir, self.models, self.upload = page, runs_dir, models, upload

    def settle(self, model: Model, where: str) -> dict:
        """Wait until the page shows the model's engine and spec, checked (the form's other values are that check's);
        return the effective config shown."""
        page = self.page
        want = None if model.broken else model.current

        def done():  # one read of the page a poll (form_page.snapshot), checked here
            got = snapshot(page, code=("config-yaml", "effective-config"))
            st, text = got["state"], got["code"]["config-yaml"]
            ok = (
                st.get("engine") == model.engine
                and st.get("current") == "1"
                and st.get("spec") == spec_id(text)
                and st.get("valid") == ("0" if model.broken else "1")
                and parse(text) == want
                and marks_show(st, got["marks"])
            )
            # the effective config's view fills a moment after the state line (empty on a page just opened): a
            # settled page shows one (a check shown always has one, or says to fix the errors)
            effective = got["code"]["effective-config"]
            return ok and (model.broken or bool(effective.strip()) and "# fix the errors" not in effective) and got

        try:
            got = wait_for(done, 90, f"the page to show the model ({where})")
        except AssertionError as e:
            raise AssertionError(
                f"{e}; form {form_state(page)}, rendered {slot_marks(page, MIN_FIELD_SLOTS + 1)}, "
                f"YAML {code_text(page, 'config-yaml')!r}, model "
                f"{'broken' if model.broken else model.current}, effective "
                f"{code_text(page, 'effective-config')[:300]!r}"
            ) from None
        text = got["code"]["effective-config"]  # as the settled page showed it
        return {} if text.startswith("#") else yaml.safe_load(text)

    def verify(self, model: Model, where: str) -> dict:
        effective = self.settle(model, where)
        if model.engine != "trl":
            return effective
        wrong = []
        fields = shown_fields(self.page, TRL_MAIN)
        for name in TRL_MAIN:
            value, enabled = fields[name]["value"], fields[name]["enabled"]
            if model.broken:
                if value not in ("", False) or enabled:
                    wrong.append(f"{name} shows {value!r} or can be edited with a broken YAML")
                continue
            want = model.current.get(name, effective.get(name))
            if not same(value, want):
                wrong.append(f"{name}: form {value!r}, model {want!r}")
            if name in model.current and not same(effective.get(name), model.current[name]):
                wrong.append(f"{name}: effective {effective.get(name)!r}, model {model.current[name]!r}")
        if not model.broken:
            picked = fields["#model-pick"]["value"]
            want = model.current.get("model")
            if want and Path(want).name not in picked or not want and "agent" not in picked:
                wrong.append(f"model picker {picked!r}, model {want!r}")
        assert not wrong, f"{where}: " + "; ".join(wrong)
        return effective

    def step(self, step: Step, model: Model, trail: list[str]) -> None:
        page, k = self.page, step.kind
        if k == "number":
            type_into(page, f"#cfg-{step.key} input", str(step.value))
            page.keyboard.press("Tab")
        elif k == "tick":
            page.locator(f"#cfg-{BOX} input[type=checkbox]").click()
        elif k in ("yaml_same", "yaml_other"):
            set_yaml(page, hand_edit(code_text(page, "config-yaml"), step.key, step.value, other=k == "yaml_other"))
        elif k == "yaml_invalid_fixed":
            set_yaml(page, break_yaml(code_text(page, "config-yaml")))
            model.broken = True
            self.verify(model, " → ".join(trail) + " (midway)")
            model.broken = False
            set_yaml(page, hand_edit(unbreak(code_text(page, "config-yaml")), step.key, step.value))
        elif k == "engine_round_trip":
            type_into(page, "#engine-select input", OTHER_ENGINE)
            page.keyboard.press("Enter")
            engine_was, model.engine = model.engine, OTHER_ENGINE
            self.verify(model, " → ".join(trail) + " (midway)")
            model.engine = engine_was
            type_into(page, "#engine-select input", engine_was)
            page.keyboard.press("Enter")
        elif k == "preset":
            if not page.locator("#preset-load").is_visible():
                page.click("#presets .label-wrap")
            type_into(page, "#preset-select input", step.value)
            page.keyboard.press("Enter")
            before = preset_loaded(page)
            page.click("#preset-load")
            # a preset loaded again changes nothing else the page shows: without this wait its answer could land
            # after the next step and put back what that step changed
            wait_for(lambda: preset_loaded(page) not in (before, None), 60, f"the preset {step.value} loaded")
        elif k == "model":
            page.click("#model-pick input")
            page.locator("ul[role='listbox'] li").nth(0 if step.value is None else step.value + 1).click()
        elif k == "reward_upload":
            with page.expect_file_chooser() as chooser:
                page.click("#reward-upload")
            chooser.value.set_files(self.upload)
            wait_for(lambda: "my_letter_reward" in page.inner_text("#reward-weights"), 60, "the uploaded reward")

    def launch(self, model: Model, where: str) -> dict:
        """Launch, then the run's run.yaml (the run is killed at once: only its spec matters here)."""
        page = self.page
        wait_for(lambda: page.is_enabled("#launch-btn"), 90, f"Launch enabled ({where})")
        before = {p.name for p in self.runs_dir.iterdir() if p.is_dir()}
        page.click("#launch-btn")
        new = wait_for(
            lambda: [
                p for p in self.runs_dir.iterdir() if p.is_dir() and p.name not in before and (p / "run.yaml").exists()
            ],
            120,
            f"the launched run ({where})",
        )
        run = new[0]
        wait_for(lambda: RunDir(run).read_status().get("pid"), 60, "the run's process")
        time.sleep(0.5)
        kill_run(run, grace_s=0.5)
        return yaml.safe_load((run / "run.yaml").read_text(encoding="utf-8"))["config"]


def parse(text: str):
    from aworld_gui.tabs.config_form import parse_overrides

    return parse_overrides(text)


@pytest.fixture(scope="module")
def studio(shared_studio, tmp_path_factory):
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium"
    base = tmp_path_factory.mktemp("studio-setup-model")
    st = shared_studio
    with sync_playwright() as p:
        browser = launch_chromium(p)
        yield st, browser, str(reward_file(base / "upload"))
        browser.close()


def open_setup(studio):
    st, browser, upload = studio
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.goto(st.url)
    page.click("#presets .label-wrap")  # the presets, open for the steps that load one
    page.get_by_text("Advanced: config YAML (overrides)").click()
    page.get_by_text("Effective config (after defaults)").click()  # code views are in the page only when open
    return page, Browser(page, st.runs_dir, model_paths(), upload)


def model_paths() -> list[str]:
    """The model picker's first two models (after the agent's), in its order (the catalog's)."""
    from engines.fit.model_source import local_models

    return [m["path"] for m in local_models()][:2]


def test_the_walkthroughs_sequence_form_yaml_effective_and_run_yaml_agree(studio):
    """0.005 typed into learning_rate, then learning_rate 0.002 and max_steps 6 written in the YAML: the form showed
    0.005 and 400 while the check, the effective config and run.yaml had 0.002 and 6; after a YAML that does not
    parse the fields kept their values."""
    page, ui = open_setup(studio)
    model = Model()
    ui.verify(model, "the page opened")
    # side by side at 1440 px, as a form reads (Gradio joins neighbouring inputs into one 450 px block: one field
    # per line, until each slot had a column of its own)
    tops = [page.locator(f"#cfg-{name}").bounding_box()["y"] for name in ("mode", "max_steps", "learning_rate")]
    assert max(tops) - min(tops) < 5, f"the form's first fields are not on one line: their tops {tops}"
    ui.step(Step("number", "learning_rate", 0.005), model, [])
    model.apply(Step("number", "learning_rate", 0.005), [], [])
    ui.verify(model, "0.005 typed")
    text = code_text(page, "config-yaml").replace("learning_rate: 0.005", "learning_rate: 0.002")
    set_yaml(page, text.replace("max_steps: 400", "max_steps: 6"))
    model.current.update(learning_rate=0.002, max_steps=6)
    ui.verify(model, "the YAML edited")
    assert page.input_value("#cfg-learning_rate input") == "0.002" and page.input_value("#cfg-max_steps input") == "6"
    set_yaml(page, break_yaml(code_text(page, "config-yaml")))
    model.broken = True
    ui.verify(model, "a YAML that does not parse")
    page.locator("#form-state").scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#status-config >> xpath=ancestor::div[contains(@class,'aw-card')]").screenshot(
        path=str(SHOTS / "15-setup-form-broken-yaml.png")
    )
    set_yaml(page, unbreak(code_text(page, "config-yaml")))
    model.broken = False
    ui.verify(model, "the YAML fixed")
    config = ui.launch(model, "the walkthrough")
    assert (config["learning_rate"], config["max_steps"]) == (0.002, 6)
    page.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_every_view_equals_the_model_after_every_step_and_launch(studio, seed):
    page, ui = open_setup(studio)
    steps = sequence(seed, kinds=BROWSER_KINDS, models=len(ui.models))
    model, trail = Model(), []
    ui.verify(model, "the page opened")
    try:
        for step in steps:
            trail.append(str(step))
            ui.step(step, model, trail)
            model.apply(step, ui.models, [])
            ui.verify(model, f"seed {seed}: " + " → ".join(trail))
        config = ui.launch(model, f"seed {seed}")
        for key, value in model.current.items():
            if key == "model":
                assert Path(str(config.get(key))).name == Path(value).name or config.get(key) == value
            else:
                assert same(config.get(key), value), f"seed {seed} {trail}: run.yaml {key}={config.get(key)!r}"
    except Exception as e:  # an assertion, or Playwright giving up on an element: the page and the steps, either way
        print(f"seed {seed}, steps so far: {' → '.join(trail)}: {type(e).__name__}")  # shown with the failure
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"setup-model-seed-{seed}-failed.png"), full_page=True)
        raise
    finally:
        page.close()


def test_a_number_typed_while_a_ticked_box_renders_keeps_every_key(studio):
    """use_peft ticked, then 30 typed into max_steps while the tick's render lands (the page's requests are held
    until the first key is typed, as on a loaded machine): the form rendered every field again and put 300 back
    into the box being typed into (CI's run of test_browser_config_editor saw max_steps 300 go into the YAML).
    Each field is its own render now: the tick renders only the box."""
    page, ui = open_setup(studio)
    model = Model()
    ui.verify(model, "the page opened")
    held, holding = [], [True]
    page.route("**/gradio_api/queue/join*", lambda route: held.append(route) if holding[0] else route.continue_())
    try:
        page.locator(f"#cfg-{BOX} input[type=checkbox]").click()
        wait_for(lambda: (page.wait_for_timeout(50), held)[1], 10, "the tick's derive sent")
        type_into(page, "#cfg-max_steps input", "3")
    finally:
        holding[0] = False
        for route in held:
            route.continue_()
        page.unroute("**/gradio_api/queue/join*")
    box = page.locator(f"#cfg-{BOX}")
    wait_for(lambda: "aw-cfg-set" in (box.get_attribute("class") or ""), 60, "the ticked box rendered as set")
    page.wait_for_timeout(1000)  # any other render the tick brings lands meanwhile (its check answers too)
    assert page.input_value("#cfg-max_steps input") == "3", "the render put back what the box had"
    page.keyboard.type("0")
    page.keyboard.press("Tab")
    for step in (Step("tick", BOX), Step("number", "max_steps", 30)):
        model.apply(step, ui.models, [])
    ui.verify(model, "ticked, then 30 typed while the tick rendered")
    page.close()


def test_a_preset_load_answering_after_a_tick_leaves_every_view_on_the_preset(studio):
    """The preset loaded, then loaded again with its answer held (a loaded machine), use_peft ticked meanwhile, then
    the answer let through: the load replaces the YAML whole, tick included (docs/ARCHITECTURE.md, "One spec in
    Setup"), and form, YAML and effective config all show the preset — never a ticked box over a YAML without it."""
    page, ui = open_setup(studio)
    model, preset = Model(), Step("preset", value="letters-grpo")
    ui.step(preset, model, [])
    model.apply(preset, ui.models, [])
    ui.verify(model, "the preset loaded")
    held: list = []

    def hold_the_load(route):  # the load only: a reconcile of the first load's check can still be on its way
        if not held and json.loads(route.request.post_data or "{}").get("data") == [preset.value]:
            held.append(route)
        else:
            route.continue_()

    page.route("**/gradio_api/queue/join*", hold_the_load)
    try:
        before = preset_loaded(page)
        page.click("#preset-load")
        wait_for(lambda: (page.wait_for_timeout(50), held)[1], 10, "the second load's request held")
        page.locator(f"#cfg-{BOX} input[type=checkbox]").click()
        model.apply(Step("tick", BOX), ui.models, [])
        ui.verify(model, "ticked while the second load is on its way")  # Playwright serves the routes while it waits
    finally:
        for route in held:
            route.continue_()
        page.unroute("**/gradio_api/queue/join*")
    wait_for(lambda: preset_loaded(page) not in (before, None), 60, "the second load's answer")
    model.apply(preset, ui.models, [])
    assert BOX not in model.current
    ui.verify(model, "the second load answered after the tick")
    assert not page.locator(f"#cfg-{BOX} input[type=checkbox]").is_checked()
    page.close()


def test_a_stale_check_answering_last_is_checked_again(studio):
    """A reconcile carries the page's inputs of when it was sent. One held on its way (a loaded machine) while the
    box is ticked and unticked ran, once let through, a check of the ticked page against the unticked page's check
    shown: an answer for a state the page had left, landing last. CI (stop 49) saw such an answer stay for good,
    the form "Checking…" over a YAML nothing checked. Every change of the check shown reconciles again: the stale
    answer is followed by a check of the page (held here too, so the stale state can be seen), and the page ends on
    it."""
    page, ui = open_setup(studio)
    model = Model()
    ui.verify(model, "the page opened")
    reconciles, held, mode = reconcile_fns(page), [], ["first"]

    def hold_reconciles(route):
        if json.loads(route.request.post_data or "{}").get("fn_index") in reconciles and (
            mode[0] == "all" or mode[0] == "first" and not held
        ):
            held.append(route)
        else:
            route.continue_()

    page.route("**/gradio_api/queue/join*", hold_reconciles)
    try:
        ui.step(Step("tick", BOX), model, [])
        model.apply(Step("tick", BOX), ui.models, [])
        wait_for(lambda: (page.wait_for_timeout(50), held)[1], 30, "a reconcile held")
        mode[0] = "off"
        ui.verify(model, "ticked, its reconcile held")
        ui.step(Step("tick", BOX), model, [])
        model.apply(Step("tick", BOX), ui.models, [])
        ui.verify(model, "unticked")
        mode[0], stale = "all", held.pop()
        stale.continue_()
        wait_for(lambda: form_state(page).get("current") == "0", 60, "the stale check's answer shown")
        wait_for(lambda: (page.wait_for_timeout(50), held)[1], 30, "the reconcile after the stale answer")
        assert form_state(page).get("current") == "0", "the page left the stale check before its reconcile ran"
    finally:
        mode[0] = "off"
        for route in held:
            route.continue_()
        page.unroute("**/gradio_api/queue/join*")
    assert model.current[BOX] is False
    ui.verify(model, "the stale answer reconciled")
    page.close()


def test_a_typo_in_a_field_is_said_there_and_fixed_there_and_leaving_a_field_keeps_its_line(studio):
    """Issue 42, items 1 and 2. ``abc`` typed into learning_rate and left: the field turned disabled with no word
    why, and only the YAML editor got the user out; now it stays editable, says what is wrong (and so does the Config
    card), and a number typed there fixes it. A click in and out of prompts_per_step rewrote its line without its
    comment; now the YAML stays as it was, and an edit keeps the line's comment."""
    page, ui = open_setup(studio)
    model = Model()
    ui.verify(model, "the page opened")
    before = code_text(page, "config-yaml")
    commented = [ln for ln in before.splitlines() if ln.startswith("prompts_per_step:")][0]
    assert "#" in commented, "the demo's prompts_per_step line has a comment"
    page.click("#cfg-prompts_per_step input")
    page.keyboard.press("Tab")
    page.click("#cfg-max_completion_length input")  # a field the YAML does not set: its effective value shown
    page.keyboard.press("Tab")
    page.wait_for_timeout(300)  # a field's edit is made in the page, at once: none came
    assert code_text(page, "config-yaml") == before

    type_into(page, "#cfg-learning_rate input", "abc")
    page.keyboard.press("Tab")
    field = page.locator("#cfg-learning_rate")
    wait_for(lambda: "not a number" in field.inner_text(), 60, "the field saying what is wrong")
    assert (
        page.locator("#cfg-learning_rate input").is_enabled() and page.input_value("#cfg-learning_rate input") == "abc"
    )
    wait_for(
        lambda: page.get_attribute("#status-config .aw-mod", "data-status") == "error", 60, "the Config card's error"
    )
    type_into(page, "#cfg-learning_rate input", "0.002")
    page.keyboard.press("Tab")
    model.apply(Step("number", "learning_rate", 0.002), ui.models, [])
    ui.verify(model, "the typo fixed in its field")
    assert "not a number" not in page.locator("#cfg-learning_rate").inner_text()
    assert page.get_attribute("#status-config .aw-mod", "data-status") != "error"

    # a value the data cannot feed is said at its field too, not only in the Config card (issue 42)
    type_into(page, "#cfg-prompts_per_step input", "64")
    page.keyboard.press("Tab")
    model.apply(Step("number", "prompts_per_step", 64), ui.models, [])  # refused by the check: no effective config
    field = page.locator("#cfg-prompts_per_step")
    wait_for(lambda: "training would run 0 steps" in field.inner_text(), 60, "the field saying the data is too small")
    type_into(page, "#cfg-prompts_per_step input", "4")
    page.keyboard.press("Tab")
    model.apply(Step("number", "prompts_per_step", 4), ui.models, [])
    ui.verify(model, "prompts_per_step edited")
    assert "training would run 0 steps" not in field.inner_text()
    line = [ln for ln in code_text(page, "config-yaml").splitlines() if ln.startswith("prompts_per_step:")][0]
    assert line == "prompts_per_step: 4" + commented[len("prompts_per_step: 8") :], line  # its comment, in place
    page.close()


def test_a_message_goes_when_the_state_it_describes_goes(studio, tmp_path):
    """Issue 42 item 4: an upload's note ("Uploaded bad_agent.yaml") stayed beside letters_agent.yaml picked after it; "The test set …
    was cleared: letters_test.jsonl" stayed while a preset put that test set back; "Loaded the preset, checking it
    now" stayed beside uploads made after it. A note belongs to the state it describes: the user's next pick or
    upload ends the preset's, another agent picked ends the upload's, and a preset (or a clone) replaces them all."""
    page, ui = open_setup(studio)
    ui.verify(Model(), "the page opened")
    demo = Path(__file__).resolve().parent.parent / "assets"
    agent, train = tmp_path / "my_agent.yaml", tmp_path / "my_train.jsonl"
    agent.write_text((demo / "agents" / "letters_agent.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    train.write_text((demo / "datasets" / "letters_train.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    note = lambda elem: page.inner_text(f"#{elem}").strip()  # noqa: E731

    def upload(button: str, path: Path) -> None:
        with page.expect_file_chooser() as chooser:
            page.click(f"#{button}")
        chooser.value.set_files(str(path))

    uploaded = lambda: "uploaded" in page.input_value("#agent-select input") and note("agent-note")  # noqa: E731
    upload("agent-upload", agent)  # its note: the relative paths in it, resolved again
    wait_for(uploaded, 60, "the upload's note")
    type_into(page, "#agent-select input", "letters_agent")
    page.keyboard.press("Enter")
    wait_for(lambda: note("agent-note") == "", 30, "the upload's note gone with the upload picked away")

    ui.step(Step("preset", value="letters-grpo"), Model(), [])
    assert "letters-grpo" in note("preset-msg")
    upload("train-upload", train)  # not the test set's pair: the test set is cleared, and says so
    wait_for(lambda: "letters_test.jsonl" in note("data-note"), 60, "the cleared test set's note")
    assert note("preset-msg") == "", "the preset's message outlived an upload made after it"
    upload("agent-upload", agent)
    wait_for(uploaded, 60, "the second upload's note")
    ui.step(Step("preset", value="letters-grpo"), Model(), [])  # puts the test set back, and the shipped agent
    wait_for(lambda: note("data-note") == "" and note("agent-note") == "", 30, "the notes the preset replaced gone")
    assert "letters_test.jsonl" in page.input_value("#test-select input")
    assert "letters-grpo" in note("preset-msg")
    page.close()
