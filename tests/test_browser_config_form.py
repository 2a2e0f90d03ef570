"""The page steps that keep the Setup form and the overrides YAML in step (aworld_gui/tabs/config_form.py), run in
headless Chromium: a form edit sets its key in the page as the server's ``set_yaml_key`` does, and a check's fill
sets only the fields nobody touched since the check began, and only while the YAML is the one checked."""
from __future__ import annotations

import os

import pytest
import yaml
from playwright.sync_api import sync_playwright

from aworld_gui.tabs.config_form import APPLY_EDIT_JS, APPLY_JS, KEEP, edit_js, set_yaml_key, yaml_edit
from testing.studio import CHROMIUM, launch_chromium

TEXT = "# Demo config\nmode: grpo\nlearning_rate: 0.001   # tuned\nmax_steps: 300\n" \
       "lora_target_modules:\n  - q_proj\n  - v_proj\nbeta: 0.04\n"


@pytest.fixture(scope="module")
def page():
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium"
    with sync_playwright() as p:
        browser = launch_chromium(p)
        pg = browser.new_page()
        pg.set_content('<div id="form-number-0"><input id="i0"></div><div id="form-number-1"><input id="i1"></div>'
                       '<button id="elsewhere">x</button>')
        yield pg
        browser.close()


def edit_in_page(page, kind: str, index: int, value, text: str, field_map: list):
    return page.evaluate(f"([v, t, m]) => ({edit_js(kind, index)})(v, t, m)", [value, text, field_map])


# (field, its type, the value the page's field holds, the value Gradio hands the server for it)
EDITS = [
    ("max_steps", "int", 30, 30),
    ("max_steps", "int", 29.6, 30),                 # an int field's number is rounded, as Gradio's Number does
    ("learning_rate", "float", 1e-05, 1e-05),       # PyYAML reads 1e-05 (no dot) as a string
    ("learning_rate", "float", 2, 2.0),
    ("learning_rate", "float", 2.5e21, 2.5e21),
    ("beta", None, 0.5, 0.5),
    ("use_peft", "bool", True, True),
    ("use_peft", "bool", False, False),
    ("lr_scheduler_type", None, "cosine", "cosine"),
    ("model", "str", "true", "true"),               # stays a string
    ("model", "str", "Yes", "Yes"),
    ("model", "str", "null", "null"),
    ("model", "str", "Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B"),
    ("model", "str", "1e-5", "1e-5"),
    ("model", "str", ".inf", ".inf"),
    ("model", "str", "_under.score", "_under.score"),
    ("model", "str", 'a: "b" # c', 'a: "b" # c'),
    ("model", "str", "模型/路径", "模型/路径"),
    ("max_steps", "int", None, None),               # emptied: the key goes
    ("model", "str", "", None),
    ("lora_target_modules", "str", "all-linear", "all-linear"),   # a block value goes with its key
]


@pytest.mark.parametrize("name,ftype,value,server_value", EDITS)
def test_a_form_edit_in_the_page_sets_the_key_as_the_server_would(page, name, ftype, value, server_value):
    kind = {"int": "number", "float": "number", "bool": "bool"}.get(ftype, "text")
    field_map = [["number", 3, "other", "int"], [kind, 1, name, ftype]]
    for text in (TEXT, "", TEXT.rstrip("\n")):
        got = edit_in_page(page, kind, 1, value, text, field_map)
        want = set_yaml_key(text, name, server_value)
        if got == KEEP:                                     # the page's YAML stays as it is
            assert want.rstrip("\n") == text.rstrip("\n"), (text, want)
            continue
        assert yaml.safe_load(got) == yaml.safe_load(want), (got, want)
        others = [ln for ln in want.splitlines() if not ln.startswith(f"{name}:")]
        assert [ln for ln in got.splitlines() if not ln.startswith(f"{name}:")] == others   # the rest kept as is
        assert got.endswith("\n") and not got.endswith("\n\n")
        if value in ("cosine", "Qwen/Qwen2.5-0.5B", "_under.score", "all-linear"):
            assert f"{name}: {value}\n" in got                    # a name or a path stays plain


def test_a_form_edit_of_a_field_not_on_the_map_changes_nothing(page):
    assert edit_in_page(page, "number", 2, 5, TEXT, [["number", 0, "max_steps", "int"]]) == KEEP
    assert edit_in_page(page, "number", 0, 300, TEXT, [["number", 0, "max_steps", "int"]]) == KEEP   # same value


@pytest.mark.parametrize("key,value", [("lora_target_modules", ["k_proj", "o_proj"]), ("epsilon_high", 0.28),
                                       ("learning_rate", 1e-05), ("model", "Qwen/Qwen2.5-0.5B"),
                                       ("generation_kwargs", {"top_k": 5}), ("max_steps", None), ("mode", "sft")])
def test_a_key_the_server_renders_goes_into_the_yaml_the_page_has_then(page, key, value):
    """Set / Remove in the settings editor and the model picker: the server parses and renders the line, the page
    puts it into its YAML as it is then (so an edit made meanwhile in the page stays)."""
    text = TEXT + "use_peft: true\n"                        # ticked in the page while the server answered
    got = page.evaluate(f"([e, t]) => ({APPLY_EDIT_JS})(e, t)", [yaml_edit(key, value), text])
    assert got == set_yaml_key(text, key, value)
    assert yaml.safe_load(got)["use_peft"] is True
    assert page.evaluate(f"([e, t]) => ({APPLY_EDIT_JS})(e, t)", [None, text]) == KEEP        # an error: no edit


def apply(page, fill: dict, text: str, values: list, focus: str = "#elsewhere") -> list:
    page.focus(focus)
    return page.evaluate(f"([f, t, vs]) => ({APPLY_JS})(f, t, ...vs)", [fill, text, values])


def test_a_fill_sets_only_untouched_unfocused_fields_while_the_yaml_is_the_one_checked(page):
    def fill(fid: int, text: str = "a: 1\n") -> dict:
        return {"id": fid, "yaml": text,
                "fields": [[0, "form-number-0", 400, 100], [1, "form-number-1", None, 5]]}

    assert apply(page, fill(101), "a: 1\n", [400, None]) == [100, 5]
    assert apply(page, fill(101), "a: 1\n", [400, None]) == [KEEP, KEEP]       # applied once
    assert apply(page, fill(102), "a: 1\nb: 2\n", [400, None]) == [KEEP, KEEP]   # the YAML was edited since
    assert apply(page, fill(103), "a: 1\n", [30, None]) == [KEEP, 5]          # 30 typed since the check began
    assert apply(page, fill(104), "a: 1\n", [400, None], focus="#i1") == [100, KEEP]   # being edited
    assert apply(page, fill(105), "a: 1\n", [400.0, None]) == [100, 5]       # 400 and 400.0 are one number
    assert apply(page, None, "a: 1\n", [400, None]) == [KEEP, KEEP]           # no check answered yet
