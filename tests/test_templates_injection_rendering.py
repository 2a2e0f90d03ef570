"""Issue 46: the views of rendering/ (render.py, probe_view.py, sweep_render.py, charts.py, groups_view.py) are
Jinja2 templates rendered with autoescape. Markup in anything a user, a run directory, a model or an engine wrote —
run names, notes, completions, file names, reward, tool and server names, engine messages, probe reports, sweep
trials — is shown as text: no element or attribute comes from it, template syntax in it is not evaluated, and a
Gradio translation marker followed by attributes stays inside the value it is in."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import jinja2
import pytest
from markupsafe import Markup

from aworld_gui.rendering import charts, groups_view, probe_view, render, sweep_render, templates
from aworld_gui.rendering.i18n import _
from aworld_gui.rendering.progress import Progress

MARKER = str(_("unavailable"))
PAYLOADS = {
    "element": "<img src=x onerror=alert(1)>",
    "double quote": '" onmouseover="alert(1)" injected="',
    "single quote": "' onfocus='alert(1)' injected='",
    "template syntax": "{{7*7}}{% if 1 %}evaluated{% endif %}",
    "marker": f"{MARKER} style=animation:aw-pulse;animation-duration:1s onanimationstart=window.__xss=1 injected=",
    "closing tags": "</pre></title></svg></td><script>alert(1)</script>",
}


class Page(HTMLParser):
    """The elements, attributes and text of an HTML fragment."""

    def __init__(self, html: str):
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: list[tuple[str, str]] = []
        self.texts: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs += [(name, value or "") for name, value in attrs]

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.texts.append(data)


def assert_inert(html: str, payload: str, shown: str | None = None) -> None:
    """No element or attribute came from ``payload``, and ``shown`` (the payload, or the part of it the view shows)
    is there as text or as an attribute's value."""
    assert isinstance(html, str) and html, html
    page = Page(html)
    assert not page.tags & {"img", "script"}, html
    names = {name for name, _v in page.attrs}
    assert not {n for n in names if n.startswith("on") or n in ("src", "injected")}, html
    assert not [v for n, v in page.attrs if n == "style" and "animation" in v], html
    assert "evaluated" not in "".join(page.texts) or "{%" in "".join(page.texts), html
    seen = "".join(page.texts) + "\n" + "\n".join(v for _n, v in page.attrs)
    assert (shown if shown is not None else payload) in seen, html


def _report(p: str) -> dict:
    return {
        "key": p,
        "path": p,
        "settings": {"samples": p, "model": p, "temperature": p},
        "verdicts": [{"code": p, "title": p, "message": p, "advice": p, "setting": p}],
        "pass_rates": {
            "prompts": p,
            "histogram": {"edges": [0, 0.5, 1], "counts": [1, 2]},
            "share_pass_rate_zero": 0.1,
            "share_pass_rate_one": 0.2,
            "mean_reward": 0.5,
            "pass_threshold": 1,
        },
        "zero_spread": {"group_size": p, "observed": 0.5, "estimated": {p: 0.2}},
        "lengths": {
            "truncated_share": 0.1,
            "max_completion_length": p,
            "p50": p,
            "p95": p,
            "max": p,
            "length_cutting_under_5_percent": p,
        },
        "terms": {p: {"samples": 3, "mean": 1, "std": 0.5, "min": 0, "max": 1, "constant": True}},
        "tools": {"calls_per_rollout": 1.5, "failing_share": 0.1, "turns_mean": 2, "max_turns": p},
        "forecast": {"items": [{"what": p, "seconds": 3.0, "basis": p, "how": p}], "note": p},
        "memory": {"summary": p},
    }


def _sample(p: str) -> dict:
    return {
        "prompt": [{"role": "user", "content": p}],
        "completion": [
            {"role": "assistant", "content": p, "tool_calls": [{"function": {"name": p, "arguments": p}, "server": p}]},
            {"role": "tool", "content": p, "name": p, "server": p},
            {"role": p, "content": p},
        ],
        "rewards": {p: 0.5, "format": p},
        "reward": p,
        "answer": p,
        "step": p,
    }


def _sweep(p: str) -> dict:
    trials = [
        {"number": 0, "state": p, "value": 0.5, "params": {p: 0.001, "kind": p}, "run_id": p},
        {"number": 1, "state": "complete", "value": 0.7, "params": {p: 0.1, "kind": "b"}},
        {"number": 2, "state": "pruned", "value": None, "params": {p: 0.01, "kind": "b"}},
    ]
    return {
        "state": p,
        "name": p,
        "trials": trials,
        "params": [p, "kind"],
        "objective": {"metric": p, "direction": p},
        "trials_planned": p,
        "sampler": p,
        "pruner": p,
        "best": {"value": 0.7, "number": 1, "params": {p: 0.1}},
    }


def _group_rows(p: str) -> list[dict]:
    return [
        {"group": p, "prompt": p, "completion": p, "rewards": {p: 0.5}, "reward": 1.0, "advantage": 0.5},
        {"group": p, "prompt": p, "completion": [{"role": "assistant", "content": p}], "rewards": {p: 1}, "reward": 0},
    ]


def _header(p: str) -> str:
    progress = Progress(state=p, step=3, total=10, elapsed_s=10.0, eta_s=5.0, steps_per_s=0.5)
    status = {
        "total_params": 100,
        "trainable_params": 10,
        "trackers": {p: p, "wandb": "https://x.test/" + p},
        "ray_address": p,
        "ray_job_id": p,
        "ray_job_status": p,
        "ray_run_dir": p,
    }
    spec = {"engine": p, "config": {"model": p, "mode": p}}
    failure = {"cause": p, "message": p}
    latest = {"reward": p, "loss": p}
    return render.run_header(
        p, progress, latest, spec, status, failure, False, p, 1, {"note": p}, run_label={"name": p}
    )


SCHEMA = lambda p: {  # noqa: E731
    "function": {
        "name": p,
        "description": p,
        "parameters": {"required": [p], "properties": {p: {"type": p, "description": p}}},
    }
}

#: every view of the five modules, fed the payload in every value that comes from outside the studio
VIEWS = {
    "engine_html": lambda p: render.engine_html(p),
    "badge": lambda p: render.badge(p, p, p),
    "badge's own label": lambda p: render.badge(p),
    "checks_strip": lambda p: render.checks_strip({p: {"status": p}}, {p: p}, seconds=1.0, check_id=p),
    "module_status": lambda p: render.module_status(p, p, {"status": p, "message": p, "warnings": [p]}),
    "module_status checking": lambda p: render.module_status(p, p, None, checking=True),
    "kv_table": lambda p: render.kv_table([(p, p)]),
    "tool_item": lambda p: render.tool_item(SCHEMA(p), p),
    "agent_spec": lambda p: render.agent_spec(
        {"name": p, "model": p, "system_prompt": p, "tools": [p], "max_steps": p, "temperature": p},
        [SCHEMA(p)],
        {p: p},
        [{"name": p, "transport": p, "target": p, "tools": [p], "cwd": p, "cwd_note": p}],
        {p: p},
        config_model=p + "!",
    ),
    "agent_spec tool names": lambda p: render.agent_spec({"name": p, "tools": [p], "llm_base_url": p, "api_key": p}),
    "engines_table": lambda p: render.engines_table(
        [{"name": p, "available": True, "description": p}, {"name": p, "available": False, "reason": p}], p
    ),
    "engines_table long reason": lambda p: render.engines_table(
        [{"name": "x", "available": False, "reason": "why; " + p * 4}], None
    ),
    "prompt_block": lambda p: render.prompt_block({"tokens": p, "source": p, "note": p, "text": p}),
    "prompt_block error": lambda p: render.prompt_block({"error": p}),
    "memory_estimate": lambda p: render.memory_estimate(
        {"status": p, "parts": {p: 2**30}, "summary": p, "total_params": 10, "trainable_params": 1}
    ),
    "fmt_num": lambda p: render.fmt_num(p),
    "run_header": _header,
    "cluster_note": lambda p: render.cluster_note({"ray_address": p, "ray_job_id": p, "ray_run_dir": p}),
    "trajectory": lambda p: render.trajectory(_sample(p)),
    "launch_note": lambda p: render.launch_note(p, True),
    "samples_html": lambda p: render.samples_html([_sample(p)]),
    "events_html": lambda p: render.events_html([{"time": 0, "event": p, p: p}]),
    "events_html message": lambda p: render.events_html([{"time": 0, "event": "warning", "message": p, "x": p}]),
    "probe chip": lambda p: probe_view.chip({"verdicts": [{"code": p}]}),
    "probe progress": lambda p: probe_view.progress(p, 0.5, 1.0, 10.0),
    "probe failed": lambda p: probe_view.failed(p),
    "probe report": lambda p: probe_view.report_html(_report(p)),
    "probe report unreadable": lambda p: probe_view.report_html({"path": p, "settings": p}),
    "probe filtered": lambda p: probe_view.filtered_html(
        {"ok": True, "dropped": {p: 2}, "band": (0.1, 0.9), "kept": p, "rows": p, "path": p, "fewer_than_a_step": p}
    ),
    "probe filter failed": lambda p: probe_view.filtered_html({"ok": False, "error": p}),
    "sweep headline": lambda p: sweep_render.headline(_sweep(p)),
    "sweep scatter": lambda p: sweep_render.scatter(_sweep(p)["trials"], p, p),
    "sweep scatter of text values": lambda p: sweep_render.scatter(_sweep(p)["trials"], "kind", p),
    "sweep scatter empty": lambda p: sweep_render.scatter([], p, p),
    "sweep parallel coordinates": lambda p: sweep_render.parallel_coordinates(_sweep(p)["trials"], [p, "kind"], p, 1),
    "sweep charts": lambda p: sweep_render.charts(_sweep(p)),
    "sweep importances": lambda p: sweep_render.importance_bars({p: 0.5}),
    "svg_chart": lambda p: charts.svg_chart(
        [charts.Line(p, [1, 2], [0.1, 0.2], "#123", markers=True), charts.Line(p, [1], [0.3], "#000")], p, chart_id=p
    ),
    "svg_chart empty": lambda p: charts.svg_chart([], p, p, p),
    "group_card": lambda p: groups_view.group_card(_group_rows(p), [p]),
    "groups_html": lambda p: groups_view.groups_html(p, [_group_rows(p)], {"rewards": [0.1, 0.9]}, True, False),
}


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
@pytest.mark.parametrize("view", VIEWS.keys())
def test_markup_in_a_value_is_shown_as_text(view, payload):
    html = VIEWS[view](payload)
    assert isinstance(html, Markup)  # HTML a template made: embedded as it is, never escaped twice
    assert_inert(html, payload)


def test_template_syntax_in_a_value_is_not_evaluated():
    html = render.badge("ok", "{{7*7}} {% if 1 %}yes{% endif %}")
    assert Page(html).texts == ["{{7*7}} {% if 1 %}yes{% endif %}"]


def test_a_marker_stays_whole_in_the_attribute_it_is_in():
    """The marker, quotes and all, is the value of the attribute (the page translates it there); what follows it
    is text of the same value."""
    payload = PAYLOADS["marker"]
    attrs = dict(Page(render.badge(payload, "x", "e")).attrs)
    assert attrs["data-status"] == payload and set(attrs) == {"class", "data-testid", "data-status"}


def test_the_check_sees_an_injection_when_values_are_not_escaped(monkeypatch):
    """The checks above can fail: with templates that let values through as they are, each payload that is markup
    (not the template syntax, which Jinja2 never evaluates in a value, nor the single quote, which no attribute of
    these templates is quoted with) is seen."""
    loose = jinja2.Environment(
        loader=jinja2.PackageLoader("aworld_gui", "templates"),
        autoescape=True,
        finalize=lambda v: Markup(str(v)),  # a value as it is: no escaping
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    loose.globals["_"] = _
    monkeypatch.setattr(templates, "environment", lambda: loose)
    for name in ("element", "double quote", "marker", "closing tags"):
        payload = PAYLOADS[name]
        with pytest.raises(AssertionError):
            assert_inert(render.badge(payload, payload, payload), payload)
        with pytest.raises(AssertionError):
            assert_inert(probe_view.report_html(_report(payload)), payload)


MODULES = ["render.py", "probe_view.py", "sweep_render.py", "charts.py", "groups_view.py"]


def test_no_view_wraps_a_value_in_markup():
    """The five modules make Markup of a constant only — and of the diagnoses, HTML the Monitor's diagnoses panel
    made (no file of the studio escapes by hand: tests/test_html_escaping.py)."""
    here = Path(templates.__file__).parent
    for name in MODULES:
        code = (here / name).read_text(encoding="utf-8")
        for arg in re.findall(r"\bMarkup\(([^)]*)\)", code):
            assert arg in ('""', "diagnoses"), (name, arg)
