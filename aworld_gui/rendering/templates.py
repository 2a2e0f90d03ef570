"""HTML from Jinja2 templates (``aworld_gui/templates/``), every value escaped by the environment.

A template's ``{{ value }}`` is escaped by ``escaped`` — the studio's escaping, which keeps Gradio's translation
markers (rendering/i18n.py) readable by the page — unless the value is already HTML (a ``Markup``, such as another
template's output or a macro's). So no view escapes by hand: a value is text unless a template made it.
"""

from __future__ import annotations

import functools
import html
import re
from typing import Any

import jinja2
from markupsafe import Markup

from .i18n import ESCAPED_MARKER_HEAD, _

_MARKER = re.compile(r'(__i18n__\{"__type__": "translation_metadata", "key": "t[0-9a-f]{12}"\})')


def escaped(value: Any) -> Markup:
    """``value`` as HTML text, for a text node or an attribute's value; HTML (``__html__``) as it is. Gradio's
    translation markers in it are kept whole but for their quotes, written ``&quot;``, and their head (so Gradio,
    which reads a value's first marker as JSON, leaves it to the page): the page reads them back as the marker
    (static/i18n_markers.js translates it, in text and in title/aria-label/placeholder; i18n.localize takes both
    forms). Kept raw, a marker's quote closed the attribute it stood in, and a run's status.json whose state was a
    marker followed by ``onanimationstart=…`` ran script in the logged-in page (issue 41, fifth probe)."""
    if hasattr(value, "__html__"):
        return Markup(value.__html__())
    text = "" if value is None else str(value)
    if "__i18n__" not in text:
        return Markup(html.escape(text, quote=True))
    return Markup(
        "".join(
            part.replace('"', "&quot;").replace("__i18n__", ESCAPED_MARKER_HEAD, 1)
            if i % 2
            else html.escape(part, quote=True)
            for i, part in enumerate(_MARKER.split(text))
        )
    )


@functools.cache
def environment() -> jinja2.Environment:
    """The templates' environment: autoescape on for every template, ``escaped`` as the escaping of every
    ``{{ }}``, an undefined name an error (a misspelt value is a failure, not an empty string), ``_`` the
    translation marker."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("aworld_gui", "templates"),
        autoescape=True,
        finalize=escaped,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.globals["_"] = _
    return env


def render(name: str, **values: Any) -> Markup:
    """Template ``name`` (under aworld_gui/templates/) filled with ``values``, as HTML."""
    return Markup(environment().get_template(name).render(**values))


def macro(name: str, macro_name: str):
    """A macro of template ``name`` as a Python function returning HTML."""
    return getattr(environment().get_template(name).module, macro_name)
