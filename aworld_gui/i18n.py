"""The studio in English and Chinese, through Gradio's own i18n.

``_("Launch training")`` is what every user-facing string of the studio goes through: it returns Gradio's
translation marker (``gr.I18n`` data) for a key derived from the English text, so component labels, button
texts and the HTML/Markdown the studio renders are translated in the browser — by the browser's language, or
the one picked in Gradio's Settings (the footer's link). The Monitor's live stream bypasses Gradio, so it is
translated here (:func:`localize`) for the language the page reports.

What engines say (check results, failure causes, their messages with file names and keys) stays in English:
it is the engines' own output, the same in the CLI and the logs.
"""
from __future__ import annotations

import hashlib
import re

from gradio.i18n import I18n, I18nData

from .i18n_zh import ZH

LOCALES = ("en", "zh")
#: a marker whose translation is the page's current language (the Monitor's stream is localized with it)
LOCALE_TEXT = "__locale__"
_MARKER = re.compile(r"__i18n__(\{\"__type__\": \"translation_metadata\", \"key\": \"(t[0-9a-f]{12})\"\})")


def key(text: str) -> str:
    return "t" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def _(text: str) -> I18nData:
    """The translation marker of an English UI string (it must be in the Chinese table, i18n_zh.ZH)."""
    return I18nData(key(text))


def translations() -> dict[str, dict[str, str]]:
    en = {key(t): t for t in ZH}
    zh = {key(t): z for t, z in ZH.items()}
    en[key(LOCALE_TEXT)], zh[key(LOCALE_TEXT)] = "en", "zh"
    return {"en": en, "zh": zh}


def i18n() -> I18n:
    """What ``demo.launch(i18n=...)`` takes."""
    return I18n(**translations())


def localize(text: str | None, locale: str | None) -> str | None:
    """Replace the translation markers in server-rendered HTML with ``locale``'s text (for what reaches
    the page without going through Gradio: the Monitor's stream)."""
    if not text or "__i18n__" not in text:
        return text
    table = translations()["zh" if (locale or "").lower().startswith("zh") else "en"]
    return _MARKER.sub(lambda m: table.get(m.group(2), m.group(2)), text)


def locale_probe() -> str:
    """A hidden element whose text the browser translates to the page's language (see live_monitor.js)."""
    return f'<span data-aw-locale hidden>{_(LOCALE_TEXT)}</span>'


__all__ = ["LOCALES", "_", "i18n", "key", "localize", "locale_probe", "translations"]
