"""The Monitor's GRPO group view of a recorded samples file (testing/group_samples.py, the trl engine's rows):
the steps with groups, the zero-spread share over the whole step, the histogram, the groups side by side with
each term, the total and the advantage, and the zero-spread filter."""

from __future__ import annotations

import re

from aworld_gui.rendering.groups_view import groups_html as raw_html, histogram_svg
from aworld_gui.rendering.i18n import localize
from engines.runs.rundir import RunDir
from engines.runs.sample_groups import logged_group_steps, step_groups, summary_of
from testing.group_samples import write_group_samples


def groups_html(*args, **kwargs) -> str:
    return localize(raw_html(*args, **kwargs), "en")  # the page's text (markers translated, as Gradio does)


def recorded(tmp_path):
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    run.append_sample({"step": 1, "prompt": "an old row without a group", "reward": 1.0})
    write_group_samples(run)
    return run.file("samples.jsonl")


def test_a_steps_groups_render_side_by_side_with_terms_total_and_advantage(tmp_path):
    path = recorded(tmp_path)
    assert logged_group_steps(path) == [1, 2]
    groups = step_groups(path, 1)
    assert [len(g) for g in groups] == [4, 4] and [g[0]["group"] for g in groups] == [0, 1]
    summary, from_engine = summary_of(groups)
    assert from_engine and (summary["groups"], summary["zero_spread"]) == (3, 2)
    html = groups_html(1, groups, summary, from_engine, zero_only=False)
    assert re.search(r'data-testid="zero-share">67%<', html)  # 2 of the step's 3 groups, not of the 2 written
    assert html.count('data-testid="group"') == 2 and html.count('data-testid="group-row"') == 8
    assert "<th>letter_reward</th><th>short</th>" in html
    assert html.count('data-zero-spread="true"') == 1
    first = html.split('data-testid="group-row"')[
        1
    ]  # group 0, completion "A": terms 0, 0.5 (weight 0.5); total 0.25; advantage 0
    assert [c for c in re.findall(r"<td[^>]*>(?:<b>)?([^<]*)", first)[:5]] == ["A", "0.000", "0.500", "0.250", "0.000"]
    assert 'data-testid="groups-histogram"' in html and html.count("<rect") == 10


def test_the_zero_spread_filter_keeps_only_groups_without_spread(tmp_path):
    path = recorded(tmp_path)
    groups = step_groups(path, 1)
    summary, from_engine = summary_of(groups)
    html = groups_html(1, groups, summary, from_engine, zero_only=True)
    assert (
        html.count('data-testid="group"') == 1 and 'data-group="0"' in html and 'data-zero-spread="false"' not in html
    )
    groups2 = step_groups(path, 2)
    html2 = groups_html(2, groups2, *summary_of(groups2), zero_only=True)
    assert 'data-testid="group"' not in html2 and "No logged group of this step has zero spread." in html2


def test_without_the_engines_step_totals_the_share_is_of_the_groups_logged_and_missing_advantages_are_said():
    rows = [
        [{"group": 0, "reward": 1.0, "rewards": {"r": 1.0}}, {"group": 0, "reward": 1.0, "rewards": {"r": 1.0}}],
        [{"group": 1, "reward": 0.0, "rewards": {"r": 0.0}}, {"group": 1, "reward": 1.0, "rewards": {"r": 1.0}}],
    ]
    summary, from_engine = summary_of(rows)
    assert not from_engine and (summary["groups"], summary["zero_spread"]) == (2, 1)
    html = groups_html(3, rows, summary, from_engine, zero_only=False)
    assert "50%" in html and "the engine wrote no step totals" in html and "verl dumps none" in html
    assert histogram_svg([]) == "" and histogram_svg([0.5, 0.5]).count("<rect") == 1
