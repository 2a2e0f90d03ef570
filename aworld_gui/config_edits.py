"""Form edits applied to the config's overrides YAML in the order they arrive, even when the page's copy of
the YAML is stale.

A form field's edit sends the page's YAML text with it and gets the new text back. Two edits made within one
round trip (a box ticked, then a number typed, on a busy server) both carry the text from before the first,
so the second would write over the first: the ticked box stayed ticked on the page while the config lost it.
Per page session, :class:`ConfigEdits` remembers the text its last edit produced and the texts that edit
moved past; an edit that carries one of those is applied to the latest text instead. A text it never
produced (the YAML typed by hand, an engine switch, a preset) starts afresh from that text.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

#: texts remembered per page (the page can only be a few edits behind) and pages remembered
PAST_TEXTS = 32
PAGES = 256


class ConfigEdits:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pages: OrderedDict[str, tuple[list[str], str]] = OrderedDict()

    def apply(self, page: str | None, text: str | None, edit: Callable[[str], str]) -> str:
        """``edit`` applied to the latest text of ``page`` when ``text`` is one this page has moved past,
        else to ``text``; the result, remembered as the page's latest."""
        text = text or ""
        if not page:
            return edit(text)
        with self._lock:
            past, latest = self._pages.pop(page, ([], None))
            if latest is not None and (text == latest or text in past):
                base = latest               # the page has not seen our last result yet: build on it
            else:
                base, past = text, []       # someone else wrote the YAML: start from what the page has
            new = edit(base)
            past = [t for t in past if t not in (text, base)] + [text, base]
            self._pages[page] = (past[-PAST_TEXTS:], new)
            while len(self._pages) > PAGES:
                self._pages.popitem(last=False)
            return new

    def moved_past(self, page: str | None, text: str | None) -> bool:
        """Whether ``page`` has since edited ``text`` into a newer one: a check run on ``text`` is then stale for
        the form (the check that follows the newer edit fills it)."""
        if not page:
            return False
        with self._lock:
            past, latest = self._pages.get(page, ([], None))
            return (text or "") in past and (text or "") != latest

    def forget(self, page: str | None) -> None:
        """The page's YAML was written by other means (typed, a setting set in the editor): start afresh."""
        if page:
            with self._lock:
                self._pages.pop(page, None)
