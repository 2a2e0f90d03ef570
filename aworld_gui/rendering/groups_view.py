"""The Monitor's GRPO group view of one logged step: the share of prompt groups with zero spread, a histogram
of the step's rewards (inline SVG, like the curves), and each group's completions side by side — the
completion, each reward term, the total, the advantage. Data: :mod:`engines.runs.sample_groups`."""

from __future__ import annotations

from typing import Any

from engines.runs.sample_groups import zero_spread

from markupsafe import Markup

from .render import _content, _messages, fmt_num
from .templates import macro

GROUPS = "render/groups.html"  # the view's templates (aworld_gui/templates/)

BINS = 10
HIST_W, HIST_H, BAR_GAP = 360, 96, 2
TEXT_LIMIT = 240  # characters of a completion shown in its cell (the whole text is its tooltip)


def completion_text(sample: dict) -> str:
    """The completion's words: its assistant turns (tool calls named), joined."""
    parts = []
    for m in _messages(sample.get("completion"), "assistant"):
        if m.get("role") not in (None, "assistant"):
            continue
        text = _content(m)
        calls = [
            (tc.get("function", tc) if isinstance(tc, dict) else {}).get("name", "?")
            for tc in m.get("tool_calls") or []
        ]
        parts.append(text + "".join(f" ⚙{c}()" for c in calls))
    return " ⏎ ".join(p for p in parts if p)


def histogram_svg(rewards: list[float], bins: int = BINS) -> Markup:
    """Counts of the step's rewards in ``bins`` equal bins between their least and greatest value."""
    if not rewards:
        return Markup("")
    lo, hi = min(rewards), max(rewards)
    n = bins if hi > lo else 1
    counts = [0] * n
    for r in rewards:
        counts[min(n - 1, int((r - lo) / (hi - lo) * n)) if hi > lo else 0] += 1
    top, plot_h, bar_w = max(counts), HIST_H - 18, HIST_W / n
    bars = []
    for i, c in enumerate(counts):
        h = plot_h * c / top
        a = lo + (hi - lo) * i / n
        b = lo + (hi - lo) * (i + 1) / n
        x, y, w = f"{i * bar_w + BAR_GAP / 2:.1f}", f"{plot_h - h:.1f}", f"{bar_w - BAR_GAP:.1f}"
        bars.append((x, y, w, f"{h:.1f}", fmt_num(a, 3), fmt_num(b, 3), c))
    return macro(GROUPS, "histogram")(HIST_W, HIST_H, bars, fmt_num(lo, 3), fmt_num(hi, 3))


def group_card(rows: list[dict], terms: list[str]) -> Markup:
    flat = zero_spread([r.get("reward") for r in rows])
    prompt = _messages(rows[0].get("prompt"), "user")
    users = [_content(m) for m in prompt if m.get("role") == "user"]
    shown_rows = []
    for r in rows:
        text = completion_text(r)
        shown = text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "…"
        values = [fmt_num((r.get("rewards") or {}).get(t), 3) for t in terms]
        adv = r.get("advantage")
        shown_rows.append(
            (text, shown, values, fmt_num(r.get("reward"), 3), fmt_num(adv, 3) if adv is not None else "—")
        )
    return macro(GROUPS, "group_card")(rows[0].get("group"), len(rows), flat, (users or [""])[-1], terms, shown_rows)


def groups_html(step: Any, groups: list[list[dict]], summary: dict, from_engine: bool, zero_only: bool) -> Markup:
    """The view of ``step``: its statistics (``summary``: the engine's, else computed from ``groups``), the
    histogram, and the groups (only those without spread when ``zero_only``)."""
    if not groups:
        return macro(GROUPS, "groups_empty")(False)
    n, k = int(summary.get("groups") or 0), int(summary.get("zero_spread") or 0)
    share = f"{100.0 * k / n:.0f}%" if n else "—"
    rewards = [float(x) for x in summary.get("rewards") or [] if isinstance(x, (int, float))]
    terms: list[str] = []
    for rows in groups:
        for r in rows:
            terms += [t for t in (r.get("rewards") or {}) if t not in terms]
    shown = [g for g in groups if not zero_only or zero_spread(r.get("reward") for r in g)]
    no_advantages = all(r.get("advantage") is None for g in groups for r in g)
    return macro(GROUPS, "groups")(
        step,
        share,
        k,
        n,
        from_engine,
        len(rewards),
        histogram_svg(rewards),
        no_advantages,
        [group_card(g, terms) for g in shown],
    )
