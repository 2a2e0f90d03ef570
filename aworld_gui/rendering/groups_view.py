"""The Monitor's GRPO group view of one logged step: the share of prompt groups with zero spread, a histogram
of the step's rewards (inline SVG, like the curves), and each group's completions side by side — the
completion, each reward term, the total, the advantage. Data: :mod:`engines.runs.sample_groups`."""

from __future__ import annotations

from typing import Any

from engines.runs.sample_groups import zero_spread

from .i18n import _
from .render import _content, _messages, esc, fmt_num

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


def histogram_svg(rewards: list[float], bins: int = BINS) -> str:
    """Counts of the step's rewards in ``bins`` equal bins between their least and greatest value."""
    if not rewards:
        return ""
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
        bars.append(
            f'<rect x="{i * bar_w + BAR_GAP / 2:.1f}" y="{plot_h - h:.1f}" width="{bar_w - BAR_GAP:.1f}" '
            f'height="{h:.1f}" fill="#4f46e5" opacity="0.75"><title>{fmt_num(a, 3)} – {fmt_num(b, 3)}: {c}</title>'
            "</rect>"
        )
    labels = (
        f'<text x="0" y="{HIST_H - 4}" font-size="11" fill="currentColor">{fmt_num(lo, 3)}</text>'
        f'<text x="{HIST_W}" y="{HIST_H - 4}" font-size="11" text-anchor="end" fill="currentColor">{fmt_num(hi, 3)}</text>'
    )
    return (
        f'<svg class="aw-groups-hist" data-testid="groups-histogram" width="{HIST_W}" height="{HIST_H}" '
        f'viewBox="0 0 {HIST_W} {HIST_H}" role="img">{"".join(bars)}{labels}</svg>'
    )


def group_card(rows: list[dict], terms: list[str]) -> str:
    totals = [r.get("reward") for r in rows]
    flat = zero_spread(totals)
    head = (
        f'<div class="aw-group-head"><b>{_("Group")} {esc(rows[0].get("group"))}</b>'
        f'<span class="aw-muted">{len(rows)} {_("completions")}</span>'
        + (f'<span class="aw-group-flat">{_("zero spread: no gradient")}</span>' if flat else "")
        + "</div>"
    )
    prompt = _messages(rows[0].get("prompt"), "user")
    users = [_content(m) for m in prompt if m.get("role") == "user"]
    head += f'<div class="aw-group-prompt">{esc((users or [""])[-1])}</div>'
    th = "".join(f"<th>{esc(t)}</th>" for t in terms)
    body = []
    for r in rows:
        text = completion_text(r)
        shown = text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "…"
        cells = "".join(f"<td>{fmt_num((r.get('rewards') or {}).get(t), 3)}</td>" for t in terms)
        adv = r.get("advantage")
        body.append(
            f'<tr data-testid="group-row"><td class="aw-group-text" title="{esc(text)}">{esc(shown) or "—"}</td>'
            f"{cells}<td><b>{fmt_num(r.get('reward'), 3)}</b></td><td>{fmt_num(adv, 3) if adv is not None else '—'}</td></tr>"
        )
    table = (
        f'<table class="aw-group-table"><thead><tr><th>{_("Completion")}</th>{th}<th>{_("Total")}</th>'
        f"<th>{_('Advantage')}</th></tr></thead><tbody>{''.join(body)}</tbody></table>"
    )
    return (
        f'<div class="aw-group" data-testid="group" data-group="{esc(rows[0].get("group"))}" '
        f'data-zero-spread="{str(flat).lower()}">{head}{table}</div>'
    )


def groups_html(step: Any, groups: list[list[dict]], summary: dict, from_engine: bool, zero_only: bool) -> str:
    """The view of ``step``: its statistics (``summary``: the engine's, else computed from ``groups``), the
    histogram, and the groups (only those without spread when ``zero_only``)."""
    if not groups:
        return f'<div class="aw-muted" data-testid="groups-empty">{_("No prompt groups logged for this step.")}</div>'
    n, k = int(summary.get("groups") or 0), int(summary.get("zero_spread") or 0)
    share = f"{100.0 * k / n:.0f}%" if n else "—"
    scope = _("of the step's groups") if from_engine else _("of the groups logged (the engine wrote no step totals)")
    rewards = [float(x) for x in summary.get("rewards") or [] if isinstance(x, (int, float))]
    stats = (
        f'<div class="aw-groups-stats" data-testid="groups-stats"><div><span class="aw-muted">{_("Step")}</span> '
        f'<b>{esc(step)}</b></div><div>{_("Zero spread")}: <b data-testid="zero-share">{share}</b> '
        f'<span class="aw-muted">({k} / {n} {scope})</span></div>'
        f'<div class="aw-muted">{_("Rewards of the step")} ({len(rewards)})</div>{histogram_svg(rewards)}</div>'
    )
    terms: list[str] = []
    for rows in groups:
        for r in rows:
            terms += [t for t in (r.get("rewards") or {}) if t not in terms]
    shown = [g for g in groups if not zero_only or zero_spread(r.get("reward") for r in g)]
    if not shown:
        cards = f'<div class="aw-muted" data-testid="groups-empty">{_("No logged group of this step has zero spread.")}</div>'
    else:
        cards = "".join(group_card(g, terms) for g in shown)
    note = ""
    if all(r.get("advantage") is None for g in groups for r in g):
        note = f'<div class="aw-muted">{_("The engine logged no advantages for these groups (verl dumps none).")}</div>'
    return (
        f'<div class="aw-groups" data-testid="groups-view">{stats}{note}<div class="aw-group-grid">{cards}</div></div>'
    )
