"""The Monitor's "GRPO groups" section: pick a logged step, see its prompt groups side by side
(:mod:`..rendering.groups_view`), optionally only those with zero spread.

It reads samples.jsonl only on a user action (a run or step picked, the filter toggled, Refresh) — never in
the Monitor's live stream — and parses only the lines that hold a group, so a watching page costs the run
nothing more."""

from __future__ import annotations

from typing import Any

import gradio as gr

from engines.runs.rundir import SAMPLES_FILE
from engines.runs.sample_groups import logged_groups, step_groups, summary_of

from ..core.studio import Studio
from ..rendering.groups_view import groups_html
from ..rendering.i18n import _

EMPTY = _(
    "No run picked, or it logged no prompt groups yet (GRPO runs log them each step; samples_per_step: 0 logs none)."
)


class GroupsPanel:
    def __init__(self, studio: Studio):
        self.studio = studio
        self.step: Any = None
        self.zero_only: Any = None
        self.refresh: Any = None
        self.view: Any = None

    def build(self) -> None:
        with gr.Accordion(_("GRPO groups of a step"), open=False, elem_id="groups-panel"):
            with gr.Row(equal_height=True):
                self.step = gr.Dropdown(
                    [], value=None, label=_("Logged step"), scale=3, elem_id="groups-step", allow_custom_value=True
                )
                self.zero_only = gr.Checkbox(False, label=_("Zero-spread groups only"), scale=2, elem_id="groups-zero")
                self.refresh = gr.Button(
                    _("Refresh steps"), scale=1, min_width=120, size="md", elem_id="groups-refresh"
                )
            self.view = gr.HTML(f'<div class="aw-muted">{EMPTY}</div>', elem_id="groups-view")

    def wire(self, run: Any) -> None:
        common = dict(show_progress="hidden", api_visibility="private")
        steps = dict(fn=self.steps, inputs=[run, self.zero_only], outputs=[self.step, self.view], **common)
        run.change(**steps)
        self.refresh.click(**steps)
        view = dict(fn=self.show, inputs=[run, self.step, self.zero_only], outputs=[self.view], **common)
        self.step.input(**view)
        self.zero_only.change(**view)

    def _path(self, run_id: str | None):
        if not run_id:
            return None
        try:
            return self.studio.state(run_id).run.file(SAMPLES_FILE)
        except ValueError:
            return None

    def steps(self, run_id: str | None, zero_only: bool):
        """The run's logged steps with groups, the latest picked and shown (one read of samples.jsonl)."""
        path = self._path(run_id)
        found, groups = logged_groups(path) if path is not None else ([], [])
        if not found:
            return gr.update(choices=[], value=None), f'<div class="aw-muted">{EMPTY}</div>'
        return gr.update(choices=found, value=found[-1]), self._html(found[-1], groups, zero_only)

    def show(self, run_id: str | None, step: Any, zero_only: bool) -> str:
        path = self._path(run_id)
        try:
            step = int(step)
        except (TypeError, ValueError):
            return f'<div class="aw-muted">{EMPTY}</div>'
        return self._html(step, step_groups(path, step) if path is not None else [], zero_only)

    @staticmethod
    def _html(step: int, groups: list[list[dict]], zero_only: bool) -> str:
        summary, from_engine = summary_of(groups)
        return groups_html(step, groups, summary, from_engine, bool(zero_only))
