"""Training curves as inline SVG (drawn in Python, shown in a ``gr.HTML``): the Monitor's live curves
and the Runs tab's overlay of several runs. Why not ``gr.LinePlot``: docs/STUDIO.md ("Live updates")."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from markupsafe import Markup

from .i18n import _
from .render import fmt_num
from .templates import macro

CHART = "render/chart.html"  # the chart's template (aworld_gui/templates/)

W, H = 640, 250
ML, MR, MT, MB = 68, 14, 10, 30  # plot margins: left (y title and labels), right, top, bottom (x labels)

PALETTE = ["#4f46e5", "#e11d48", "#059669", "#d97706", "#0891b2", "#7c3aed", "#db2777", "#65a30d"]


@dataclass
class Line:
    name: str
    xs: Sequence[float]
    ys: Sequence[float]
    color: str
    width: float = 2.0
    opacity: float = 1.0
    markers: bool = False
    legend: bool = True
    latest: float | None = None  # the value shown next to the name (default: last y)
    on_top: bool = False  # drawn after the others (the live run among finished ones)
    extra: dict = field(default_factory=dict)


def nice_step(span: float, target: int) -> float:
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(1, target)
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def ticks(lo: float, hi: float, target: int, min_step: float = 0.0) -> list[float]:
    """Round values from ``lo`` to ``hi``, about ``target`` of them, at least ``min_step`` apart (1 for steps:
    a training step is a whole number)."""
    step = max(nice_step(hi - lo, target), min_step)
    first = math.ceil(lo / step - 1e-9)
    out = []
    while len(out) < 50:
        v = (first + len(out)) * step  # multiples of the step: no error accumulates from adding it up
        if v > hi + step * 1e-9:
            break
        out.append(0.0 if abs(v) < step * 1e-9 else v)
    return out


def step_decimals(step: float) -> int:
    """The decimals that write every multiple of ``step`` exactly (0.25 → 2, 0.025 → 3, 2.5 → 1, 50 → 0)."""
    for d in range(0, 10):
        if abs(round(step, d) - step) <= abs(step) * 1e-9:
            return d
    return 10


def tick_label(v: float, step: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 10_000:
        return f"{v / 1000:g}k"
    if a < 1e-3 or a >= 1e6:
        return f"{v:.1e}"
    return f"{v:.{min(step_decimals(step), 6)}f}"


def svg_chart(
    lines: list[Line],
    y_title: str = "",
    empty: str = _("waiting for the first logged step"),
    chart_id: str = "",
    width: int = W,
) -> Markup:
    """A complete chart: legend with latest values, then the SVG (axes, grid, lines). ``width`` is the
    drawing's width in SVG units (the chart scales to its box: give a wide box a wide drawing)."""
    keys = [ln for ln in lines if ln.legend and (ln.xs or ln.latest is not None)]  # a line not drawn (its
    lines = [ln for ln in lines if ln.xs]  # points averaged into another) keeps its legend entry and number
    if not lines:
        return macro(CHART, "empty")(empty)
    xs_all = [x for ln in lines for x in ln.xs]
    ys_all = [y for ln in lines for y in ln.ys]
    x0, x1 = min(xs_all), max(xs_all)
    last_step = x1
    y0, y1 = min(ys_all), max(ys_all)
    if x1 == x0:  # one step so far: the axis spans real steps around it (no step -1 or 0.5)
        x0, x1 = max(0.0, x0 - 1), x1 + 1
    pad = (y1 - y0) * 0.06 or (abs(y0) * 0.1 or 1.0)
    y0, y1 = y0 - pad, y1 + pad
    pw, ph = width - ML - MR, H - MT - MB

    def sx(x: float) -> float:
        return ML + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return MT + (1 - (y - y0) / (y1 - y0)) * ph

    ystep = nice_step(y1 - y0, 5)
    yticks = [(f"{sy(v):.1f}", f"{sy(v) + 4:.1f}", tick_label(v, ystep)) for v in ticks(y0, y1, 5)]
    xstep = max(nice_step(x1 - x0, 6), 1.0)
    xticks = [(f"{sx(v):.1f}", tick_label(v, xstep)) for v in ticks(x0, x1, 6, min_step=1.0)]
    drawn = []
    for ln in sorted(lines, key=lambda ln: ln.on_top):  # (stable: the others keep their order)
        pts = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in zip(ln.xs, ln.ys))
        marks = []
        if ln.markers or len(ln.xs) == 1:  # a line of one point draws nothing: its point is its mark
            marks = [(f"{sx(x):.1f}", f"{sy(y):.1f}", f"{x:g}", fmt_num(y)) for x, y in zip(ln.xs, ln.ys)]
        drawn.append((pts, ln.color, ln.width, ln.opacity, ln.name, marks))
    legend = [
        (ln.color, max(ln.opacity, 0.35), ln.name, fmt_num(ln.latest if ln.latest is not None else ln.ys[-1]))
        for ln in keys
    ]
    frame = {"w": width, "h": H, "left": ML, "top": MT, "right": width - MR, "bottom": H - MB, "pw": pw, "ph": ph}
    frame["mid"] = f"{MT + ph / 2:.1f}"  # the y title's place: along the y axis, left of its labels
    n = max(len(ln.xs) for ln in lines)
    return macro(CHART, "svg_chart")(chart_id, n, f"{last_step:g}", frame, y_title, legend, yticks, xticks, drawn)
