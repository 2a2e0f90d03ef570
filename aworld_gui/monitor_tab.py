"""Monitor: progress, loss and reward curves (plus any logged metric), the log tail, the latest
trajectories, Stop.

How it stays live without loading the browser (which may share the training machine):

* the progress header polls: a few lines of JavaScript in the header (``js_on_load``) call the
  Python function :meth:`MonitorTab.live` every ``POLL_S`` through Gradio's ``server_functions``
  (a plain request, outside Gradio's event queue). It returns the new header only when something
  changed, plus a key of everything else;
* when that key changes (new metrics, trajectories, log lines, events), the header fires its
  ``apply`` event — at most every ``SLOW_S`` — and :meth:`MonitorTab.slow_tick` sends the curves and
  the rest, each only when it changed (``gr.skip()`` for the others);
* polling pauses while the Monitor tab is hidden or the browser tab is in the background; a closed
  page costs nothing. Every read is of new bytes only, through the shared run cache.

Measured on these 2-core machines: a ``gr.Timer`` tick costs ~80 ms of Chromium CPU per event (its
loading states and input snapshots scale with the whole app) and a chart redraw ~60 ms; a header
poll costs a fraction of that. (A streaming generator would avoid the per-event cost too, but
Gradio sends a generator's outputs as in-place diffs against the previous chunk, which breaks
``gr.skip()`` for the charts.)
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import gradio as gr

from . import render
from .monitor import LOSS_KEYS, REWARD_KEYS, RunState, first_present, plot_payload
from .studio import Studio

POLL_S = 0.4        # the progress header (step, metrics, ETA): the "metric visible within a second" path
SLOW_S = 1000.0        # curves (a redraw costs the browser ~60 ms of CPU), trajectories, log, events, buttons

# Runs in the header element (``js_on_load``): ``element``, ``props``, ``server`` and ``trigger`` are
# Gradio's. The run to watch is the one the header shows (its data-run attribute).
LIVE_JS = """
const POLL_MS = %(poll)d, SLOW_MS = %(slow)d;
let key = null, skey = null, lastSlow = 0;
async function poll() {
  try {
    if (!document.hidden && element.offsetParent !== null) {
      const head = element.querySelector('[data-run]');
      const run = head ? head.dataset.run : null;
      if (run) {
        const r = await server.live(run, key);
        if (r) {
          if (r.html) { props.value = r.html; }
          key = r.key;
          const now = Date.now();
          if (r.skey !== skey && now - lastSlow >= SLOW_MS) { skey = r.skey; lastSlow = now; trigger('apply'); }
        }
      }
    }
  } catch (e) { /* the studio restarting: try again */ }
  setTimeout(poll, POLL_MS);
}
poll();
""" % {"poll": int(POLL_S * 1000), "slow": int(SLOW_S * 1000)}
EVAL_REWARD_KEYS = {"eval/reward": "eval", "eval_train/reward": "eval (train set)"}
PLOT_H = 300
REWARD_COLORS = {"train": "#4f46e5", "train (raw)": "#c7d2fe", "eval": "#f59e0b", "eval (train set)": "#f59e0b"}
LOSS_COLORS = {"loss": "#e11d48", "loss (raw)": "#fecdd3"}


@dataclass
class MonitorUI:
    run: Any = None
    header: Any = None
    stop_btn: Any = None
    kill_btn: Any = None
    reward_plot: Any = None
    loss_plot: Any = None
    picker: Any = None
    smoothing: Any = None
    custom_plot: Any = None
    samples: Any = None
    log: Any = None
    events: Any = None
    view: Any = None         # gr.State: what this browser tab last received (header)
    slow_view: Any = None    # gr.State: … (the rest)


class MonitorTab:
    def __init__(self, studio: Studio):
        self.studio = studio

    def build(self) -> MonitorUI:
        ui = MonitorUI()
        with gr.Row(equal_height=False, elem_classes="aw-runbar"):
            ui.run = gr.Dropdown([], value=None, label="Run", scale=6, elem_id="monitor-run", allow_custom_value=True)
            ui.stop_btn = gr.Button("Stop", variant="stop", scale=1, min_width=110, visible=False, size="md",
                                    elem_id="stop-btn")
            ui.kill_btn = gr.Button("Kill now", variant="secondary", scale=1, min_width=110, visible=False, size="md",
                                    elem_id="kill-btn")
        def live(args: list) -> dict:  # a plain function: Gradio marks server functions with an attribute
            return self.live(args)

        ui.header = gr.HTML(render.no_run(), elem_id="run-header", js_on_load=LIVE_JS, server_functions=[live])
        with gr.Row(equal_height=True):
            # no legends (they do not fit under a chart this high): the labels name the colours
            ui.reward_plot = gr.LinePlot(x="step", y="value", color="series", height=PLOT_H, x_title="step",
                                         y_title="reward", color_map=REWARD_COLORS, colors_in_legend=[],
                                         elem_id="reward-plot",
                                         label="Reward — dark: smoothed · light: raw · amber: eval on the test set")
            ui.loss_plot = gr.LinePlot(x="step", y="value", color="series", height=PLOT_H, x_title="step",
                                       y_title="loss", color_map=LOSS_COLORS, colors_in_legend=[],
                                       elem_id="loss-plot", label="Loss — dark: smoothed · light: raw")
        with gr.Row(equal_height=True):
            ui.picker = gr.Dropdown([], value=[], multiselect=True, label="More metrics", scale=4,
                                    info="any key the run logs (eval, KL, learning rate, per-reward terms, …)",
                                    elem_id="metric-picker")
            ui.smoothing = gr.Slider(0.0, 0.99, value=0.6, step=0.01, label="Smoothing", scale=2,
                                     info="exponential moving average, as in TensorBoard", elem_id="smoothing")
        ui.custom_plot = gr.LinePlot(x="step", y="value", color="series", height=PLOT_H, x_title="step",
                                     y_title="value", visible=False, elem_id="custom-plot", label="Metrics")
        with gr.Row(equal_height=False):
            with gr.Column(scale=6):
                gr.HTML('<div class="aw-section-title">Latest trajectories</div>')
                ui.samples = gr.HTML(render.samples_html([]), elem_id="samples")
            with gr.Column(scale=6):
                gr.HTML('<div class="aw-section-title">Log</div>')
                ui.log = gr.Textbox("", lines=16, max_lines=16, show_label=False, interactive=False, autoscroll=True,
                                    elem_classes="aw-log", elem_id="log-tail")
                ui.events = gr.HTML("", elem_id="events")
        ui.view = gr.State({})
        ui.slow_view = gr.State({})
        self.ui = ui
        return ui

    def outputs(self) -> list:
        ui = self.ui
        return [ui.header, ui.reward_plot, ui.loss_plot, ui.custom_plot, ui.picker, ui.samples, ui.log, ui.events,
                ui.stop_btn, ui.kill_btn]

    def wire(self) -> None:
        """A new run renders at once; then the header's poll drives the updates (see the module doc)."""
        ui = self.ui
        common = dict(show_progress="hidden", api_visibility="private", concurrency_limit=None,
                      trigger_mode="always_last")
        fast = dict(fn=self.tick, inputs=[ui.run, ui.view], outputs=[ui.header, ui.view], **common)
        slow = dict(fn=self.slow_tick, inputs=[ui.run, ui.picker, ui.smoothing, ui.slow_view],
                    outputs=[*self.outputs()[1:], ui.slow_view], **common)
        ui.header.apply(**slow)
        ui.run.change(**fast).then(**slow)
        ui.picker.change(**slow)
        ui.smoothing.release(**slow)
        ui.stop_btn.click(self.on_stop, [ui.run], [ui.stop_btn], api_visibility="private"
                          ).then(**fast).then(**slow)
        ui.kill_btn.click(self.on_kill, [ui.run], [ui.kill_btn], api_visibility="private"
                          ).then(**fast).then(**slow)

    def _state(self, run_id: str | None) -> RunState | str | None:
        if not run_id:
            return None
        try:
            return self.studio.state(run_id)
        except ValueError as e:
            return str(e)

    # -- live updates ---------------------------------------------------------------------------
    def live(self, args: list) -> dict:
        """Called by the header's JavaScript every POLL_S with ``[run_id, key]``: the new header HTML
        when its key changed (else None), its key, and the key of the slow parts."""
        run_id, key = (list(args or []) + [None, None])[:2]
        st = self._state(run_id)
        if not isinstance(st, RunState):
            return {"key": "none", "html": None, "skey": None}
        st.refresh()
        stop = st.run.stop_requested()
        new_key = f"{run_id}|{st.status_version}|{st.metrics_version}|{stop}|{int(time.time()) if st.active else 0}"
        skey = f"{st.metrics_version}|{st.samples_version}|{st.log_version}|{len(st.events)}|{st.state}|{stop}"
        return {"key": new_key, "html": self.header_html(run_id, st) if new_key != key else None, "skey": skey}

    def tick(self, run_id: str | None, view: dict):
        """The header now (a run was picked or a button pressed); then :meth:`live` keeps it fresh."""
        view = dict(view or {})
        st = self._state(run_id)
        if not isinstance(st, RunState):
            key = ("none", st)
            if view.get("key") == key:
                return gr.skip(), view
            header = render.no_run() if st is None else \
                f'<div class="aw-run"><div class="aw-msg aw-msg-error">{render.esc(st)}</div></div>'
            return header, {"key": key}
        st.refresh()
        key = (run_id, st.status_version, st.metrics_version, st.run.stop_requested(),
               int(time.time()) if st.active else 0)
        if view.get("key") == key:
            return gr.skip(), view
        return self.header_html(run_id, st), {"key": key}

    def slow_tick(self, run_id: str | None, picks: list[str] | None, smoothing: float, view: dict):
        """Curves, metric names, trajectories, log, events, Stop/Kill — what changed."""
        view = dict(view or {})
        if view.get("run") != run_id:
            view = {"run": run_id}
        return [*self.slow_parts(run_id, picks, smoothing, view), view]

    def update(self, run_id, picks, smoothing, view: dict) -> list:
        """Everything at once (header + the slow parts): one refresh with every part due."""
        header, hview = self.tick(run_id, view.get("header"))
        view["header"] = hview
        return [header, *self.slow_parts(run_id, picks, smoothing, view)]

    def slow_parts(self, run_id, picks, smoothing, view: dict) -> list:
        """The curves and the rest (``gr.skip()`` where unchanged); ``view`` remembers what was sent."""
        skip = gr.skip()
        out: list[Any] = [skip] * 9
        st = self._state(run_id)
        if not isinstance(st, RunState):
            if view.get("none"):
                return out
            view["none"] = True
            return [None, None, gr.update(visible=False), gr.update(choices=[], value=[]), render.samples_html([]),
                    "", "", gr.update(visible=False), gr.update(visible=False)]
        view.pop("none", None)
        st.refresh()
        picks = [p for p in (picks or []) if p]
        smoothing = round(float(smoothing or 0.0), 3)
        pkey = (st.metrics_version, smoothing, tuple(picks))
        if view.get("p") != pkey:
            view["p"] = pkey
            out[0:2] = self.plots(st, smoothing)
            custom = plot_payload({k: st.series.get(k) for k in picks}, smoothing) if picks else None
            if view.get("cv") != bool(picks):
                view["cv"] = bool(picks)
                custom = gr.update(value=custom, visible=bool(picks))
            out[2] = custom
        skey = (len(st.series), st.samples_version, st.log_version, len(st.events), st.state,
                st.run.stop_requested())
        old = view.get("s") or (None,) * 6
        view["s"] = skey
        if old[0] != skey[0]:
            out[3] = gr.update(choices=st.metric_names())
        if old[1] != skey[1]:
            out[4] = render.samples_html(list(st.samples))
        if old[2] != skey[2]:
            out[5] = st.log_text()
        if old[3] != skey[3]:
            out[6] = render.events_html(st.events)
        if old[4:] != skey[4:]:
            stopping = st.state == "stopping" or (st.active and st.run.stop_requested())
            out[7] = gr.update(visible=st.active and not stopping, interactive=True, value="Stop")
            out[8] = gr.update(visible=stopping, interactive=True)
        return out

    def header_html(self, run_id: str, st: RunState) -> str:
        note = ""
        if st.state == "queued":
            note = ("Queued: waiting for the machine's training slot (another run is training). It starts "
                    "by itself when that run ends — closing this page does not affect it.")
        elif st.run.stop_requested() and st.active:
            note = (f"Stop requested: the run stops at its next step boundary and saves a checkpoint; "
                    f"it is killed if it has not stopped {self.studio.stop_timeout_s:.0f} s after the request.")
        reward = st.series.get(first_present(st, REWARD_KEYS) or "")
        return render.run_header(run_id, st.progress(), st.latest, st.read_spec() or {}, st.status, st.failure(),
                                 st.run.stop_requested(), note, reward.count if reward else 0)

    def plots(self, st: RunState, smoothing: float) -> list:
        reward_key, loss_key = first_present(st, REWARD_KEYS), first_present(st, LOSS_KEYS)
        reward_series = {"train": st.series.get(reward_key) if reward_key else None}
        reward_series.update({label: st.series.get(k) for k, label in EVAL_REWARD_KEYS.items() if k in st.series})
        return [plot_payload(reward_series, smoothing, raw_for=["train"]),
                plot_payload({"loss": st.series.get(loss_key) if loss_key else None}, smoothing, raw_for=["loss"])]

    # -- buttons ---------------------------------------------------------------------------------
    def on_stop(self, run_id):
        if run_id:
            self.studio.stop(run_id)
        return gr.update(interactive=False, value="Stopping…")

    def on_kill(self, run_id):
        if run_id:
            self.studio.stop(run_id, kill=True)
        return gr.update(interactive=False)
