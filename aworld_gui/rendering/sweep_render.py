"""The Sweeps view's fragments: the sweep's headline, its trials as table rows, the objective against each
param as an SVG scatter (the look of :mod:`aworld_gui.rendering.charts`), Optuna's importances as bars."""

from __future__ import annotations

import math
from typing import Any

from .charts import H, MB, ML, MR, MT, PALETTE, tick_label, ticks
from .i18n import _
from .render import badge, esc

W = 420
STATE_COLOR = {
    "complete": PALETTE[0],
    "pruned": "#9ca3af",
    "failed": "#dc2626",
    "interrupted": "#d97706",
    "running": PALETTE[1],
}


def fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


def headline(d: dict[str, Any]) -> str:
    obj = d.get("objective") or {}
    done = sum(1 for t in d["trials"] if t.get("state") in ("complete", "pruned", "failed"))
    best = d.get("best")
    best_text = (
        f"{_('best')}: <b>{esc(fmt(best['value']))}</b> ({_('trial')} {best['number']}, "
        f"{esc(', '.join(f'{k}={fmt(v)}' for k, v in best['params'].items()))})"
        if best
        else _("no complete trial yet")
    )
    return (
        f'<div class="aw-msg" id="sweep-headline" data-state="{esc(d["state"])}">{badge(d["state"])} '
        f"<b>{esc(d['name'])}</b> · {done}/{esc(d.get('trials_planned'))} {_('trials')} · "
        f"{esc(obj.get('metric'))} ({esc(obj.get('direction'))}) · {esc(d.get('sampler'))} · "
        f"{_('pruner')} {esc(d.get('pruner'))}<br>{best_text}</div>"
    )


def table(d: dict[str, Any]) -> tuple[list[str], list[list]]:
    """Headers and rows: trials sorted by the objective, one column per param."""
    headers = ["trial", "state", "value", *d["params"], "run"]
    rows = [
        [
            t["number"],
            t.get("state"),
            fmt(t.get("value")),
            *[fmt(t["params"].get(p)) for p in d["params"]],
            t.get("run_id") or "",
        ]
        for t in d["trials"]
    ]
    return headers, rows


def _scale(lo: float, hi: float, log: bool):
    if log:
        lo, hi = math.log10(lo), math.log10(hi)
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    pad = (hi - lo) * 0.08  # the end points and their labels inside the frame
    return lo - pad, hi + pad


def scatter(trials: list[dict], param: str, metric: str) -> str:
    """The objective (y) of each trial against one param's value (x); a log axis when every value is
    positive and they span more than a factor 20; text values (a categorical param) evenly spaced."""
    points = [
        (t["params"].get(param), t["value"], t.get("state"))
        for t in trials
        if t.get("value") is not None and param in t.get("params", {})
    ]
    if not points:
        return (
            f'<div class="aw-chart aw-chart-empty" data-points="0" data-param="{esc(param)}">'
            f'<div class="aw-muted">{esc(param)}: {_("no trial value yet")}</div></div>'
        )
    numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x, _v, _s in points)
    cats = [] if numeric else sorted({str(x) for x, _v, _s in points})
    xs = [float(x) if numeric else cats.index(str(x)) for x, _v, _s in points]
    log = numeric and min(xs) > 0 and max(xs) / min(xs) > 20
    x0, x1 = _scale(min(xs), max(xs), log) if numeric else (-0.5, len(cats) - 0.5)
    ys = [v for _x, v, _s in points]
    y0, y1 = min(ys), max(ys)
    pad = (y1 - y0) * 0.08 or (abs(y0) * 0.1 or 1.0)
    y0, y1 = y0 - pad, y1 + pad
    pw, ph = W - ML - MR, H - MT - MB

    def sx(x: float) -> float:
        x = math.log10(x) if log else x
        return ML + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return MT + (1 - (y - y0) / (y1 - y0)) * ph

    parts = [f'<svg viewBox="0 0 {W} {H}" class="aw-svg" role="img" aria-label=\'{esc(metric)} / {esc(param)}\'>']
    step = (y1 - y0) / 4
    for yv in ticks(y0, y1, 4):
        parts.append(
            f'<line x1="{ML}" x2="{W - MR}" y1="{sy(yv):.1f}" y2="{sy(yv):.1f}" class="aw-grid"/>'
            f'<text x="{ML - 6}" y="{sy(yv) + 4:.1f}" text-anchor="end" class="aw-tick">'
            f"{esc(tick_label(yv, step))}</text>"
        )
    labels = (
        [(c, i) for i, c in enumerate(cats)]
        if not numeric
        else [(fmt(v), v) for v in sorted(set(float(x) for x, _v, _s in points))][:8]
    )
    for text, xv in labels:
        parts.append(
            f'<text x="{sx(xv):.1f}" y="{H - MB + 16}" text-anchor="middle" class="aw-tick">{esc(text)}</text>'
        )
    for (x, v, state), xv in zip(points, xs):
        color = STATE_COLOR.get(state or "", PALETTE[2])
        parts.append(
            f'<circle cx="{sx(xv):.1f}" cy="{sy(v):.1f}" r="5" fill="{color}" data-state="{esc(state)}">'
            f"<title>{esc(param)}={esc(fmt(x))} → {esc(fmt(v))} ({esc(state)})</title></circle>"
        )
    parts.append(
        f'<text x="{ML + pw / 2:.1f}" y="{H - 4}" text-anchor="middle" class="aw-tick">{esc(param)}'
        f"{' (log)' if log else ''}</text></svg>"
    )
    return (
        f'<div class="aw-chart" data-points="{len(points)}" data-param="{esc(param)}">'
        f'<div class="aw-muted">{esc(metric)} · {esc(param)}</div>{"".join(parts)}</div>'
    )


def charts(d: dict[str, Any]) -> str:
    metric = (d.get("objective") or {}).get("metric", "")
    return (
        '<div class="aw-sweep-charts" style="display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));'
        'gap:12px">' + "".join(scatter(d["trials"], p, metric) for p in d["params"]) + "</div>"
    )


def importance_bars(values: dict[str, float] | None) -> str:
    if not values:
        return f'<div class="aw-muted" id="sweep-importances" data-n="0">{_("Parameter importances appear once 4 trials are complete.")}</div>'
    top = max(values.values()) or 1.0
    rows = "".join(
        f'<div style="display:flex;gap:8px;align-items:center"><code style="min-width:140px">{esc(k)}</code>'
        f'<div style="background:{PALETTE[0]};height:10px;width:{max(2, int(200 * v / top))}px"></div>'
        f"<span>{v:.2f}</span></div>"
        for k, v in values.items()
    )
    return (
        f'<div id="sweep-importances" data-n="{len(values)}"><b>{_("Parameter importances (Optuna)")}</b>{rows}</div>'
    )
