"""The one implementation of the overrides YAML's edits, aworld_gui/static/yaml_edit.js (``window.awYaml``), unit-tested
in headless Chromium on a blank page with the module loaded: a key set, replaced and removed with every other line,
comment and the order kept; block values; a key in a comment or nested left alone; CRLF; an empty text; a form field's
value as its line; a line the server rendered (the settings editor's Set / Remove) put into the text the page has then;
an engine picked, with its memory of each engine's text. The Setup's model-based tests (tests/test_setup_model.py,
tests/test_browser_setup_model.py) hold the form derived from the text these edits make."""

from __future__ import annotations

import os

import pytest
import yaml
from playwright.sync_api import sync_playwright

from aworld_gui.core import inputs as inp
from aworld_gui.tabs.config_editor import ConfigEditor
from aworld_gui.tabs.config_form import AGENT_MODEL, slot_mark, switch_engine_js, yaml_edit_js
from testing.studio import CHROMIUM, launch_chromium

KEEP = {"__type__": "update"}  # the page step leaves the YAML as it is
TEXT = (
    "# Demo config\nmode: grpo\nlearning_rate: 0.001   # tuned\nmax_steps: 300\n"
    "lora_target_modules:\n  - q_proj\n  - v_proj\nbeta: 0.04\n"
)


@pytest.fixture(scope="module")
def page():
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium"
    with sync_playwright() as p:
        browser = launch_chromium(p)
        pg = browser.new_page()
        pg.set_content('<div id="cfg-max_steps"><input></div>')
        pg.add_script_tag(content=yaml_edit_js())
        yield pg
        browser.close()


def call(page, name: str, *args):
    """``window.awYaml[name](...args)`` in the page."""
    return page.evaluate("([name, args]) => window.awYaml[name](...args)", [name, list(args)])


def set_line(page, text, key, line):
    return call(page, "setLine", text, key, line)


def test_a_key_is_set_replaced_and_removed_and_every_other_line_stays_in_its_place(page):
    assert set_line(page, TEXT, "max_steps", "max_steps: 30") == TEXT.replace("max_steps: 300", "max_steps: 30")
    assert set_line(page, TEXT, "epsilon", "epsilon: 0.2") == TEXT + "epsilon: 0.2\n"  # a new key: appended
    assert set_line(page, TEXT, "mode", None) == TEXT.replace("mode: grpo\n", "")
    assert set_line(page, TEXT, "epsilon", None) == KEEP  # not there: nothing to remove
    assert set_line(page, TEXT, "max_steps", "max_steps: 300") == KEEP  # the same line: nothing changes
    doubled = "beta: 0.1\nmode: grpo\nbeta: 0.2\n"  # a key twice (PyYAML takes the last): one line left
    assert set_line(page, doubled, "beta", "beta: 0.3") == "beta: 0.3\nmode: grpo\n"
    assert set_line(page, "mode: grpo\n\n\n", "beta", "beta: 0.1") == "mode: grpo\nbeta: 0.1\n"  # blank ends go
    assert set_line(page, "mode: grpo\n\n\n", "mode", "mode: grpo") == KEEP
    assert set_line(page, "mode: grpo", "beta", "beta: 0.1") == "mode: grpo\nbeta: 0.1\n"  # no newline at its end


def test_a_replaced_line_keeps_its_comment_at_its_column(page):
    """Issue 42: leaving a field rewrote its line without its comment (``prompts_per_step: 8   # x num_generations…``
    became ``prompts_per_step: 8``). A ``#`` in quotes is no comment."""
    text = 'model: "a #b"   # quoted: not a comment\n' + TEXT
    for key, line, want in [
        ("learning_rate", "learning_rate: 0.002", "learning_rate: 0.002   # tuned"),
        ("learning_rate", "learning_rate: 0.00001", "learning_rate: 0.00001 # tuned"),  # longer: one space
        ("model", "model: b", "model: b        # quoted: not a comment"),
        ("model", 'model: "c # d"', 'model: "c # d"  # quoted: not a comment'),
        ("mode", "mode: sft", "mode: sft"),
    ]:
        got = set_line(page, text, key, line)
        assert got == text.replace(next(ln for ln in text.splitlines() if ln.startswith(f"{key}:")), want), got
    assert call(page, "commentAt", 'a: "x # y" # z') == 11
    assert call(page, "commentAt", "a: 'it''s # no' # z") == 16
    assert call(page, "commentAt", "url: http://h/p#frag") == -1  # a # not after a space


def test_a_block_value_goes_with_its_key_and_the_lines_after_it_stay(page):
    assert set_line(page, TEXT, "lora_target_modules", "lora_target_modules: [k_proj]") == (
        "# Demo config\nmode: grpo\nlearning_rate: 0.001   # tuned\nmax_steps: 300\n"
        "lora_target_modules: [k_proj]\nbeta: 0.04\n"
    )
    block = "lora_target_modules:\n  - q_proj\n\n  # more\n  - v_proj\n\n# beta's comment\nbeta: 0.04\n"
    assert set_line(page, block, "lora_target_modules", None) == "\n# beta's comment\nbeta: 0.04\n"
    unindented = "generation_kwargs:\n  top_k: 5\n  top_p: 0.9\nlist:\n- a\n- b\nbeta: 0.04\n"
    assert set_line(page, unindented, "list", "list: [c]") == unindented.replace("list:\n- a\n- b\n", "list: [c]\n")
    assert set_line(page, unindented, "generation_kwargs", None) == "list:\n- a\n- b\nbeta: 0.04\n"
    assert set_line(page, "beta: 0.04\nlist:\n  - a\n", "list", None) == "beta: 0.04\n"  # a block at the end


def test_a_key_in_a_comment_or_nested_or_in_a_value_is_not_touched(page):
    text = (
        "# max_steps: 3 (what the demo used)\n"
        "generation_kwargs:\n  max_steps: 5\n"
        "items:\n  - max_steps: 6\n"
        'note: "max_steps: 7"\n'
        "other: 1   # max_steps: 8\n"
    )
    got = set_line(page, text, "max_steps", "max_steps: 30")
    assert got == text + "max_steps: 30\n"
    assert yaml.safe_load(got)["generation_kwargs"] == {"max_steps": 5} and yaml.safe_load(got)["max_steps"] == 30
    assert set_line(page, text, "max_steps", None) == KEEP
    assert not call(page, "keyLine", "  max_steps: 5", "max_steps") and call(
        page, "keyLine", "max_steps : 5", "max_steps"
    )


def test_crlf_line_ends_are_kept(page):
    crlf = TEXT.replace("\n", "\r\n")
    assert set_line(page, crlf, "max_steps", "max_steps: 30") == crlf.replace("max_steps: 300", "max_steps: 30")
    assert set_line(page, crlf, "beta", None) == crlf.replace("beta: 0.04\r\n", "")
    assert set_line(page, crlf, "epsilon", "epsilon: 0.2") == crlf + "epsilon: 0.2\r\n"
    assert set_line(page, crlf, "lora_target_modules", None) == crlf.replace(
        "lora_target_modules:\r\n  - q_proj\r\n  - v_proj\r\n", ""
    )
    assert set_line(page, crlf + "\r\n\r\n", "mode", "mode: grpo") == KEEP


def test_an_empty_text(page):
    for empty in ("", None, "\n\n"):
        assert set_line(page, empty, "beta", "beta: 0.1") == "beta: 0.1\n"
        assert set_line(page, empty, "beta", None) == KEEP
    assert call(page, "edit", "max_steps", "int", "30", "") == "max_steps: 30\n"
    assert call(page, "applyEdit", {"key": "beta", "line": None}, "") == KEEP


# (field, its type, the value the page's field holds, the value the YAML then holds: None, the key is not set)
EDITS = [
    ("max_steps", "int", 30, 30),
    ("max_steps", "int", "30", 30),  # a number is typed into a text box
    ("max_steps", "int", 29.6, 30),  # an int field's number is rounded, as Gradio's Number does
    ("max_steps", "int", " 12 ", 12),
    ("max_steps", "int", "abc", "abc"),  # not a number: written as typed, the check says so at the field
    ("learning_rate", "float", 1e-05, 1e-05),  # PyYAML reads 1e-05 (no dot) as a string
    ("learning_rate", "float", "1e-7", 1e-07),
    ("learning_rate", "float", 2, 2.0),
    ("learning_rate", "float", 2.5e21, 2.5e21),
    ("beta", None, 0.5, 0.5),
    ("use_peft", "bool", True, True),
    ("use_peft", "bool", False, False),
    ("lr_scheduler_type", None, "cosine", "cosine"),
    ("model", "str", "true", "true"),  # stays a string
    ("model", "str", "Yes", "Yes"),
    ("model", "str", "null", "null"),
    ("model", "str", "Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B"),
    ("model", "str", "1e-5", "1e-5"),
    ("model", "str", ".inf", ".inf"),
    ("model", "str", "_under.score", "_under.score"),
    ("model", "str", 'a: "b" # c', 'a: "b" # c'),
    ("model", "str", "模型/路径", "模型/路径"),
    ("max_steps", "int", None, None),  # emptied: the key goes
    ("max_steps", "int", "", None),
    ("model", "str", "", None),
    ("lora_target_modules", "str", "all-linear", "all-linear"),  # a block value goes with its key
    ("model", "str", AGENT_MODEL, None),  # the model picker back on the agent's model: the key goes
]


@pytest.mark.parametrize("name,ftype,value,want", EDITS)
def test_a_form_field_s_edit_sets_its_key_to_the_value_it_holds(page, name, ftype, value, want):
    for text in (TEXT, "", TEXT.rstrip("\n")):
        got = call(page, "edit", name, ftype, value, text)
        before = yaml.safe_load(text) or {}
        if got == KEEP:  # the page's YAML stays as it is
            assert before.get(name) == want, (text, want)
            continue
        after = yaml.safe_load(got)
        assert after.get(name) == want and (name in after) == (want is not None), got
        assert {k: v for k, v in after.items() if k != name} == {k: v for k, v in before.items() if k != name}
        block = ("  - ",) if name == "lora_target_modules" else ()
        others = [ln for ln in text.splitlines() if not ln.startswith((f"{name}:", *block))]
        assert [ln for ln in got.splitlines() if not ln.startswith(f"{name}:")] == others  # the rest kept as is
        assert got.endswith("\n") and not got.endswith("\n\n")
        if value in ("cosine", "Qwen/Qwen2.5-0.5B", "_under.score", "all-linear"):
            assert f"{name}: {value}\n" in got  # a name or a path stays plain


def test_the_module_s_agent_model_is_the_picker_s(page):
    assert page.evaluate("window.awYaml.AGENT_MODEL") == AGENT_MODEL
    assert call(page, "line", "model", "str", AGENT_MODEL) is None


def test_a_field_left_as_it_was_shown_changes_nothing(page):
    """A click in and out of a field: one the YAML does not set pinned its effective value into the YAML; one it sets
    wrote its line again. Neither changes the YAML now; a value typed over the shown one still does, and so does one
    typed back to the shown value after an edit the render has not caught up with (the YAML sets the key then)."""

    def field(key, ftype, shown, value, text):
        return call(page, "fieldEdit", key, ftype, shown, None, value, text)

    assert field("max_completion_length", "int", "256", "256", TEXT) == KEEP  # not set: effective kept out
    assert field("learning_rate", "float", "0.001", "0.001", TEXT) == KEEP  # set: its line as it is
    assert yaml.safe_load(field("max_completion_length", "int", "256", "300", TEXT))["max_completion_length"] == 300
    edited = TEXT + "max_completion_length: 300\n"  # typed 300, left; then 256 typed back before the render
    assert yaml.safe_load(field("max_completion_length", "int", "256", "256", edited))["max_completion_length"] == 256


def test_a_field_emptied_that_the_yaml_does_not_set_shows_its_value_again(page):
    box = "#cfg-max_steps input"
    page.fill(box, "")
    assert call(page, "fieldEdit", "max_steps", "int", "400", box, "", "mode: grpo\n") == KEEP
    page.wait_for_function(f"document.querySelector({box!r}).value === '400'")
    page.fill(box, "")  # a key the YAML sets, emptied: the key goes (the update after it shows the effective value)
    assert call(page, "fieldEdit", "max_steps", "int", "300", box, "", TEXT) == TEXT.replace("max_steps: 300\n", "")
    page.wait_for_timeout(50)
    assert page.input_value(box) == ""


def test_a_slot_s_edit_reads_its_key_type_and_shown_value_from_its_mark(page):
    shown = {"name": "max_steps"}
    page.evaluate(
        "html => document.body.insertAdjacentHTML('beforeend', html)",
        slot_mark(3, shown, key="max_steps", ftype="int", value="300", box=None) + slot_mark(4, None),
    )
    assert call(page, "slotEdit", 3, "30", TEXT) == TEXT.replace("max_steps: 300", "max_steps: 30")
    assert call(page, "slotEdit", 3, "300", TEXT) == KEEP
    assert call(page, "slotEdit", 4, "30", TEXT) == KEEP  # a slot with no field: no edit
    assert call(page, "slotEdit", 9, "30", TEXT) == KEEP  # no such slot


@pytest.mark.parametrize(
    "key,typed,value",
    [
        ("lora_target_modules", "[k_proj, o_proj]", ["k_proj", "o_proj"]),
        ("lora_target_modules", "- k_proj", ["k_proj"]),
        ("epsilon_high", "0.28", 0.28),
        ("learning_rate", "1.0e-05", 1e-05),
        ("model", "Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B"),
        ("generation_kwargs", "top_k: 5", {"top_k": 5}),
        ("mode", "sft", "sft"),
        ("note", "'x # y'", "x # y"),
        ("lora_target_modules", str([f"proj_{i}" for i in range(30)]), [f"proj_{i}" for i in range(30)]),  # one line
        ("my key: x", "1", 1),  # a name typed into the picker that YAML must quote
        ("max_steps", None, None),  # Remove
    ],
)
def test_a_line_the_server_renders_goes_into_the_yaml_the_page_has_then(page, key, typed, value):
    """Set / Remove in the settings editor: the server parses the value typed and renders the key's line
    (ConfigEditor.on_set), the page puts it into its YAML as it is then (so an edit made meanwhile stays)."""
    editor = ConfigEditor(studio=None)
    edit, _ = editor.on_set(key, typed) if typed is not None else editor.on_remove(key)
    text = TEXT + "use_peft: true\n"  # ticked in the page while the server answered
    got = call(page, "applyEdit", edit, text)
    after = yaml.safe_load(got)
    assert after.get(key) == value and (key in after) == (value is not None)
    assert {k: v for k, v in after.items() if k != key} == {k: v for k, v in yaml.safe_load(text).items() if k != key}
    assert got.startswith("# Demo config\n") and "# tuned" in got  # the comments kept
    assert len(got.splitlines()) == len(text.splitlines()) + (key not in text) - (key in text and value is None) - (
        2 * (key == "lora_target_modules")
    )  # one line for the key's, its block value gone
    assert call(page, "applyEdit", None, text) == KEEP  # an error: no edit
    assert editor.on_set(key, "[unclosed")[0] is None and editor.on_set("", "1")[0] is None


def switch(page, engine, text, memory, demos=None):
    return page.evaluate(f"([e, t, m]) => ({switch_engine_js('trl', demos)})(e, t, m)", [engine, text, memory])


def test_an_engine_picked_puts_the_last_engine_s_text_aside_and_brings_its_own_back(page):
    """Switching the engine to verl used to keep the trl demo's overrides (unknown keys to verl); each engine keeps
    its own. The memories are those tests/test_gui_studio.py's engine notes are written for."""
    trl = "learning_rate: 0.001\nbeta: 0.04\n"
    fresh = {"engine": "trl", "previous": "trl", "texts": {}}  # config_form.fresh_memory("trl")
    text, memory = switch(page, "verl", trl, fresh)
    assert text == "" and memory == {"engine": "verl", "previous": "trl", "texts": {"trl": trl}, "demo": False}
    text, memory = switch(page, "trl", "total_steps: 3\n", memory)
    assert text == trl and memory == {"engine": "trl", "previous": "verl", "texts": {"verl": "total_steps: 3\n"}}
    again, memory = switch(page, "trl", trl, memory)  # the same engine again: nothing moves
    assert again == KEEP and memory == {"engine": "trl", "previous": "trl", "texts": {"verl": "total_steps: 3\n"}}
    text, memory = switch(page, "verl", trl, memory)  # verl's own text back
    assert text == "total_steps: 3\n" and memory == {"engine": "verl", "previous": "trl", "texts": {"trl": trl}}
    for no_memory in (None, {}, {"texts": "not a mapping"}):  # the default engine's, with nothing put aside
        text, memory = switch(page, "verl", trl, no_memory)
        assert text == "" and memory == {"engine": "verl", "previous": "trl", "texts": {"trl": trl}, "demo": False}


def test_an_engine_picked_on_the_untouched_demo_starts_from_its_own_demo_config(page):
    """swift picked on the demo's trl config trained on ms-swift's defaults and stayed flat at 0.05 (issue 32 §4):
    the demo config as shipped (blank lines aside) is swapped for swift's own; an edited one is not (swift's keys are
    its own), and each engine's text comes back as it was left."""
    demos = inp.engine_demo_configs()
    assert set(demos) == {"trl", "swift"} and "tuner_type: full" in demos["swift"]
    fresh = {"engine": "trl", "previous": "trl", "texts": {}}
    text, memory = switch(page, "swift", demos["trl"] + "\n\n", fresh, demos)
    assert text == demos["swift"] and memory["demo"] is True
    edited = text.replace("beta: 0.04", "beta: 0.1")
    text, memory = switch(page, "trl", edited, memory, demos)
    assert text == demos["trl"] + "\n\n" and memory["texts"] == {"swift": edited}
    text, memory = switch(page, "swift", text, memory, demos)  # swift's edited text comes back
    assert text == edited
    verl, memory = switch(page, "verl", text, memory, demos)  # no demo config of its own
    assert verl == "" and memory["demo"] is False
    mine = demos["trl"].replace("max_steps: 400", "max_steps: 30")
    assert "max_steps: 30" in mine
    text, memory = switch(page, "swift", mine, fresh, demos)
    assert text == "" and memory["demo"] is False
    text, memory = switch(page, "swift", demos["trl"], fresh)  # without the demos: its defaults
    assert text == "" and memory["demo"] is False
