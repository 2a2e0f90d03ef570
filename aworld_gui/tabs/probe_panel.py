"""Setup's probe (issue 44): **Probe** beside Launch — enabled, as Launch is, by the check (setup_check_view.py writes
both from the check's ``ok``) — runs the probe of the page's setup in the check worker (core/probes.py) with its
progress and Cancel; the report below the launch bar and its verdict beside the checks, both derived from the setup
shown and the probes made (a stored one is shown again for the same inputs without sampling); **Keep prompts the
model solves sometimes** writes the filtered training set beside the uploads and selects it as the train set.

One writer per value: the press writes the progress and the probe's State (which setup it probed); the report and the
chip are derived from that State and the page's inputs (on the State's change and on every check shown); the filter
writes its message and the train set, whose change is checked as any pick is."""

from __future__ import annotations

import time
from typing import Any

import gradio as gr

from ..core import inputs as inp
from ..core.probes import DEFAULT_PROMPTS, fraction, setup_key, timeout_s
from ..rendering import probe_view
from ..rendering.i18n import Markdown, _
from .setup_inputs import SetupUI, collect

#: how often the page is told how the probe is going
TICK_S = 0.5


def _counts(prompts: Any, samples: Any) -> tuple[int, int | None]:
    try:
        n = max(1, int(prompts or DEFAULT_PROMPTS))
    except (TypeError, ValueError):
        n = DEFAULT_PROMPTS
    try:
        k = int(samples) if samples not in (None, "") and int(samples) > 0 else None
    except (TypeError, ValueError):
        k = None
    return n, k


class ProbePanel:
    def __init__(self, studio):
        self.studio = studio
        self.probes = studio.probes

    # -- layout ------------------------------------------------------------------------------------
    def build_button(self, ui: SetupUI) -> None:
        """Probe, beside Launch (in the launch bar's column)."""
        ui.probe_btn = gr.Button(_("Probe"), size="lg", interactive=False, elem_id="probe-btn")

    def build_chip(self, ui: SetupUI) -> None:
        """The probe's verdict, beside the checks' strip."""
        ui.probe_chip = gr.HTML(probe_view.chip(None), elem_id="probe-chip")

    def build(self) -> None:
        with gr.Column(elem_classes="aw-card", elem_id="probe-panel"):
            Markdown(
                f"**{_('Probe the base model')}** — "
                f"{_('samples training prompts through the engine, scores them with the reward and forecasts the run; it never blocks Launch.')}",
                elem_classes="aw-muted",
            )
            with gr.Row(equal_height=True, elem_classes="aw-runbar"):
                self.prompts = gr.Number(
                    DEFAULT_PROMPTS, precision=0, minimum=1, label=_("Prompts"), scale=1, elem_id="probe-prompts"
                )
                self.samples = gr.Number(
                    0,
                    precision=0,
                    minimum=0,
                    label=_("Samples per prompt (0: num_generations)"),
                    scale=2,
                    elem_id="probe-samples",
                )
                self.cancel = gr.Button(_("Cancel"), size="md", visible=False, scale=1, elem_id="probe-cancel")
            self.progress = gr.HTML("", elem_id="probe-progress")
            self.report = gr.HTML("", elem_id="probe-report")
            with gr.Row(equal_height=True, elem_classes="aw-runbar"):
                self.low = gr.Number(0.0, minimum=0, maximum=1, label=_("Keep: pass rate above"), elem_id="probe-low")
                self.high = gr.Number(1.0, minimum=0, maximum=1, label=_("and below"), elem_id="probe-high")
                self.filter = gr.Button(
                    _("Keep prompts the model solves sometimes"), size="md", scale=2, elem_id="probe-filter"
                )
            self.filtered = gr.HTML("", elem_id="probe-filtered")
        self.state = gr.State(None)  # which setup the last press probed (the reports are in self.probes)

    # -- wiring ------------------------------------------------------------------------------------
    def wire(self, ui: SetupUI, then_check) -> None:
        quiet = dict(api_visibility="private", show_progress="hidden")
        counts = [self.prompts, self.samples]
        ui.probe_btn.click(
            self.on_probe,
            [*ui.inputs(), *counts],
            [self.progress, self.cancel, self.state],
            concurrency_id="probes",
            concurrency_limit=4,
            **quiet,
        )
        self.cancel.click(self.on_cancel, [], [], **quiet)
        derive = dict(fn=self.derive, inputs=[*ui.inputs(), *counts, self.state], outputs=[self.report, ui.probe_chip])
        self.state.change(**derive, **quiet)
        ui.checked.change(**derive, **quiet)
        then_check(
            self.filter.click(
                self.on_filter,
                [*ui.inputs(), *counts, self.low, self.high],
                [self.filtered, ui.train],
                **quiet,
            )
        )

    # -- handlers ----------------------------------------------------------------------------------
    def on_probe(self, *args, request: gr.Request = None):
        """The probe of the page's setup: its progress while it runs (with Cancel), then the State that says which
        setup it probed (the report and the chip follow it)."""
        *inputs, prompts, samples = args
        si, (n, k) = collect(*inputs), _counts(prompts, samples)
        page = getattr(request, "session_hash", None)
        job = self.probes.start(si, page, n, k)
        limit = timeout_s()
        while not job.done.wait(TICK_S):
            yield (
                probe_view.progress(job.doing(), fraction(job.doing()), job.elapsed_s, limit),
                gr.update(visible=True),
                gr.skip(),
            )
        res = job.result
        if not res.get("ok"):
            shown = probe_view.failed(res.get("error") or "", cancelled=bool(res.get("cancelled")))
            yield shown, gr.update(visible=False), gr.skip()
            return
        said = {"setup": setup_key(si, n, k), "reused": bool(res.get("reused")), "at": time.time()}
        yield "", gr.update(visible=False), said

    def on_cancel(self, request: gr.Request = None) -> None:
        self.probes.cancel(getattr(request, "session_hash", None))

    def _report(self, inputs: list, prompts, samples, state: dict | None) -> tuple[dict | None, bool]:
        """The report made for the page's setup (this press's, or one made before for the same inputs)."""
        key = setup_key(collect(*inputs), *_counts(prompts, samples))
        report = self.probes.shown(key)
        if report is None:
            return None, False
        reused = bool(state["reused"]) if state and state.get("setup") == key else True
        return report, reused

    def derive(self, *args):
        *inputs, prompts, samples, state = args
        report, reused = self._report(inputs, prompts, samples, state)
        return probe_view.report_html(report, reused), probe_view.chip(report)

    def on_filter(self, *args):
        """The training rows inside the band written beside the uploads, and selected as the train set."""
        *inputs, prompts, samples, low, high = args
        report, _reused = self._report(inputs, prompts, samples, None)
        if report is None:
            return probe_view.filtered_html({"ok": False, "error": str(_("Probe this setup first."))}), gr.update()
        try:
            band = (float(low), float(high))
        except (TypeError, ValueError):
            band = (0.0, 1.0)
        res = self.probes.write_filtered(report, band)
        if not res.get("ok"):
            return probe_view.filtered_html(res), gr.update()
        path = res["path"]
        choices = inp.file_choices(inp.shipped_datasets(), [path])
        return probe_view.filtered_html(res), gr.update(choices=choices, value=path)
