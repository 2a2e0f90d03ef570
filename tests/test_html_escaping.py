"""Issue 41, the fifth probe: text user code controls (a run's status.json, a model's completion, an MCP server's name)
rendered into an attribute could not close it. ``render.esc`` kept Gradio's translation markers raw, quotes and all, so
a state of ``<marker> style=animation:… onanimationstart=…`` became attributes of the Runs table's badge and ran script
in the logged-in page. A marker is still read back as the page's language (in text and in attributes)."""

from __future__ import annotations

from html.parser import HTMLParser

from aworld_gui.rendering import render
from aworld_gui.rendering.templates import escaped
from aworld_gui.rendering.i18n import _, localize
from aworld_gui.tabs.runs_tab import table_rows

MARKER = str(_("unavailable"))
PAYLOAD = f"{MARKER} style=animation:aw-pulse;animation-duration:1s onanimationstart=window.__xss=1 x="


class Attributes(HTMLParser):
    """Every attribute name of every element, and the texts."""

    def __init__(self):
        super().__init__()
        self.names: set[str] = set()
        self.values: list[str] = []
        self.texts: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.names.update(name for name, _v in attrs)
        self.values.extend(v or "" for _n, v in attrs)

    def handle_data(self, data):
        self.texts.append(data)


def parsed(html: str) -> Attributes:
    p = Attributes()
    p.feed(html)
    return p


def test_a_marker_in_user_controlled_text_cannot_open_an_attribute():
    row = {"run_id": "r1", "state": PAYLOAD, "engine": "trl", "step": 1, "total_steps": 2, "name": PAYLOAD, "note": ""}
    sinks = {
        "badge": render.badge(PAYLOAD, PAYLOAD),
        "runs table": "".join(str(cell) for cell in table_rows([row])[0]),
        "attribute": f'<span title="{escaped(PAYLOAD)}" data-x="{escaped(PAYLOAD)}">{escaped(PAYLOAD)}</span>',
    }
    for where, html in sinks.items():
        p = parsed(html)
        assert not {n for n in p.names if n.startswith("on") or n == "style"}, (where, html)
        assert any(MARKER in v for v in p.values), (where, html)  # the marker whole in the attribute's value
    # the page reads it back as a marker: translated in text and attributes alike
    shown = localize(sinks["attribute"], "zh")
    assert "不可用" in shown and "__i18n__" not in shown and localize(escaped(MARKER), "en") == "unavailable"


def test_no_file_of_the_studio_escapes_by_hand():
    """Issue 46: HTML comes from the templates (aworld_gui/templates/), every value escaped by rendering/templates.py
    alone — no other file of the studio calls an escape helper (render.esc, html.escape, markupsafe's escape) or makes
    Markup of an f-string, and no template marks a value safe or turns autoescape off."""
    import re
    from pathlib import Path

    gui = Path(render.__file__).resolve().parent.parent
    hand = re.compile(r"\besc\(|html\.escape|markupsafe\.escape|(?<!re\.)\bescape\(|Markup\(f|import html\b")
    files = [p for p in sorted(gui.rglob("*.py")) if p != gui / "rendering" / "templates.py"]
    assert len(files) > 50
    for path in files:
        found = hand.findall(path.read_text(encoding="utf-8"))
        assert not found, (path, found)
    html = sorted((gui / "templates").rglob("*.html"))
    assert len(html) >= 15
    for path in html:
        text = path.read_text(encoding="utf-8")
        assert "|safe" not in text.replace(" ", "") and "autoescape false" not in text, path
