"""Monitor: progress, loss and reward curves (plus any logged metric), the log tail, the latest
trajectories, Stop.

How it stays live without loading the browser (which may share the training machine):

* The run header's script (``js_on_load``) asks for a stream ticket (a server function, so it
  passes Gradio's login) and opens one Server-Sent-Events stream (:mod:`aworld_gui.core.live_stream`).
  The stream's loop refreshes the run from the new bytes of its files (the shared run cache) every
  ``POLL_S`` and pushes only the parts whose key changed: the header and the events at once; the
  log tail at most every ``LOG_S``, the curves every ``CHART_S``, the trajectories every
  ``SAMPLES_S`` (a changed part that is not due yet is owed, never dropped). A run that changes nothing sends nothing. Every
  part is patched in place (only the nodes and attributes that changed; the log tail appends its
  new lines and drops the ones that left it), not re-rendered.
* Curves are inline SVG (:mod:`aworld_gui.rendering.charts`), a few hundred points each.
* Gradio events happen only on user actions (run, metrics, smoothing, Stop) and when the run's state
  changes (the header fires ``apply`` to refresh the Stop/Kill buttons: their one writer).
* The stream is closed while the Monitor tab or the browser tab is hidden; a closed page costs nothing.

Why each part has its own pace, with the measurements behind it: docs/STUDIO.md ("Live updates").
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
from markupsafe import Markup

from engines.runs.rundir import EVAL_REWARD, EVAL_TRAIN_REWARD, LOSS, QUEUED, REWARD

from ..rendering import engine_text, glossary, render
from ..rendering.i18n import Markdown, _, localize
from ..rendering.charts import PALETTE, Line, svg_chart
from ..rendering.templates import macro
from .groups_panel import GroupsPanel
from .diagnoses_panel import CLONE_ELEM, SETTING_ELEM, diagnoses_html
from ..core.queue_note import queue_note
from ..core.live_stream import HEAVY as HEAVY_PARTS, LiveStreams
from ..core.run_cache import RunState, Series
from ..core.studio import Studio

POLL_S = 0.8  # how often a watching page's stream reads the run (header: step, metrics, ETA)
CHART_S = 4.8  # curves: at most this often (every sixth poll; the header shows the latest values meanwhile)
LOG_S = 2.4  # log tail: at most this often (every third poll)
SAMPLES_S = 8.0  # trajectories: at most this often (readable while they change; each swap is a big one)
EVAL_REWARD_KEYS = {EVAL_REWARD: _("eval"), EVAL_TRAIN_REWARD: _("eval (train set)")}
REWARD_COLOR, RAW_ALPHA, EVAL_COLOR, LOSS_COLOR = "#4f46e5", 0.28, "#d97706", "#e11d48"

#: the page's side of the live view (a static file; see its header comment)
LIVE_JS = (Path(__file__).parents[1] / "static" / "live_monitor.js").read_text(encoding="utf-8")


@dataclass
class MonitorUI:
    run: Any = None
    header: Any = None
    stop_btn: Any = None
    resume_btn: Any = None
    kill_btn: Any = None
    charts: Any = None
    picker: Any = None
    smoothing: Any = None
    custom: Any = None
    samples: Any = None
    log: Any = None
    events: Any = None
    clone_btn: Any = None  # hidden: a diagnosis's "Clone into Setup" presses it (diagnoses_panel.py)
    clone_setting: Any = None  # hidden: the setting that diagnosis names


def _placeholder(dom_id: str, inner: str = "", cls: str = "") -> str:
    return f'<div id="{dom_id}" class="{cls}">{inner}</div>'


class MonitorTab:
    def __init__(self, studio: Studio):
        self.studio = studio
        self.groups = GroupsPanel(studio)  # a step's GRPO groups: read on user actions, never streamed
        self.streams = LiveStreams(self.live, POLL_S, {"charts": CHART_S, "log": LOG_S, "samples": SAMPLES_S})

    def build(self) -> MonitorUI:
        ui = MonitorUI()
        with gr.Row(equal_height=False, elem_classes="aw-runbar"):
            ui.run = gr.Dropdown(
                [], value=None, label=_("Run"), scale=6, elem_id="monitor-run", allow_custom_value=True
            )
            ui.stop_btn = gr.Button(
                _("Stop"), variant="stop", scale=1, min_width=110, visible=False, size="md", elem_id="stop-btn"
            )
            ui.kill_btn = gr.Button(
                _("Kill now"), variant="secondary", scale=1, min_width=110, visible=False, size="md", elem_id="kill-btn"
            )
            ui.resume_btn = gr.Button(
                _("Resume"), variant="primary", scale=1, min_width=110, visible=False, size="md", elem_id="resume-btn"
            )

        def live_ticket(args: list) -> str:  # a plain function: Gradio marks server functions with an attribute
            return self.streams.ticket(*(list(args or []) + [None] * 5)[:5])

        ui.header = gr.HTML(render.no_run(), elem_id="run-header", js_on_load=LIVE_JS, server_functions=[live_ticket])
        ui.clone_btn = gr.Button(_("Clone into Setup"), elem_id=CLONE_ELEM, visible="hidden")
        ui.clone_setting = gr.Textbox("", elem_id=SETTING_ELEM, visible="hidden", show_label=False, container=False)
        ui.charts = gr.HTML(
            '<div class="aw-charts">'
            + _placeholder(
                "aw-chart-reward-box",
                f'<div class="aw-chart-title">{_("Reward")}</div>' + _placeholder("aw-chart-reward"),
                "aw-chart-box",
            )
            + _placeholder(
                "aw-chart-loss-box",
                f'<div class="aw-chart-title">{_("Loss")}</div>' + _placeholder("aw-chart-loss"),
                "aw-chart-box",
            )
            + "</div>",
            elem_id="charts",
        )
        with gr.Row(equal_height=True):
            ui.picker = gr.Dropdown(
                [],
                value=[],
                multiselect=True,
                label=_("More metrics"),
                scale=4,
                info=_("any key the run logs (eval, KL, learning rate, per-reward terms, …)"),
                elem_id="metric-picker",
            )
            ui.smoothing = gr.Slider(
                0.0,
                0.99,
                value=0.6,
                step=0.01,
                label=_("Smoothing"),
                scale=2,
                info=_("exponential moving average, as in TensorBoard"),
                elem_id="smoothing",
            )
        ui.custom = gr.HTML(_placeholder("aw-chart-custom"), elem_id="custom-chart")
        with gr.Accordion(_("What the curves and metrics mean"), open=False, elem_id="glossary-monitor"):
            Markdown(glossary.as_markdown(glossary.METRIC_TERMS, keys=True), elem_classes="aw-muted")
        with gr.Row(equal_height=False):
            with gr.Column(scale=6):
                gr.HTML(f'<div class="aw-section-title">{_("Latest trajectories")}</div>')
                ui.samples = gr.HTML(_placeholder("aw-samples", render.samples_html([])), elem_id="samples")
            with gr.Column(scale=6):
                gr.HTML(f'<div class="aw-section-title">{_("Log")}</div>')
                ui.log = gr.HTML('<pre id="aw-log" class="aw-logtail"></pre>', elem_id="log-tail")
                ui.events = gr.HTML(_placeholder("aw-events"), elem_id="events")
        self.groups.build()
        self.ui = ui
        return ui

    def wire(self) -> None:
        """The header has one writer per view: picking another run, metrics or smoothing renders a new
        view's header (``show``, a new ``gen``: the page script starts a new stream, which pulls everything
        and drops the old stream's messages); every later header of that view comes from its stream alone.
        Stop and Kill therefore render no header — the stream says "Stop requested" at its next read. (They
        did: a Stop's header read before the run moved on could land after the stream had shown the newer
        state, and the page showed stopping → running → stopped; issue 32 §2.)

        The Stop and Kill buttons have one writer too: ``buttons``, fired only by the header's ``apply`` — the
        stream's message that the run's state changed, and a new stream's first message (a new view, another
        run), or the page dropping a run (static/live_monitor.js) — and with ``trigger_mode="always_last"``: the
        page has one such call in flight, and a change while it runs is answered after it, so the answers land
        in order and the last reads the state after the last change. (The Stop and Kill clicks and the pick of a
        run each chained their own ``buttons``, and the clicks set the buttons too: answered late and out of
        order they showed Kill on a stopped run or Stop back on a stopping one; and with Gradio's default
        ``once`` an ``apply`` fired while one was in flight was dropped.) A click's feedback is the page's:
        the pressed button is marked pending at once (dimmed, "Stopping…") until the view changes."""
        ui = self.ui
        common = dict(show_progress="hidden", api_visibility="private", concurrency_limit=None)
        show = dict(fn=self.show, inputs=[ui.run, ui.picker, ui.smoothing], outputs=[ui.header], **common)
        ui.run.change(**show)
        ui.picker.change(**show)
        ui.smoothing.release(**show)
        ui.header.apply(
            self.buttons,
            [ui.run],
            [ui.stop_btn, ui.kill_btn, ui.resume_btn, ui.picker],
            trigger_mode="always_last",
            **common,
        )
        self.groups.wire(ui.run)
        ui.stop_btn.click(self.on_stop, [ui.run], None, api_visibility="private")
        ui.kill_btn.click(self.on_kill, [ui.run], None, api_visibility="private")
        ui.resume_btn.click(self.on_resume, [ui.run], None, api_visibility="private")

    def _state(self, run_id: str | None) -> RunState | str | None:
        if not run_id:
            return None
        try:
            return self.studio.state(run_id)
        except ValueError as e:
            return str(e)

    # -- events ---------------------------------------------------------------------------------
    def show(self, run_id: str | None, picks: list[str] | None, smoothing: float) -> str:
        """The header for a newly picked run / metrics / smoothing, with a new ``gen``."""
        st = self._state(run_id)
        if st is None:
            return render.no_run()
        if not isinstance(st, RunState):
            return macro("tabs/monitor.html", "failed")(st)
        st.refresh()
        return self.header_html(run_id, st, secrets.token_hex(4), picks or [], float(smoothing or 0.0))

    def buttons(self, run_id: str | None):
        """Stop while active, Kill once stopping, Resume once it ended before its end with a checkpoint (on an engine that resumes);
        the metric names for the picker. The buttons' one writer."""
        st = self._state(run_id)
        if not isinstance(st, RunState):
            return gr.update(visible=False), gr.update(visible=False), gr.update(visible=False), gr.update(choices=[])
        st.refresh(force=True)  # the state now, not the last stream tick's (a stop may just have ended)
        stopping = st.state == "stopping" or (st.active and st.run.stop_requested())
        resumable = not st.active and self.studio.resumable(run_id)
        return (
            gr.update(visible=st.active and not stopping),
            gr.update(visible=stopping),
            gr.update(visible=resumable),
            gr.update(choices=st.metric_names()),
        )

    def on_stop(self, run_id) -> None:
        """Asks the run to stop; the stream shows it, and its ``apply`` swaps Stop for Kill."""
        if run_id:
            self.studio.stop(run_id)

    def on_kill(self, run_id) -> None:
        if run_id:
            self.studio.stop(run_id, kill=True)

    def on_resume(self, run_id) -> None:
        """Resumes the run from its latest checkpoint; the stream shows it queued, then training (an event marks
        the resume). Why it cannot, in a notice."""
        if not run_id:
            return
        try:
            res = self.studio.resume(run_id)
        except ValueError as e:
            res = {"ok": False, "error": str(e)}
        if not res.get("ok"):
            gr.Warning(f"{_('Not resumed:')} {engine_text.message(res.get('error'))}")

    # -- the page's poll --------------------------------------------------------------------------
    def live(self, run_id, gen, picks, smoothing, keys, due=HEAVY_PARTS, locale: str = "en") -> dict:
        """:meth:`changes`, its HTML translated for the page's ``locale`` (the stream bypasses Gradio's i18n)."""
        out = self.changes(run_id, gen, picks, smoothing, keys, due)
        for part in ("header", "samples", "events"):
            out[part] = localize(out.get(part), locale)
        if out.get("charts"):
            out["charts"] = {k: localize(v, locale) for k, v in out["charts"].items()}
        return out

    def changes(self, run_id, gen, picks, smoothing, keys, due=HEAVY_PARTS) -> dict:
        """What changed since ``keys`` (the keys of what the page shows): the header, the events,
        and those of the heavy parts (``charts``, ``samples``, ``log``) that are ``due`` — None for
        the rest — and the new keys (a changed part that is not due stays owed)."""
        keys = dict(keys or {})
        picks = [str(p) for p in (picks or []) if p]
        smoothing = float(smoothing or 0.0)
        st = self._state(run_id)
        if not isinstance(st, RunState):  # e.g. deleted meanwhile: say so once (the page then clears)
            gone = keys.get("h") == "gone"
            header = None if gone else self.show(run_id, picks, smoothing)
            return {
                "keys": {"h": "gone"},
                "header": header,
                "charts": None,
                "samples": None,
                "log": None,
                "events": None,
            }
        st.refresh()
        stop = st.run.stop_requested()
        new = {
            "h": f"{st.status_version}|{st.metrics_version}|{stop}|{int(time.time()) if st.active else 0}",
            "m": f"{st.metrics_version}|{smoothing}|{','.join(picks)}|{st.active}",
            "s": st.samples_version,
            "l": st.log_version,
            "e": len(st.events),
            "b": f"{st.state}|{stop}|{len(st.series)}",
            "c": bool(st.series),
        }
        out: dict[str, Any] = {"header": None, "charts": None, "samples": None, "log": None, "events": None}
        # owed parts go at once (not at their pace) when the run has ended — its final state is
        # delivered whole — and the first curves go as soon as there are any
        due = (
            set(HEAVY_PARTS) if not st.active else set(due) | ({"charts"} if new["c"] and not keys.get("c") else set())
        )
        heavy = {
            "m": ("charts", lambda: self.charts(st, picks, smoothing)),
            "s": ("samples", lambda: render.samples_html(list(st.samples))),
            "l": ("log", st.log_text),
        }
        for key, (part, build) in heavy.items():
            if new[key] != keys.get(key):
                if part in due:
                    out[part] = build()
                else:
                    new[key] = keys.get(key)
        if not out["charts"]:
            new["c"] = keys.get("c")
        # the header and the curves of one message come from the same read (their numbers agree)
        if new["h"] != keys.get("h") or out["charts"] is not None:
            out["header"] = self.header_html(run_id, st, gen, picks, smoothing)
        if new["e"] != keys.get("e"):
            out["events"] = render.events_html(st.events)
        out["keys"] = new
        return out

    def header_html(self, run_id: str, st: RunState, gen: str, picks: list[str], smoothing: float) -> str:
        note = ""
        if st.state == QUEUED:
            note = queue_note(st.status) or (
                f"{_('Queued')}. {_('It starts by itself when its turn comes — closing this page does not affect it.')}"
            )
        elif st.run.stop_requested() and st.active:
            note = (
                f"{_('Stop requested: the run stops at its next step boundary and saves a checkpoint.')} "
                f"{_('If it has not stopped within')} {self.studio.stop_timeout_s:.0f} "
                f"{_('seconds of the request, it is killed.')}"
            )
        reward = st.series.get(REWARD)
        attrs = {
            "gen": gen or "",
            "picks": json.dumps(picks),
            "smoothing": f"{smoothing:g}",
            "stopping": str(_("Stopping…")),  # a pressed Stop's label in the page (static/live_monitor.js)
        }
        return render.run_header(
            run_id,
            st.progress(),
            st.latest,
            st.read_spec() or {},
            st.status,
            st.failure(),
            st.run.stop_requested(),
            note,
            reward.count if reward else 0,
            attrs,
            run_label=st.run.read_label(),
            diagnoses=diagnoses_html(st.diagnoses.values()),
        )

    def charts(self, st: RunState, picks: list[str], smoothing: float) -> dict[str, str]:
        """The reward, loss and picked-metrics curves as SVG: smoothed dark, raw light (until a
        series is downsampled: then its buckets are averages already), eval points amber."""
        reward = self._lines(st.series.get(REWARD), _("train"), REWARD_COLOR, smoothing)
        for key, label in EVAL_REWARD_KEYS.items():
            s = st.series.get(key)
            if s is not None and s.xs:
                reward.append(Line(label, s.xs, s.ys, EVAL_COLOR, width=1.5, markers=len(s.xs) <= 60, latest=s.last_y))
        loss = self._lines(st.series.get(LOSS), _("loss"), LOSS_COLOR, smoothing)
        custom_lines: list[Line] = []
        for i, name in enumerate(picks):
            s = st.series.get(name)
            if s is not None and s.xs:
                xs, ys = s.points(smoothing)
                custom_lines.append(Line(name, xs, ys, PALETTE[i % len(PALETTE)], latest=s.last_y))
        custom = ""
        if picks:
            chart = svg_chart(custom_lines, _("value"), _("none of these metrics has values yet"), "custom", width=1320)
            custom = macro("tabs/monitor.html", "custom_chart")(", ".join(picks), Markup(chart))  # charts.py's SVG
        return {
            "reward": svg_chart(reward, _("reward"), chart_id="reward"),
            "loss": svg_chart(loss, _("loss"), chart_id="loss"),
            "custom": custom,
        }

    @staticmethod
    def _lines(s: Series | None, name: str, color: str, smoothing: float) -> list[Line]:
        """The curve as it is drawn, labelled for what its number is: without smoothing one line, its
        latest value; with smoothing the smoothed line (its own last value) beside the latest raw value
        (the same number as the header's), the raw points drawn faintly while there is one per step."""
        if s is None or not s.xs:
            return []
        if not smoothing:
            return [Line(f"{name} · {_('latest')}", s.xs, s.ys, color, latest=s.last_y)]
        xs, ys = s.points(smoothing)
        raw = Line(
            f"{name} · {_('latest')}",
            s.xs if s.width == 1 else [],
            s.ys if s.width == 1 else [],
            color,
            width=1.2,
            opacity=RAW_ALPHA,
            latest=s.last_y,
        )
        return [raw, Line(f"{name} · {_('smoothed')} {smoothing:g}", xs, ys, color, latest=ys[-1])]
