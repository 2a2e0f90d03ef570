"""The probe's report as Setup shows it (engines/probe/: the report is a plain dict): its verdict lines with the setting
to change, the histogram of each prompt's mean reward, the groups without reward spread at k, 2k and 4k, truncation
and the length that cuts under 5 %, each reward term, tool use, the time forecast (each figure measured here or
extrapolated); the chip beside the checks; the progress while it runs; what the difficulty filter wrote."""

from __future__ import annotations

from typing import Any

from engines.probe.result import duration, percent

from .i18n import _
from .render import badge, engine_html, esc

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


def chip(report: dict | None, running: bool = False) -> str:
    """The probe's verdict beside the checks: its codes, none found, or not probed for these inputs."""
    if running:
        body = badge("checking", _("probing…"))
    elif report is None:
        body = f'<span class="aw-muted">{esc(_("not probed for these inputs"))}</span>'
    elif report.get("verdicts"):
        codes = " ".join(f"<code>{esc(v['code'])}</code>" for v in report["verdicts"])
        body = f"{badge('warning', _('see the verdicts'))} {codes}"
    else:
        body = badge("ok", _("no problem found"))
    state = "running" if running else "none" if report is None else "verdicts" if report.get("verdicts") else "clear"
    return (
        f'<div class="aw-probe-chip" data-testid="probe-chip" data-state="{state}">'
        f"<b>{esc(_('Probe'))}</b> {body}</div>"
    )


def progress(doing: str | None, fraction: float | None, elapsed_s: float, limit_s: float) -> str:
    """While the probe runs: what it is doing, a bar where it says how far it is, the time against its limit."""
    pct = 100.0 * (fraction or 0.0)
    return (
        f'<div class="aw-setup" data-testid="probe-progress" data-state="running" data-fraction="{pct:.0f}">'
        f'{badge("running", _("probing"))} <span class="aw-msg">{esc(doing or _("starting…"))}</span> '
        f'<span class="aw-muted">{elapsed_s:.0f} s / {esc(_("limit"))} {limit_s:.0f} s</span>'
        f'<div class="aw-progress"><div class="aw-bar" style="width:{pct:.1f}%"></div></div></div>'
    )


def failed(error: str, cancelled: bool = False) -> str:
    what = _("Probe cancelled.") if cancelled else _("The probe failed:")
    return (
        f'<div class="aw-msg aw-msg-error" data-testid="probe-error" data-state="{"cancelled" if cancelled else "failed"}">'
        f"<b>{esc(what)}</b> {'' if cancelled else engine_html(error)}</div>"
    )


def _verdicts(report: dict) -> str:
    if not report.get("verdicts"):
        return f'<p class="aw-probe-clear">{esc(_("No verdict: nothing in the samples predicts a problem the probe looks for."))}</p>'
    items = []
    for v in report["verdicts"]:
        setting = f" {esc(_('Change:'))} <code>{esc(v['setting'])}</code>" if v.get("setting") else ""
        items.append(
            f'<div class="aw-diag" data-code="{esc(v["code"])}"><b>{esc(_(v["title"]))}</b> <code>{esc(v["code"])}</code>'
            f"<div>{engine_html(v['message'])}</div>"
            f'<div class="aw-diag-advice">{esc(_(v["advice"]))}.{setting}</div></div>'
        )
    return f'<div class="aw-diagnoses" data-testid="probe-verdicts">{"".join(items)}</div>'


def _histogram(pr: dict) -> str:
    hist = pr["histogram"]
    top = max(hist["counts"] or [1]) or 1
    rows = []
    for lo, hi, n in zip(hist["edges"], hist["edges"][1:], hist["counts"]):
        width = 100.0 * n / top
        rows.append(
            f'<div class="aw-hist-row"><span class="aw-hist-k">{lo:g}–{hi:g}</span>'
            f'<span class="aw-hist-bar"><span style="width:{width:.1f}%"></span></span>'
            f'<span class="aw-hist-n">{esc(n)}</span></div>'
        )
    shares = (
        f"{esc(_('never solved'))} <b>{_pct(pr['share_pass_rate_zero'])}</b> · "
        f"{esc(_('always solved'))} <b>{_pct(pr['share_pass_rate_one'])}</b> · "
        f"{esc(_('mean reward'))} <b>{pr['mean_reward']:.3f}</b> · "
        f"{esc(_('pass: reward ≥'))} {pr['pass_threshold']:g}"
    )
    return (
        f'<div class="aw-probe-part"><b>{esc(_("Mean reward per prompt"))}</b> '
        f'<span class="aw-muted">({esc(_("prompts in each range"))})</span>'
        f'<div class="aw-hist" data-testid="probe-histogram">{"".join(rows)}</div>'
        f'<div class="aw-muted">{shares}</div></div>'
    )


def _spread(zs: dict) -> str:
    cells = [(str(zs["group_size"]), zs["observed"], _("seen"))]
    cells += [(n, v, _("estimated")) for n, v in zs["estimated"].items()]
    head = "".join(f"<th>{esc(_('group of'))} {esc(n)}</th>" for n, _v, _w in cells)
    body = "".join(f'<td><b>{_pct(v)}</b> <span class="aw-muted">{esc(w)}</span></td>' for _n, v, w in cells)
    return (
        f'<div class="aw-probe-part" data-testid="probe-spread"><b>{esc(_("Groups without reward spread"))}</b> '
        f'<span class="aw-muted">({esc(_("steps GRPO learns nothing from"))})</span>'
        f'<table class="aw-group-table"><tr>{head}</tr><tr>{body}</tr></table></div>'
    )


def _lengths(ln: dict) -> str:
    cut = ln.get("length_cutting_under_5_percent")
    suggestion = (
        f"{esc(_('a max_completion_length of'))} <b>{esc(cut)}</b> {esc(_('cuts under 5 %'))}"
        if cut is not None
        else esc(_("the length that cuts under 5 % is above max_completion_length: raise it and probe again"))
    )
    return (
        f'<div class="aw-probe-part" data-testid="probe-lengths"><b>{esc(_("Completion lengths"))}</b><div>'
        f"<b>{_pct(ln['truncated_share'])}</b> {esc(_('cut at'))} max_completion_length = {esc(ln['max_completion_length'])}"
        f" · p50 {esc(ln['p50'])} · p95 {esc(ln['p95'])} · max {esc(ln['max'])} {esc(_('tokens'))}</div><div>{suggestion}</div></div>"
    )


def _terms(terms: dict) -> str:
    rows = []
    for name, t in terms.items():
        if not t.get("samples"):
            continue
        flag = f'<b class="aw-group-flat">{esc(_("constant"))}</b>' if t["constant"] else ""
        rows.append(
            f"<tr><td><code>{esc(name)}</code></td><td>{_num(t['mean'])}</td><td>{_num(t['std'])}</td>"
            f"<td>[{_num(t['min'])}, {_num(t['max'])}]</td><td>{flag}</td></tr>"
        )
    head = "".join(f"<th>{esc(h)}</th>" for h in (_("term"), _("mean"), _("spread (std)"), _("range"), ""))
    return (
        f'<div class="aw-probe-part" data-testid="probe-terms"><b>{esc(_("Reward terms"))}</b>'
        f'<table class="aw-group-table"><tr>{head}</tr>{"".join(rows)}</table></div>'
    )


def _tools(t: dict | None) -> str:
    if not t:
        return ""
    return (
        f'<div class="aw-probe-part"><b>{esc(_("Tool use"))}</b><div>{t["calls_per_rollout"]:.2f} '
        f"{esc(_('calls per rollout'))} · {_pct(t['failing_share'])} {esc(_('failing'))} · "
        f"{esc(_('turns'))} {t['turns_mean']:.2f} / {esc(t['max_turns'])}</div></div>"
    )


def _forecast(fc: dict) -> str:
    rows = []
    for item in fc["items"]:
        rate = "tokens/s" in item["what"]
        value = ("–" if item["seconds"] is None else f"{item['seconds']:.1f}") if rate else _secs(item["seconds"])
        basis = item["basis"]
        rows.append(
            f'<tr data-basis="{esc(basis)}" title="{esc(item["how"])}"><td>{esc(WHAT.get(item["what"], item["what"]))}'
            f"</td><td><b>{esc(value)}</b></td><td>{badge('ok' if basis == 'measured' else 'idle', BASIS.get(basis, basis))}"
            f"</td></tr>"
        )
    note = f'<div class="aw-muted">{engine_html(fc["note"])}</div>' if fc.get("note") else ""
    return (
        f'<div class="aw-probe-part" data-testid="probe-forecast"><b>{esc(_("Time forecast"))}</b> '
        f'<span class="aw-muted">({esc(_("hover a line for how it was measured"))})</span>'
        f'<table class="aw-group-table">{"".join(rows)}</table>{note}</div>'
    )


def report_html(report: dict | None, reused: bool = False) -> str:
    """The whole report (empty when there is none). A stored report is a file user code can write (the runs folder):
    every value in it is escaped, and one of another shape than the probe writes is said to be unreadable."""
    if not report:
        return ""
    try:
        return _report_html(report, reused)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        why = f"{type(e).__name__}: {e}"[:200]
        return (
            f'<div class="aw-msg aw-msg-error" data-testid="probe-report" data-state="unreadable">'
            f"{esc(_('The stored probe report cannot be shown (not in the shape the probe writes):'))} {esc(why)} — "
            f"<code>{esc(report.get('path') or '')}</code></div>"
        )


def _report_html(report: dict, reused: bool) -> str:
    s = report["settings"]
    where = _("stored: shown again without sampling") if reused else _("sampled now")
    head = (
        f'<div class="aw-muted">{esc(report["pass_rates"]["prompts"])} {esc(_("prompts"))} × {esc(s["samples"])} '
        f"{esc(_('samples'))} · <code>{esc(s['model'])}</code> · {esc(_('temperature'))} {esc(s['temperature'])} · "
        f'<span data-testid="probe-source" data-reused="{str(bool(reused)).lower()}">{esc(where)}</span></div>'
    )
    memory = report.get("memory") or {}
    mem = (
        f'<div class="aw-muted">{esc(_("memory estimate"))}: {engine_html(memory.get("summary"))}</div>'
        if memory.get("summary")
        else ""
    )
    return (
        f'<div class="aw-probe" data-testid="probe-report" data-key="{esc(report.get("key", ""))}">{head}'
        f'{_verdicts(report)}<div class="aw-probe-grid">{_histogram(report["pass_rates"])}'
        f"{_spread(report['zero_spread'])}{_lengths(report['lengths'])}{_terms(report['terms'])}"
        f"{_tools(report.get('tools'))}{_forecast(report['forecast'])}</div>{mem}</div>"
    )


def filtered_html(res: dict) -> str:
    """What the difficulty filter wrote (rows kept, dropped by reason), or why it wrote nothing."""
    if not res.get("ok"):
        return f'<div class="aw-msg aw-msg-error" data-testid="probe-filtered" data-state="failed">{engine_html(res.get("error"))}</div>'
    dropped = " · ".join(f"{n} {esc(DROPPED.get(k, k))}" for k, n in res["dropped"].items() if n) or "0"
    low, high = res["band"]
    return (
        f'<div class="aw-msg aw-msg-ok" data-testid="probe-filtered" data-state="written">'
        f"<b>{esc(res['kept'])}</b> / {esc(res['rows'])} {esc(_('rows kept'))} "
        f"({low:g} &lt; {esc(_('pass rate'))} &lt; {high:g}); "
        f"{esc(_('dropped:'))} {dropped}. {esc(_('Selected as the train set:'))} <code>{esc(res['path'])}</code>"
        f"{_short_of_a_step(res)}</div>"
    )


def _short_of_a_step(res: dict) -> str:
    """The config check refuses a training set smaller than one step's prompts: said here, with the way out."""
    per_step = res.get("fewer_than_a_step")
    if not per_step:
        return ""
    return (
        f'<br><span data-testid="probe-filtered-short">{esc(_("Fewer rows than one step takes:"))} '
        f"<code>prompts_per_step</code> = {esc(per_step)}. {esc(_('Lower it to the rows kept or fewer, or widen the band.'))}"
        "</span>"
    )
