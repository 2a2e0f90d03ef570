"""The studio in English and Chinese through Gradio's own i18n: every string given to ``_()`` has its
Chinese; the Monitor's stream (which bypasses Gradio) is translated for the page's language."""
from __future__ import annotations

import ast
from pathlib import Path

from aworld_gui.i18n import _, key, localize, translations
from aworld_gui.i18n_zh import ZH

GUI = Path(__file__).resolve().parent.parent / "aworld_gui"


def ui_strings() -> dict[str, str]:
    """Every literal passed to ``_()`` in the studio's code, with where it is."""
    found = {}
    for path in sorted(GUI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_" and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.setdefault(arg.value, f"{path.name}:{node.lineno}")
    return found


def test_every_ui_string_has_its_chinese():
    strings = ui_strings()
    assert len(strings) > 150
    missing = {text: where for text, where in strings.items() if text not in ZH}
    assert missing == {}, f"add these to aworld_gui/i18n_zh.py: {missing}"
    assert all(ZH[t].strip() and ZH[t] != t for t in strings if t not in ("OK", "CLI"))
    unused = sorted(set(ZH) - set(strings))
    assert unused == [], f"entries no code uses: {unused}"


def test_keys_are_unique_and_both_languages_complete():
    tables = translations()
    assert len({key(t) for t in ZH}) == len(ZH)
    assert set(tables["en"]) == set(tables["zh"])
    assert tables["en"][key("Launch training")] == "Launch training" and tables["zh"][key("Launch training")] == "开始训练"


def test_the_streams_html_is_translated_for_the_pages_language():
    html = f'<div><b>{_("Step")}</b> 12 · {_("Reward · latest")} <span title="x&amp;y">0.5</span></div>'
    assert localize(html, "zh-CN") == '<div><b>步数</b> 12 · 奖励 · 最新 <span title="x&amp;y">0.5</span></div>'
    assert localize(html, "en") == '<div><b>Step</b> 12 · Reward · latest <span title="x&amp;y">0.5</span></div>'
    assert localize("no markers", "zh") == "no markers" and localize(None, "zh") is None


def test_every_tab_is_relabelled_when_the_language_changes():
    """Gradio relabels only the selected tab's button when the language changes; the page's script relabels
    the others from page.TABS, which must name every gr.Tab with its label."""
    from aworld_gui.page import TABS

    tabs = {}
    for path in sorted(GUI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Tab":
                label = node.args[0].args[0].value
                elem_id = next((k.value.value for k in node.keywords if k.arg == "elem_id"), None)
                tabs[elem_id] = label
    assert len(tabs) >= 7 and tabs == TABS
