"""The config card in headless Chromium: the memory estimate of the demo shows with its parts; the
full-settings editor lists every TRL field with TRL's help, filters them by search, sets one under
TRL's own name (the checks accept it); a misspelled key shows TRL's name as a suggestion and disables
Launch; the model picker offers the shipped models. Screenshots go to artifacts/screenshots/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from testing import waiting
from testing.form_page import form_settled, form_state, overrides, show_overrides
from testing.studio import CHROMIUM, launch_chromium

SHOTS = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"
MODULES = ("agent", "dataset", "reward", "config", "engine")


def shot(page, name: str, selector: str | None = None) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    if selector:
        page.locator(selector).screenshot(path=str(SHOTS / f"{name}.png"))
    else:
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def wait_for(fn, timeout_s: float, what: str):
    return waiting.wait_for(fn, timeout_s, what, retry_errors=True)


def chip(page, module: str) -> str | None:
    return page.get_attribute(f'#checks-strip .aw-chip[data-module="{module}"]', "data-status")


def all_green(page) -> bool:
    return all(chip(page, m) in ("ok", "warning") for m in MODULES)


def type_into(page, selector: str, text: str) -> None:
    """Type like a user (Gradio's input events follow key presses; a programmatic fill sends none)."""
    page.click(selector)
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.type(text)


def pick(page, name: str) -> None:
    """Choose a setting; its help (and current value) comes back from the studio before we type a value."""
    type_into(page, "#setting-pick input", name)
    page.keyboard.press("Enter")
    wait_for(lambda: page.locator(f'#setting-help tr[data-name="{name}"]').count() == 1, 30, f"the help of {name}")


def row_names(page) -> list[str]:
    return page.evaluate(
        "() => [...document.querySelectorAll('#settings-table tr[data-name]')].map(r => r.dataset.name)"
    )


@pytest.fixture(scope="module")
def page(shared_studio):
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium"
    studio = shared_studio
    with sync_playwright() as p:
        browser = launch_chromium(p)
        pg = browser.new_page(viewport={"width": 1440, "height": 1000})
        pg.goto(studio.url)
        wait_for(lambda: all_green(pg), 180, "the first check of the demo")
        yield pg
        browser.close()


def test_the_memory_estimate_of_the_demo_shows_in_the_config_card(page):
    mem = page.locator('#memory-estimate [data-testid="memory-estimate"]')
    wait_for(lambda: mem.get_attribute("data-status") == "ok", 60, "the memory estimate")
    text = mem.inner_text()
    assert "Memory estimate" in text and "GB peak per process of" in text and "available RAM" in text
    assert "runtime" in text and "weights" in text and "trainable of" in text
    assert 0.3 < float(mem.get_attribute("data-gb")) < 2.0
    page.locator("#memory-estimate").scroll_into_view_if_needed()
    shot(page, "10-config-memory-estimate", "#status-config >> xpath=ancestor::div[contains(@class,'aw-card')]")


def test_the_full_settings_editor_lists_searches_and_sets_trl_fields(page):
    page.click("#all-settings button, #all-settings .label-wrap")
    table = page.locator('#settings-table [data-testid="settings-count"]')
    wait_for(lambda: int(table.get_attribute("data-total") or 0) > 150, 60, "every GRPO setting listed")
    total = int(table.get_attribute("data-total"))
    type_into(page, "#settings-search textarea", "epsilon upper")
    names = wait_for(lambda: (n := row_names(page)) and len(n) < 10 and n, 30, "the search to filter")
    assert "epsilon_high" in names and "learning_rate" not in names and int(table.get_attribute("data-shown")) < total
    help_text = page.locator('#settings-table tr[data-name="epsilon_high"]').inner_text()
    assert "Upper-bound epsilon value for clipping" in help_text  # TRL's own help (GRPOConfig metadata)
    page.locator("#settings-table").scroll_into_view_if_needed()
    shot(page, "11-config-all-settings-search", "#all-settings")

    pick(page, "epsilon_high")
    type_into(page, "#setting-value textarea", "0.28")
    page.click("#setting-set")
    row = page.locator('#setting-help tr[data-name="epsilon_high"]')
    wait_for(
        lambda: "aw-set" in (row.get_attribute("class") or "") and "0.28" in row.inner_text(),
        30,
        "the setting marked as set",
    )
    wait_for(
        lambda: chip(page, "config") in ("ok", "warning") and page.is_enabled("#launch-btn"),
        60,
        "the checks to accept TRL's key",
    )
    page.locator("#setting-help").scroll_into_view_if_needed()
    shot(page, "12-config-all-settings-set", "#all-settings")
    page.get_by_text("Advanced: config YAML (overrides)").click()
    wait_for(lambda: "epsilon_high: 0.28" in overrides(page), 30, "the key in the overrides YAML")


def test_a_misspelled_trl_key_shows_trls_name_and_disables_launch(page):
    type_into(page, "#setting-pick input", "epsilon_hihg")  # not a setting: a custom value
    page.keyboard.press("Enter")
    wait_for(lambda: page.input_value("#setting-pick input") == "epsilon_hihg", 10, "the custom key picked")
    type_into(page, "#setting-value textarea", "0.3")
    page.click("#setting-set")
    wait_for(lambda: chip(page, "config") == "error", 60, "the config error")
    msg = page.inner_text("#status-config")
    assert "unknown config key 'epsilon_hihg' (did you mean \"epsilon_high\"?)" in msg
    assert not page.is_enabled("#launch-btn")
    page.locator("#status-config").scroll_into_view_if_needed()
    shot(page, "13-config-misspelled-trl-key", "#status-config >> xpath=ancestor::div[contains(@class,'aw-card')]")
    page.click("#setting-remove")
    wait_for(lambda: all_green(page), 60, "green again once the key is removed")


def test_the_model_picker_offers_the_shipped_models(page):
    page.click("#model-pick input")
    options = page.locator("ul[role='listbox'] li")
    wait_for(lambda: options.count() >= 3, 30, "the model options")
    texts = [options.nth(i).inner_text() for i in range(options.count())]
    assert any("tiny-letters" in t for t in texts) and any("tiny-calc" in t for t in texts)
    # picked, the config's model is the one trained: the Agent card names it (it kept naming the agent's model)
    agent_model = page.locator('#agent-spec [data-testid="agent-model"]')
    assert agent_model.get_attribute("data-source") == "agent"
    options.nth(next(i for i, t in enumerate(texts) if "tiny-calc" in t)).click()
    wait_for(
        lambda: agent_model.get_attribute("data-source") == "config" and "tiny-calc" in agent_model.inner_text(),
        60,
        "the Agent card naming the config's model",
    )
    assert "trained instead of the agent" in page.inner_text("#agent-spec")
    page.click("#model-pick input")  # back to the agent's model, as the next tests expect
    page.locator("ul[role='listbox'] li").nth(0).click()
    wait_for(lambda: agent_model.get_attribute("data-source") == "agent", 60, "the agent's model again")


def check_id(page) -> str:
    """Which check the Setup strip shows (a new id after every check)."""
    return page.get_attribute("#checks-strip .aw-strip", "data-check") or ""


def field(name: str, kind: str = "input") -> str:
    return f"#cfg-{name} input" if kind == "input" else f'label:has-text("{name}") input[type="checkbox"]'


def test_form_edits_reach_the_yaml_in_the_page_and_late_checks_leave_them_alone(page):
    """Every request held at the network (checks and the form's renders) while a field is emptied, a box ticked and
    a number typed: the YAML has all three at once (the edits are made in the page), and the answers coming
    afterwards, the older ones first, change no field: the form is rendered from the YAML. Sent to the server, the
    edits waited for it, and a late answer set a field back: the typed 30 became the default, the box came
    unticked (CI, under load)."""
    held, holding = [], [True]
    page.route("**/gradio_api/queue/join*", lambda route: held.append(route) if holding[0] else route.continue_())
    try:
        show_overrides(page)
        type_into(page, field("max_steps"), "")  # emptied: the key goes
        page.locator(field("use_peft", "box")).check()
        type_into(page, field("max_steps"), "30")
        page.keyboard.press("Tab")  # a number is set on leaving its field
        wait_for(
            lambda: {"use_peft: true", "max_steps: 30"} <= set(overrides(page).splitlines()),
            10,
            "both edits in the YAML while every request waits",
        )
        assert held, "the edits started no check"
    finally:
        holding[0] = False
        for route in held:  # in the order they were sent
            route.continue_()
        page.unroute("**/gradio_api/queue/join*")
    before = check_id(page)
    wait_for(lambda: check_id(page) != before and all_green(page), 60, "the held checks answered")
    page.wait_for_timeout(1000)  # the last fill applied (it follows its check)
    assert page.input_value(field("max_steps")) == "30" and page.locator(field("use_peft", "box")).is_checked()
    assert {"use_peft: true", "max_steps: 30"} <= set(overrides(page).splitlines())
    page.locator(field("use_peft", "box")).uncheck()  # as the next test expects it
    wait_for(lambda: "use_peft: false" in overrides(page).splitlines(), 10, "use_peft off")


def test_an_emptied_field_shows_its_effective_value_again_after_the_user_leaves_it(page):
    """Emptied, a field is not refilled while it has the focus (the user is about to type, and a check answering
    meanwhile leaves it alone); once the user leaves it the key goes from the YAML and the field shows its effective
    value: here derived from the agent (2 tokens), not the engine's 256."""
    box = field("max_completion_length")
    wait_for(lambda: page.input_value(box) == "2", 30, "the effective value in the field")
    show_overrides(page)
    before = check_id(page)
    page.click("#config-yaml .cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.insert_text("# a comment\n")  # any spec edit: a check and a render
    type_into(page, box, "")
    wait_for(lambda: check_id(page) != before and all_green(page), 60, "the check of the comment")
    page.wait_for_timeout(500)
    assert page.input_value(box) == ""  # still being edited
    page.keyboard.press("Tab")
    wait_for(lambda: "max_completion_length" not in overrides(page), 10, "the key gone from the YAML")
    wait_for(
        lambda: page.input_value(box) == "2" and all_green(page),
        60,
        "the effective value (from the agent) in the field",
    )
    assert "max_completion_length" not in overrides(page)  # shown, not written


def test_a_field_the_yaml_does_not_set_emptied_and_left_shows_its_value_again(page):
    """Emptied and left, a field whose key the YAML does not set changes no spec, so no render puts its value back:
    the box stayed empty, showing a value the run would not use. The page puts the effective value back."""
    show_overrides(page)
    wait_for(lambda: all_green(page) and form_settled(page), 60, "the page settled")
    text = overrides(page)
    page.click("#config-yaml .cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.insert_text("".join(line + "\n" for line in text.splitlines() if not line.startswith("beta:")))
    wait_for(lambda: "beta" not in overrides(page) and all_green(page) and form_settled(page), 60, "beta unset")
    shown = page.input_value(field("beta"))
    assert shown not in ("", None)
    spec = form_state(page)["spec"]
    type_into(page, field("beta"), "")
    page.keyboard.press("Tab")
    wait_for(lambda: page.input_value(field("beta")) == shown, 10, "beta's effective value back in its box")
    assert "beta" not in overrides(page) and form_state(page)["spec"] == spec  # shown, not written
    page.click("#config-yaml .cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)  # as the next test expects it
    wait_for(lambda: "beta:" in overrides(page) and all_green(page) and form_settled(page), 60, "beta back")


def test_yaml_pasted_while_an_engine_switch_answers_stays_and_the_form_shows_it(page):
    """verl picked and its YAML pasted at once, the pick's answer held at the network until after the paste: the
    answer brings verl's (empty) YAML, which used to replace the pasted text; the page keeps what was pasted, and
    verl's form shows it. Back on trl, trl's YAML comes back."""
    show_overrides(page)
    trl_yaml = overrides(page)
    held, holding = [], [True]
    page.route("**/gradio_api/queue/join*", lambda route: held.append(route) if holding[0] else route.continue_())
    try:
        type_into(page, "#engine-select input", "verl")
        page.keyboard.press("Enter")
        wait_for(lambda: (page.wait_for_timeout(50), held)[1], 10, "the engine pick sent")  # routes run in waits
        page.click("#config-yaml .cm-content")
        page.keyboard.press("Control+a")
        page.keyboard.insert_text("total_steps: 3\n")
    finally:
        holding[0] = False
        for route in held:
            route.continue_()
        page.unroute("**/gradio_api/queue/join*")
    wait_for(lambda: page.input_value(field("total_steps")) == "3", 60, "verl's form showing the pasted YAML")
    try:
        wait_for(lambda: chip(page, "engine") == "error", 60, "verl checked (no GPU here)")
    except AssertionError as e:
        raise AssertionError(
            f"{e}; chips {[chip(page, m) for m in MODULES]}, engine "
            f"{page.input_value('#engine-select input')!r}, overrides {overrides(page)!r}"
        ) from None
    page.wait_for_timeout(1000)
    assert overrides(page).strip() == "total_steps: 3"
    type_into(page, "#engine-select input", "trl")
    page.keyboard.press("Enter")
    wait_for(
        lambda: overrides(page) == trl_yaml and all_green(page) and form_settled(page),
        60,
        "trl and its YAML back, and its form",
    )


def test_a_lora_run_shows_trainable_and_total_parameters_in_the_monitor(page):
    peft, steps = field("use_peft", "box"), field("max_steps")
    # the page as the previous test left it: its last check answered and the form rendered from it (a click on a
    # field landing while that field's own render replaces it is lost — each field renders only when what it shows
    # changes: tests/test_browser_setup_model.py types into one while another's render lands)
    wait_for(lambda: all_green(page) and form_settled(page), 60, "the form rendered from the last check")
    page.locator(peft).check()
    type_into(page, steps, "30")
    page.keyboard.press("Tab")
    show_overrides(page)  # both edits reach the overrides YAML (made in the page: config_form.py)
    try:
        wait_for(
            lambda: {"use_peft: true", "max_steps: 30"} <= set(overrides(page).splitlines()),
            60,
            "use_peft and max_steps in the overrides YAML",
        )
    except AssertionError as e:  # say what the page shows instead
        shown, box = page.input_value(steps), page.locator(peft).is_checked()
        raise AssertionError(
            f"{e}; overrides {overrides(page)!r}, max_steps field {shown!r}, use_peft ticked {box}"
        ) from None
    mem = page.locator('#memory-estimate [data-testid="memory-estimate"]')
    try:
        wait_for(
            lambda: "7.2k trainable of 84.1k parameters" in mem.inner_text() and page.is_enabled("#launch-btn"),
            60,
            "the LoRA estimate (rank-16 adapters on q/v projections)",
        )
    except AssertionError as e:  # say what the page shows instead
        raise AssertionError(
            f"{e}; overrides {overrides(page)!r}, config {chip(page, 'config')}: "
            f"{page.inner_text('#status-config')[:400]!r}, estimate {mem.inner_text()[:300]!r}, "
            f"launch enabled {page.is_enabled('#launch-btn')}"
        ) from None
    page.click("#launch-btn")
    params = page.locator('#run-header [data-testid="stat-params"]')
    wait_for(lambda: params.count() and params.get_attribute("data-trainable"), 240, "the parameter counts")
    # rank-16 adapters on q_proj/v_proj of 2 layers: 2 × 16 × ((64+64) + (64+32)) = 7168 of 84096 + 7168
    assert (params.get_attribute("data-trainable"), params.get_attribute("data-total")) == ("7168", "91264")
    stat = params.locator("xpath=..").inner_text()
    assert "7.2k / 91.3k" in stat and "7.9 % · LoRA" in stat
    try:
        wait_for(
            lambda: (
                page.get_attribute('#run-header [data-testid="run-header"]', "data-state") in ("finished", "failed")
            ),
            240,
            "the short LoRA run to end",
        )
    except AssertionError:
        print("HEADER", page.inner_text("#run-header"))
        raise
    shot(page, "14-monitor-lora-parameters", "#run-header")
    assert page.get_attribute('#run-header [data-testid="run-header"]', "data-state") == "finished", page.inner_text(
        "#run-header"
    )
