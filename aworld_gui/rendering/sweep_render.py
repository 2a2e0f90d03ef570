"""The Sweeps view's fragments: the sweep's headline, its trials as table rows, the objective against each
param as an SVG scatter (the look of :mod:`aworld_gui.rendering.charts`), all params and the objective at once as
parallel coordinates (two params or more), Optuna's importances as bars."""

from __future__ import annotations

import math
from typing import Any

from markupsafe import Markup

from .charts import H, MB, ML, MR, MT, PALETTE, tick_label, ticks
from .render import badge
from .templates import macro

SWEEPS = "render/sweeps.html"  # the view's templates (aworld_gui/templates/)

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


def headline(d: dict[str, Any]) -> Markup:
    done = sum(1 for t in d["trials"] if t.get("state") in ("complete", "pruned", "failed"))
    best = d.get("best")
    if best:
        best = (fmt(best["value"]), best["number"], ", ".join(f"{k}={fmt(v)}" for k, v in best["params"].items()))
    return macro(SWEEPS, "headline")(d, badge(d["state"]), done, best)


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


#: a tick label's width per character (0.6 em of its 12-unit font: CSS .aw-tick) and the least gap between two
#: labels, in the chart's units
TICK_CHAR_W, TICK_GAP = 7.2, 6.0


def scatter(trials: list[dict], param: str, metric: str) -> Markup:
    """The objective (y) of each trial against one param's value (x); a log axis when every value is
    positive and they span more than a factor 20; text values (a categorical param) evenly spaced."""
    points = [
        (t["params"].get(param), t["value"], t.get("state"))
        for t in trials
        if t.get("value") is not None and param in t.get("params", {})
    ]
    if not points:
        return macro(SWEEPS, "scatter_empty")(param)
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

    step = (y1 - y0) / 4
    yticks = [(f"{sy(yv):.1f}", f"{sy(yv) + 4:.1f}", tick_label(yv, step)) for yv in ticks(y0, y1, 4)]
    labels = (
        [(c, i) for i, c in enumerate(cats)]
        if not numeric
        else [(fmt(v), v) for v in sorted(set(float(x) for x, _v, _s in points))][:8]
    )
    xlabels = []
    right = -math.inf  # where the last label drawn ends: a value too close to it is not labelled (its point's
    for text, xv in labels:  # title says it) — two trials' close learning rates printed over each other
        x, half = sx(xv), len(text) * TICK_CHAR_W / 2
        if x - half < right + TICK_GAP:
            continue
        right = x + half
        xlabels.append((f"{x:.1f}", text))
    dots = [
        (
            f"{sx(xv):.1f}",
            f"{sy(v):.1f}",
            STATE_COLOR.get(state or "", PALETTE[2]),
            state,
            f"{param}={fmt(x)} → {fmt(v)} ({'' if state is None else state})",
        )
        for (x, v, state), xv in zip(points, xs)
    ]
    frame = {"w": W, "h": H, "left": ML, "right": W - MR, "bottom": H - MB, "middle": f"{ML + pw / 2:.1f}"}
    return macro(SWEEPS, "scatter")(param, metric, frame, yticks, xlabels, dots, log)


def _axis(values: list[Any]):
    """(position in 0..1 of a value, tick labels at their positions) for one parallel-coordinates axis: numbers on
    a linear or log scale (as :func:`scatter`), text values evenly spaced."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        xs = [float(v) for v in values]
        log = min(xs) > 0 and max(xs) / min(xs) > 20
        lo, hi = _scale(min(xs), max(xs), log)

        def pos(v: Any) -> float:
            x = math.log10(float(v)) if log else float(v)
            return (x - lo) / (hi - lo)

        shown = sorted(set(xs))
        shown = shown if len(shown) <= 5 else [shown[0], shown[len(shown) // 2], shown[-1]]
        return pos, [(fmt(v), pos(v)) for v in shown], log
    cats = sorted({str(v) for v in values})
    return (
        (lambda v: (cats.index(str(v)) + 0.5) / len(cats)),
        [(c, (i + 0.5) / len(cats)) for i, c in enumerate(cats)],
        False,
    )


def parallel_coordinates(trials: list[dict], params: list[str], metric: str, best: int | None = None) -> Markup:
    """Every trial as a line across one vertical axis per param and one for the objective (right): which settings
    go together with a good value. Lines coloured by value (low light, high dark), the best one on top and bold,
    trials without a value (pruned early, failed) dashed and grey."""
    lines = [t for t in trials if all(p in (t.get("params") or {}) for p in params)]
    if len(params) < 2 or len(lines) < 2:
        return Markup("")
    axes = [*params, metric]
    values = [t.get("value") for t in lines if t.get("value") is not None]
    scales = [_axis([t["params"][p] for t in lines]) for p in params] + [_axis(values or [0.0])]
    w, h, top, bottom, side = 760, 240, 22, 34, 70
    gap = (w - 2 * side) / (len(axes) - 1)

    def point(i: int, v: Any) -> tuple[float, float]:
        return side + i * gap, top + (1 - scales[i][0](v)) * (h - top - bottom)

    v_lo, v_hi = (min(values), max(values)) if values else (0.0, 1.0)
    axis_names, labels = [], []  # the labels: drawn over the lines
    for i, name in enumerate(axes):
        x = side + i * gap
        for text, at in scales[i][1]:
            labels.append((f"{x - 5:.1f}", f"{top + (1 - at) * (h - top - bottom) + 4:.1f}", text))
        axis_names.append((f"{x:.1f}", f"{name}{' (log)' if scales[i][2] else ''}"))
    drawn = []
    ordered = sorted(lines, key=lambda t: (t.get("number") == best, t.get("value") is not None, t.get("value") or 0))
    for t in ordered:
        value = t.get("value")
        coords = [point(i, t["params"][p]) for i, p in enumerate(params)]
        if value is not None:
            coords.append(point(len(params), value))
            share = (value - v_lo) / (v_hi - v_lo) if v_hi > v_lo else 1.0
            style = [("stroke", PALETTE[0]), ("stroke-opacity", f"{0.25 + 0.75 * share:.2f}")]
        else:
            style = [("stroke", "#9ca3af"), ("stroke-dasharray", "4 3")]
        is_best = t.get("number") == best
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        settings = ", ".join(f"{p}={fmt(t['params'][p])}" for p in params)
        title = f"#{t.get('number')}: {settings} → {fmt(value)}"
        drawn.append((path, style, 3 if is_best else 1.5, t.get("number"), t.get("state"), is_best, title))
    # no translation marker inside the SVG (the template's only text there is the data's)
    return macro(SWEEPS, "parallel")(metric, params, w, h, top, bottom, axis_names, labels, drawn)


def charts(d: dict[str, Any]) -> Markup:
    metric = (d.get("objective") or {}).get("metric", "")
    best = (d.get("best") or {}).get("number")
    return macro(SWEEPS, "charts")(
        parallel_coordinates(d["trials"], list(d["params"]), metric, best),
        [scatter(d["trials"], p, metric) for p in d["params"]],
    )


def importance_bars(values: dict[str, float] | None) -> Markup:
    top = max((values or {}).values(), default=0.0) or 1.0
    rows = [(k, max(2, int(200 * v / top)), f"{v:.2f}") for k, v in (values or {}).items()]
    return macro(SWEEPS, "importances")(rows, PALETTE[0])
