"""The Setup form in a browser page, as tests read it: the state line above the fields (what the form was derived
from) and whether the fields show what that line wants (the line and each slot's mark carry ``data-fields``;
aworld_gui/tabs/config_form_render.py)."""

from __future__ import annotations

from aworld_gui.tabs.config_form import spec_id

#: the slots' marks, ``[slot, fields]`` for each (:func:`slot_marks`)
_MARKS_JS = (
    "[...document.querySelectorAll('[data-testid=\"form-fields\"]')].map(e => [e.dataset.slot, e.dataset.fields])"
)


def form_state(page) -> dict:
    """The state line's data attributes: engine, spec, valid, current, fields ({} before the page has it)."""
    return page.evaluate(
        "() => { const e = document.querySelector('#form-state [data-testid=\"form-state\"]'); "
        "return e ? {...e.dataset} : {}; }"
    )


def slot_marks(page, slots: int) -> str:
    """What the slots show, as the state line names it (config_form.slots_id: ``-`` for a slot with no field); a
    slot with two marks at once shows as ``?``."""
    return marks_text(page.evaluate(f"() => {_MARKS_JS}"), slots)


def marks_text(marks: list, slots: int) -> str:
    """:func:`slot_marks` from the ``[slot, fields]`` pairs the page holds (read by it, or by :func:`snapshot`)."""
    by_slot: dict[int, list[str]] = {}
    for slot, fields in marks:
        by_slot.setdefault(int(slot), []).append(fields)
    return ",".join((got[0] if len(got) == 1 else "?") if (got := by_slot.get(i)) else "-" for i in range(slots))


def fields_shown(page, state: dict | None = None) -> bool:
    """The fields show what the state line wants (their marks carry the line's ``data-fields``)."""
    want = (state if state is not None else form_state(page)).get("fields")
    return bool(want) and slot_marks(page, len(want.split(","))) == want


def marks_show(state: dict, marks: list) -> bool:
    """:func:`fields_shown` from a :func:`snapshot`'s state line and marks (no read of the page)."""
    want = state.get("fields")
    return bool(want) and marks_text(marks, len(want.split(","))) == want


def snapshot(page, code: tuple[str, ...] = (), overrides: bool = False) -> dict:
    """What a wait on the form reads, in ONE read of the page (a wait polls it several times a second: one round trip
    through Playwright and the renderer instead of one per item): ``state`` (:func:`form_state`), ``marks`` (the
    slots' ``[slot, fields]``, for :func:`marks_show`), ``code`` (each named code view's text, as a test's
    ``code_text`` reads it: its CodeMirror lines joined) and, when asked, ``overrides`` (:func:`overrides`'s text, or
    None)."""
    return page.evaluate(
        """([code, withOverrides]) => {
  const e = document.querySelector('#form-state [data-testid="form-state"]');
  const v = withOverrides ? document.querySelector('#config-yaml .cm-content') : null;
  return {
    state: e ? {...e.dataset} : {},
    marks: (() => { return %s })(),
    code: Object.fromEntries(code.map(id => [id, [...document.querySelectorAll('#' + id + ' .cm-line')]
      .map(l => l.textContent).join('\\n')])),
    overrides: v ? v.innerText : null,
  };
}"""
        % _MARKS_JS,
        [list(code), overrides],
    )


def overrides(page) -> str:
    """The overrides YAML as the page's editor holds it (the editor is in the page once its accordion was opened:
    :func:`show_overrides`)."""
    text = page.evaluate(
        "() => { const v = document.querySelector('#config-yaml .cm-content'); return v ? v.innerText : null; }"
    )
    assert text is not None, "the overrides YAML's editor is not in the page: show_overrides(page) first"
    return text


def show_overrides(page) -> None:
    """Open "Advanced: config YAML (overrides)" (its editor joins the page)."""
    if not page.locator("#config-yaml .cm-content").is_visible():
        page.get_by_text("Advanced: config YAML (overrides)").click()


def form_settled(page, engine: str | None = "trl") -> bool:
    """The form shows the check of the YAML the page has now (and the engine picked; None: any engine), and its
    fields show it. A check turning green is not enough: the form is derived from it a moment later."""
    got = snapshot(page, overrides=True)  # one read of the page: a wait polls this
    state = got["state"]

    def spec_shown() -> bool:
        assert got["overrides"] is not None, (
            "the overrides YAML's editor is not in the page: show_overrides(page) first"
        )
        return state.get("spec") == spec_id(got["overrides"])

    return (
        state.get("current") == "1"
        and (engine is None or state.get("engine") == engine)
        and spec_shown()
        and marks_show(state, got["marks"])
    )


def form_report(page) -> str:
    """What a failed wait on the form saw: the state line, the spec of the page's YAML, the slots' marks."""
    state = form_state(page)
    got = slot_marks(page, len((state.get("fields") or "").split(",")))
    return f"state {state}, page spec {spec_id(overrides(page))}, marks {got}, yaml {overrides(page)!r}"


def reconcile_fns(page) -> set[int]:
    """The ids (a queue request's ``fn_index``) of the Setup's reconciles (setup_tab.SetupTab.on_reconcile): the
    events that show a check (their outputs hold the effective config) taking the most inputs (a check's and the
    check shown)."""
    return set(
        page.evaluate(
            """() => {
  const c = window.gradio_config;
  const eff = c.components.find(x => x.props && x.props.elem_id === "effective-config").id;
  const deps = c.dependencies.filter(d => (d.outputs || []).includes(eff));
  const most = Math.max(...deps.map(d => d.inputs.length));
  return deps.filter(d => d.inputs.length === most).map(d => d.id);
}"""
        )
    )
