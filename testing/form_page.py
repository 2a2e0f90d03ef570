"""The Setup form in a browser page, as tests read it: the state line above the fields (what the form was derived
from) and whether the rendered fields show what that line wants (both carry ``data-fields``;
aworld_gui/tabs/config_form_render.py)."""

from __future__ import annotations


def form_state(page) -> dict:
    """The state line's data attributes: engine, spec, valid, current, fields ({} before the page has it)."""
    return page.evaluate(
        "() => { const e = document.querySelector('#form-state [data-testid=\"form-state\"]'); "
        "return e ? {...e.dataset} : {}; }"
    )


def fields_rendered(page, state: dict | None = None) -> bool:
    """The rendered fields show what the state line wants (a render after a change lands a moment after it)."""
    want = (state if state is not None else form_state(page)).get("fields")
    got = page.evaluate(
        "() => { const e = document.querySelectorAll('[data-testid=\"form-fields\"]'); "
        "return e.length === 1 ? e[0].dataset.fields : null; }"
    )
    return bool(want) and got == want
