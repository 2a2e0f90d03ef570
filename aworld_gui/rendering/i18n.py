"""The studio in English and Chinese, through Gradio's own i18n.

``_("Launch training")`` is what every user-facing string of the studio goes through: it returns Gradio's
translation marker (``gr.I18n`` data) for a key derived from the English text, so component labels, button
texts and the HTML/Markdown the studio renders are translated in the browser — by the browser's language, or
the one picked in Gradio's Settings (the footer's link). The Monitor's live stream bypasses Gradio, so it is
translated here (:func:`localize`) for the language the page reports.

What engines say (check results, failure causes, their messages with file names and keys) stays English in the
CLI and the logs; the studio shows it through engine_text.py (its words through ``_()``, its values as written).
A Dataframe's headers are markers as text (:func:`headers`).

The Chinese is a gettext catalog, ``aworld_gui/locale/zh/LC_MESSAGES/studio.po`` (msgid: the English, msgstr: the
Chinese; any translator's tool reads it), which Babel reads once when the tables are first needed (:func:`catalog`).
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

import gradio as gr
from babel.messages.pofile import read_po
from gradio.i18n import I18n, I18nData

LOCALES = ("en", "zh")
#: the Chinese catalog (gettext's layout: <locale>/LC_MESSAGES/<domain>.po)
CATALOG = Path(__file__).parents[1] / "locale" / "zh" / "LC_MESSAGES" / "studio.po"
#: each of LOCALES as Gradio's language picker names it (static/language.js offers only these)
PICKER_CODES = {"en": "en", "zh": "zh-CN"}
#: a marker whose translation is the page's current language (the Monitor's stream is localized with it)
LOCALE_TEXT = "__locale__"
#: the head of a marker as templates.escaped writes it in HTML (the page reads ``__i18n__``; Gradio does not see a marker)
ESCAPED_MARKER_HEAD = "__i18n&#95;_"
#: a marker as Gradio writes it, or as HTML escaping writes it (templates.escaped)
_MARKER = re.compile(
    r'__i18n(?:__|&#95;_)(\{(?:"|&quot;)__type__(?:"|&quot;): (?:"|&quot;)translation_metadata(?:"|&quot;), '
    r'(?:"|&quot;)key(?:"|&quot;): (?:"|&quot;)(t[0-9a-f]{12})(?:"|&quot;)\})'
)


def key(text: str) -> str:
    return "t" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def _(text: str) -> I18nData:
    """The translation marker of an English UI string (it must be in the Chinese catalog, :data:`CATALOG`)."""
    return I18nData(key(text))


@functools.cache
def catalog() -> dict[str, str]:
    """The Chinese of each English text: :data:`CATALOG`'s translated entries (a fuzzy or empty one is untranslated,
    as gettext reads it). Read once; read it, never change it. A malformed catalog is an error, not a silent gap."""
    with CATALOG.open("rb") as f:
        po = read_po(f, locale="zh", domain="studio", abort_invalid=True)
    return {m.id: m.string for m in po if m.id and isinstance(m.id, str) and m.string and not m.fuzzy}


@functools.cache
def translations() -> dict[str, dict[str, str]]:
    """Both languages' tables, keyed by marker key (built once: the Monitor's stream localizes every tick;
    read them, never change them)."""
    zh_of = catalog()
    en = {key(t): t for t in zh_of}
    zh = {key(t): z for t, z in zh_of.items()}
    en[key(LOCALE_TEXT)], zh[key(LOCALE_TEXT)] = "en", "zh"
    return {"en": en, "zh": zh}


def headers(*texts: str) -> list[str]:
    """A Dataframe's column headers in the page's language. Gradio takes headers as strings only (an ``_()`` marker
    object does not serialize there), so each is its marker as text, which the page translates (Gradio the first
    marker of a string, static/i18n_markers.js the rest). The studio's code reads its tables by position, never
    by header."""
    return [str(_(text)) for text in texts]


def i18n() -> I18n:
    """What ``demo.launch(i18n=...)`` takes."""
    return I18n(**{locale: dict(table) for locale, table in translations().items()})


def localize(text: str | None, locale: str | None) -> str | None:
    """Replace the translation markers in server-rendered HTML with ``locale``'s text (for what reaches
    the page without going through Gradio: the Monitor's stream)."""
    if not text or "__i18n" not in text:
        return text
    table = translations()["zh" if (locale or "").lower().startswith("zh") else "en"]
    return _MARKER.sub(lambda m: table.get(m.group(2), m.group(2)), text)


def markers_js(tabs: dict[str, str] | None = None) -> str:
    """The page's script that translates the markers Gradio's front end leaves (it translates only the
    first marker of a string) and keeps the tabs' labels in the page's language: static/i18n_markers.js with
    both languages' tables. ``tabs`` maps each ``gr.Tab``'s elem_id to its English label."""
    import json

    js = (Path(__file__).parents[1] / "static" / "i18n_markers.js").read_text(encoding="utf-8")
    tab_keys = {f"{elem_id}-button": key(text) for elem_id, text in (tabs or {}).items()}
    return js.replace("__AW_TABLES__", json.dumps(translations(), ensure_ascii=False)).replace(
        "__AW_TAB_KEYS__", json.dumps(tab_keys)
    )


def language_js() -> str:
    """The page's script that opens it in the language last picked on this browser, else the nearest of LOCALES,
    and has the picker in Settings offer only LOCALES (static/language.js; run with the title's js_on_load)."""
    import json

    js = (Path(__file__).parents[1] / "static" / "language.js").read_text(encoding="utf-8")
    return js.replace("__AW_LANGUAGES__", json.dumps([PICKER_CODES[locale] for locale in LOCALES]))


def markdown_safe(text: str) -> str:
    """``text`` with its translation markers escaped for Markdown: unescaped, Markdown reads a marker's
    ``__`` as bold and the marker is lost; escaped, the page's script (markers_js) translates every one."""
    return _MARKER.sub(lambda m: m.group(0).replace("_", "\\_"), text)


class Markdown(gr.Markdown):
    """``gr.Markdown`` whose translated words all reach the page in its language (see markdown_safe)."""

    def postprocess(self, value):
        out = super().postprocess(value)
        return markdown_safe(out) if isinstance(out, str) and "__i18n__" in out else out


def locale_probe() -> str:
    """A hidden element whose text the browser translates to the page's language (see live_monitor.js)."""
    return f"<span data-aw-locale hidden>{_(LOCALE_TEXT)}</span>"


__all__ = [
    "LOCALES",
    "Markdown",
    "CATALOG",
    "_",
    "catalog",
    "headers",
    "i18n",
    "key",
    "language_js",
    "localize",
    "locale_probe",
    "markdown_safe",
    "markers_js",
    "translations",
]
