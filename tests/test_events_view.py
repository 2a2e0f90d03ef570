"""The Monitor's events table: an event's numbers are formatted as everywhere else on the page (issue 42, item 8:
a best checkpoint's ``value=0.30000000000000004`` was shown whole); its texts and whole numbers as written."""

from __future__ import annotations

from aworld_gui.rendering.render import events_html


def test_an_events_numbers_are_formatted_and_its_texts_kept():
    html = events_html(
        [
            {
                "time": 0,
                "event": "best_checkpoint",
                "name": "checkpoint-20",
                "step": 20,
                "metric": "eval/reward",
                "value": 0.1 + 0.2,
            }
        ]
    )
    assert "value=0.3000" in html and "0.30000000000000004" not in html
    assert "name=checkpoint-20" in html and "step=20" in html and "metric=eval/reward" in html
    assert "value=1.00e-05" in events_html([{"time": 0, "event": "warning", "value": 0.00001}])


def test_launchs_answer_names_the_run_before_what_became_of_it():
    """ "queued — it starts when the running job ends 20261128-…" read as if the id were the running job's."""
    from aworld_gui.rendering.i18n import localize
    from aworld_gui.rendering.render import launch_note

    text = localize(launch_note("20261128-134820-trl-walk-d-c2fb", queued=True), "en")
    assert text.index("20261128-134820-trl-walk-d-c2fb") < text.index("queued — it starts when the running job ends")
    zh = localize(launch_note("20261128-134820-trl-walk-d-c2fb", queued=True), "zh")
    assert zh.index("20261128-134820-trl-walk-d-c2fb") < zh.index("已排队 — 当前任务结束后自动开始")
