"""The page steps that edit the one spec, the overrides YAML (aworld_gui/tabs/config_form.py), run in headless Chromium
against their server twins: a form field's edit sets its key as ``set_yaml_key`` does, a line the server renders
goes into the YAML the page has then, and an engine picked swaps the overrides as ``switch_engine`` does."""

from __future__ import annotations

import os

import pytest
import yaml
from playwright.sync_api import sync_playwright

from aworld_gui.tabs.config_form import (
    AGENT_MODEL,
    APPLY_EDIT_JS,
    KEEP,
    edit_js,
    field_edit_js,
    fresh_memory,
    set_yaml_line,
    set_yaml_key,
    switch_engine,
    switch_engine_js,
    yaml_edit,
)
from testing.studio import CHROMIUM, launch_chromium

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
        pg.set_content(
            '<div id="form-number-0"><input id="i0"></div><div id="form-number-1"><input id="i1"></div>'
            '<button id="elsewhere">x</button>'
        )
        yield pg
        browser.close()


def edit_in_page(page, name: str, ftype, value, text: str):
    return page.evaluate(f"([v, t]) => ({edit_js(name, ftype)})(v, t)", [value, text])


# (field, its type, the value the page's field holds, the value Gradio hands the server for it)
EDITS = [
    ("max_steps", "int", 30, 30),
    ("max_steps", "int", 29.6, 30),  # an int field's number is rounded, as Gradio's Number does
    ("learning_rate", "float", 1e-05, 1e-05),  # PyYAML reads 1e-05 (no dot) as a string
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
    ("model", "str", "", None),
    ("lora_target_modules", "str", "all-linear", "all-linear"),  # a block value goes with its key
    ("model", "str", AGENT_MODEL, None),  # the model picker back on the agent's model: the key goes
]


@pytest.mark.parametrize("name,ftype,value,server_value", EDITS)
def test_a_form_edit_in_the_page_sets_the_key_as_the_server_would(page, name, ftype, value, server_value):
    for text in (TEXT, "", TEXT.rstrip("\n")):
        got = edit_in_page(page, name, ftype, value, text)
        want = set_yaml_key(text, name, server_value)
        if got == KEEP:  # the page's YAML stays as it is
            assert want.rstrip("\n") == text.rstrip("\n"), (text, want)
            continue
        assert yaml.safe_load(got) == yaml.safe_load(want), (got, want)
        others = [ln for ln in want.splitlines() if not ln.startswith(f"{name}:")]
        assert [ln for ln in got.splitlines() if not ln.startswith(f"{name}:")] == others  # the rest kept as is
        assert got.endswith("\n") and not got.endswith("\n\n")
        if value in ("cosine", "Qwen/Qwen2.5-0.5B", "_under.score", "all-linear"):
            assert f"{name}: {value}\n" in got  # a name or a path stays plain


def test_a_form_edit_of_the_value_the_yaml_has_changes_nothing(page):
    assert edit_in_page(page, "max_steps", "int", 300, TEXT) == KEEP


def test_an_edit_keeps_the_line_s_comment_and_the_file_s_layout(page):
    """Issue 42: leaving a field rewrote its line without its comment (``prompts_per_step: 8   # x num_generations…``
    became ``prompts_per_step: 8``), and blank lines piled up at the end. The page and its server twin alike."""
    commented = 'model: "a #b"   # quoted: not a comment\n' + TEXT + "\n\n"
    cases = [
        ("learning_rate", "float", 0.002, commented, "learning_rate: 0.002   # tuned"),
        ("learning_rate", "float", 0.00001, commented, "learning_rate: 0.00001 # tuned"),  # longer: one space
        ("model", "str", "b", commented, "model: b        # quoted: not a comment"),  # the column kept
        ("mode", None, "sft", commented, "mode: sft"),
    ]
    for key, ftype, value, text, line in cases:
        got = edit_in_page(page, key, ftype, value, text)
        assert line in got.splitlines(), (line, got)
        assert got == set_yaml_line(text, key, line.split(" #")[0].rstrip())  # the server's twin: the same text
        assert [ln for ln in got.splitlines() if not ln.startswith(f"{key}:")] == [
            ln for ln in text.rstrip("\n").splitlines() if not ln.startswith(f"{key}:")
        ]  # every other line as it was, in its place
    assert edit_in_page(page, "learning_rate", "float", 0.001, commented) == KEEP  # the same value: nothing
    appended = edit_in_page(page, "beta", None, 0.1, "mode: grpo\n\n\n")
    assert appended == "mode: grpo\nbeta: 0.1\n" == set_yaml_line("mode: grpo\n\n\n", "beta", "beta: 0.1")


def test_a_field_left_as_it_was_shown_changes_nothing(page):
    """A click in and out of a field: one the YAML does not set pinned its effective value into the YAML; one it sets
    wrote its line again. Neither changes the YAML now; a value typed over the shown one still does, and so does one
    typed back to the shown value after an edit the render has not caught up with (the YAML sets the key then)."""
    shown_js = lambda key, ftype, shown: field_edit_js(key, ftype, shown, f"#cfg-{key} input")  # noqa: E731
    run = lambda js, v, t: page.evaluate(f"([v, t]) => ({js})(v, t)", [v, t])  # noqa: E731
    assert run(shown_js("max_completion_length", "int", "256"), "256", TEXT) == KEEP  # not set: effective kept out
    assert run(shown_js("learning_rate", "float", "0.001"), "0.001", TEXT) == KEEP  # set: its line as it is
    assert (
        yaml.safe_load(run(shown_js("max_completion_length", "int", "256"), "300", TEXT))["max_completion_length"]
        == 300
    )
    edited = TEXT + "max_completion_length: 300\n"  # typed 300, left; then 256 typed back before the render
    assert (
        yaml.safe_load(run(shown_js("max_completion_length", "int", "256"), "256", edited))["max_completion_length"]
        == 256
    )


@pytest.mark.parametrize(
    "key,value",
    [
        ("lora_target_modules", ["k_proj", "o_proj"]),
        ("epsilon_high", 0.28),
        ("learning_rate", 1e-05),
        ("model", "Qwen/Qwen2.5-0.5B"),
        ("generation_kwargs", {"top_k": 5}),
        ("max_steps", None),
        ("mode", "sft"),
    ],
)
def test_a_key_the_server_renders_goes_into_the_yaml_the_page_has_then(page, key, value):
    """Set / Remove in the settings editor and the model picker: the server parses and renders the line, the page
    puts it into its YAML as it is then (so an edit made meanwhile in the page stays)."""
    text = TEXT + "use_peft: true\n"  # ticked in the page while the server answered
    got = page.evaluate(f"([e, t]) => ({APPLY_EDIT_JS})(e, t)", [yaml_edit(key, value), text])
    assert got == set_yaml_key(text, key, value)
    assert yaml.safe_load(got)["use_peft"] is True
    assert page.evaluate(f"([e, t]) => ({APPLY_EDIT_JS})(e, t)", [None, text]) == KEEP  # an error: no edit


MEMORIES = [
    None,
    fresh_memory("trl"),
    {"engine": "verl", "previous": "trl", "texts": {"trl": TEXT}},
    {"engine": "trl", "previous": "verl", "texts": {"verl": "total_steps: 3\n", "swift": "beta: 0.1\n"}},
    {"texts": "not a mapping"},
]


DEMOS = {"trl": "# trl demo\nmax_steps: 400\n", "swift": "# swift demo\ntuner_type: full\n"}


@pytest.mark.parametrize("memory", MEMORIES)
@pytest.mark.parametrize("engine", ["trl", "verl", "swift"])
def test_an_engine_picked_swaps_the_overrides_in_the_page_as_the_server_would(page, memory, engine):
    """With and without demo configs; the last engine's text its demo as shipped (blank lines aside) or not."""
    for demos in (None, DEMOS):
        for text in (TEXT, "", DEMOS["trl"] + "\n", DEMOS["swift"], "beta: 0.1\n" + DEMOS["trl"]):
            got_text, got_memory = page.evaluate(
                f"([e, t, m]) => ({switch_engine_js('trl', demos)})(e, t, m)", [engine, text, memory]
            )
            want_text, want_memory = switch_engine(memory, engine, text, "trl", demos)
            assert (text if got_text == KEEP else got_text) == want_text
            assert got_memory == want_memory
