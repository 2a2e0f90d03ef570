"""The probe's report as Setup shows it (engines/probe/: the report is a plain dict): its verdict lines with the setting
to change, the histogram of each prompt's mean reward, the groups without reward spread at k, 2k and 4k, truncation
and the length that cuts under 5 %, each reward term, tool use, the time forecast (each figure measured here or
extrapolated); the chip beside the checks; the progress while it runs; what the difficulty filter wrote."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from engines.probe.result import duration, percent

from .i18n import _
from .render import engine_html
from .templates import macro

PROBE = "render/probe.html"  # the views' templates (aworld_gui/templates/)

#: the forecast's figures (engines/probe/forecast.py), in the page's language
WHAT = {
    "model load": _("model load"),
    "generation rate (tokens/s)": _("generation rate (tokens/s)"),
    "generation of one step": _("generation of one step"),
    "forward and backward of one step": _("forward and backward of one step"),
    "reference model's forward (beta > 0)": _("reference model's forward (beta > 0)"),
    "one step": _("one step"),
    "one evaluation": _("one evaluation"),
    "to the first evaluation": _("to the first evaluation"),
    "the whole run": _("the whole run"),
}
BASIS = {"measured": _("measured"), "extrapolated": _("extrapolated"), "not known here": _("not known here")}
DROPPED = {
    "at or below the band": _("at or below the band"),
    "at or above the band": _("at or above the band"),
    "not probed": _("not probed"),
}


def _pct(x: float | None) -> str:
    return percent(x, none="–")


def _secs(x: float | None) -> str:
    return duration(x, none="–")


def _num(x: Any) -> str:
    return f"{float(x):.3g}" if isinstance(x, (int, float)) else "–"


def chip(report: dict | None, running: bool = False) -> Markup:
    """The probe's verdict beside the checks: its codes, none found, or not probed for these inputs."""
    state = "running" if running else "none" if report is None else "verdicts" if report.get("verdicts") else "clear"
    codes = [v["code"] for v in report["verdicts"]] if state == "verdicts" else []
    return macro(PROBE, "chip")(state, codes)


def progress(doing: str | None, fraction: float | None, elapsed_s: float, limit_s: float) -> Markup:
    """While the probe runs: what it is doing, a bar where it says how far it is, the time against its limit."""
    return macro(PROBE, "progress")(doing, 100.0 * (fraction or 0.0), elapsed_s, limit_s)


def failed(error: str, cancelled: bool = False) -> Markup:
    return macro(PROBE, "failed")(None if cancelled else engine_html(error))


def _verdicts(report: dict) -> list[dict]:
    return [
        {
            "code": v["code"],
            "title": _(v["title"]),
            "message": engine_html(v["message"]),
            "advice": _(v["advice"]),
            "setting": v.get("setting"),
        }
        for v in report.get("verdicts") or []
    ]


def _histogram(pr: dict) -> dict:
    hist = pr["histogram"]
    top = max(hist["counts"] or [1]) or 1
    rows = [
        (f"{lo:g}–{hi:g}", n, 100.0 * n / top) for lo, hi, n in zip(hist["edges"], hist["edges"][1:], hist["counts"])
    ]
    return {
        "rows": rows,
        "never": _pct(pr["share_pass_rate_zero"]),
        "always": _pct(pr["share_pass_rate_one"]),
        "mean": f"{pr['mean_reward']:.3f}",
        "threshold": f"{pr['pass_threshold']:g}",
    }


def _spread(zs: dict) -> list[tuple]:
    cells = [(str(zs["group_size"]), zs["observed"], _("seen"))]
    cells += [(n, v, _("estimated")) for n, v in zs["estimated"].items()]
    return [(n, _pct(v), what) for n, v, what in cells]


def _lengths(ln: dict) -> dict:
    return {
        "truncated": _pct(ln["truncated_share"]),
        "limit": ln["max_completion_length"],
        "p50": ln["p50"],
        "p95": ln["p95"],
        "max": ln["max"],
        "cut": ln.get("length_cutting_under_5_percent"),
    }


def _terms(terms: dict) -> list[tuple]:
    return [
        (name, _num(t["mean"]), _num(t["std"]), _num(t["min"]), _num(t["max"]), t["constant"])
        for name, t in terms.items()
        if t.get("samples")
    ]


def _tools(t: dict | None) -> dict | None:
    if not t:
        return None
    return {
        "calls": f"{t['calls_per_rollout']:.2f}",
        "failing": _pct(t["failing_share"]),
        "turns": f"{t['turns_mean']:.2f}",
        "max_turns": t["max_turns"],
    }


def _forecast(fc: dict) -> dict:
    rows = []
    for item in fc["items"]:
        rate = "tokens/s" in item["what"]
        value = ("–" if item["seconds"] is None else f"{item['seconds']:.1f}") if rate else _secs(item["seconds"])
        basis = item["basis"]
        rows.append((WHAT.get(item["what"], item["what"]), value, basis, BASIS.get(basis, basis), item["how"]))
    return {"rows": rows, "note": engine_html(fc["note"]) if fc.get("note") else None}


def report_html(report: dict | None, reused: bool = False) -> Markup:
    """The whole report (empty when there is none). A stored report is a file user code can write (the runs folder):
    every value in it is text, and one of another shape than the probe writes is said to be unreadable."""
    if not report:
        return Markup("")
    try:
        return _report_html(report, reused)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        why = f"{type(e).__name__}: {e}"[:200]
        return macro(PROBE, "unreadable")(why, report.get("path") or "")


def _report_html(report: dict, reused: bool) -> Markup:
    s = report["settings"]
    head = {
        "prompts": report["pass_rates"]["prompts"],
        "samples": s["samples"],
        "model": s["model"],
        "temperature": s["temperature"],
        "reused": str(bool(reused)).lower(),
        "where": _("stored: shown again without sampling") if reused else _("sampled now"),
    }
    memory = report.get("memory") or {}
    return macro(PROBE, "report")(
        report.get("key", ""),
        head,
        _verdicts(report),
        _histogram(report["pass_rates"]),
        _spread(report["zero_spread"]),
        _lengths(report["lengths"]),
        _terms(report["terms"]),
        _tools(report.get("tools")),
        _forecast(report["forecast"]),
        engine_html(memory.get("summary")) if memory.get("summary") else None,
    )


def filtered_html(res: dict) -> Markup:
    """What the difficulty filter wrote (rows kept, dropped by reason), or why it wrote nothing."""
    if not res.get("ok"):
        return macro(PROBE, "filter_failed")(engine_html(res.get("error")))
    dropped = [(n, DROPPED.get(k, k)) for k, n in res["dropped"].items() if n]
    low, high = res["band"]
    return macro(PROBE, "filtered")(
        res["kept"], res["rows"], f"{low:g}", f"{high:g}", dropped, res["path"], res.get("fewer_than_a_step")
    )
