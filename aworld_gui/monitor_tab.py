"""Monitor: progress, loss and reward curves (plus any logged metric), the log tail, the latest
trajectories, Stop.

How it stays live without loading the browser (which may share the training machine):

* The run header's script (``js_on_load``) asks for a stream ticket (a server function, so it
  passes Gradio's login) and opens one Server-Sent-Events stream (:mod:`aworld_gui.live_stream`).
  The stream's loop refreshes the run from the new bytes of its files (the shared run cache) every
  ``POLL_S`` and pushes only the parts whose key changed: the header and the events at once; the
  log tail at most every ``LOG_S``, the curves every ``CHART_S``, the trajectories every
  ``SAMPLES_S`` (a changed part that is not due yet is owed, never dropped). A run that changes nothing sends nothing. Every
  part is patched in place (only the nodes and attributes that changed; the log tail appends its
  new lines and drops the ones that left it), not re-rendered.
* Curves are inline SVG (:mod:`aworld_gui.charts`), a few hundred points each.
* Gradio events happen only on user actions (run, metrics, smoothing, Stop) and when the run's state
  changes (the header fires ``apply`` to refresh the Stop/Kill buttons).
* The stream is closed while the Monitor tab or the browser tab is hidden; a closed page costs nothing.

Measured on these 2-core machines (Chromium, software rendering): each Gradio event costs the page
~100 ms of CPU (its loading states and input snapshots scale with the whole app), a ``gr.LinePlot``
redraw ~60 ms more. Watching a run at 3 steps/s, a ``gr.Timer`` at 0.5 s with ``gr.LinePlot`` curves
kept Chromium at ~25-30 % of a core and the studio at ~10 %. A page polling the studio every 0.5 s
(a ``fetch`` each) cost Chromium ~5 % and the studio ~1.8 %; the stream: see
benchmarks/results/gui_overhead*.json. Even a bare page updating one number twice a second costs
headless Chromium ~2 % of a core here (~1.2 % of it the frame). A 2-thread training run on 2 cores
loses more steps/s than that CPU share (a wake-up that preempts one torch thread stalls its
partner), so the page wakes as seldom as its latency goal (p95 ≤ 1 s) allows. Chromium watching
the demo run, % of a core: header every 0.5 s alone 2.4, with curves, log and trajectories every
2 s 4.2-4.4; header every 0.8 s, curves and log every 2.4 s, trajectories every 8 s: 2.2 (trace:
per update ~6 ms of the page's main thread, ~4.6 ms of the display compositor, ~2 ms raster).
The curves are the dear part: with a fake run at 6 steps/s (no training beside it), Chromium used
1.3-1.7 % with the header alone, 1.2-1.5 % with the log tail too, 2.2-2.3 % with the curves too
(a curve message: ~7 ms of script and layout for the two SVGs, then their raster), hence
curves every 4.8 s while the header (with the latest reward and loss) follows every 0.8 s.
"""
from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

import gradio as gr

from . import render
from .charts import PALETTE, Line, svg_chart
from .live_stream import HEAVY as HEAVY_PARTS, LiveStreams
from .monitor import LOSS_KEYS, REWARD_KEYS, RunState, Series, first_present
from .studio import Studio

POLL_S = 0.8        # how often a watching page's stream reads the run (header: step, metrics, ETA); p95 latency ~0.8 s
CHART_S = 4.8       # curves: at most this often (every sixth poll; the header shows the latest values meanwhile)
LOG_S = 2.4         # log tail: at most this often (every third poll)
SAMPLES_S = 8.0     # trajectories: at most this often (readable while they change; each swap is a big one)
EVAL_REWARD_KEYS = {"eval/reward": "eval", "eval_train/reward": "eval (train set)"}
REWARD_COLOR, RAW_ALPHA, EVAL_COLOR, LOSS_COLOR = "#4f46e5", 0.28, "#d97706", "#e11d48"

# Runs in the header element (``js_on_load``); ``element``, ``props``, ``server`` and ``trigger``
# are Gradio's. What to watch comes from the header's data attributes (set by Python); the stream
# (aworld_gui/live_stream.py) pushes what changed.
LIVE_JS = r"""
let es = null, sub = null, shown = null, shownRun = null, lastB;
const clear = () => ['aw-chart-reward', 'aw-chart-loss', 'aw-chart-custom', 'aw-samples', 'aw-events', 'aw-log']
  .forEach(id => put(id, ''));
function morph(a, b) {                           // patch a's DOM into b's, touching only what differs
  if (a.nodeType !== b.nodeType || a.nodeName !== b.nodeName) { a.replaceWith(b.cloneNode(true)); return; }
  if (a.nodeType === 3) { if (a.nodeValue !== b.nodeValue) a.nodeValue = b.nodeValue; return; }
  if (a.nodeType !== 1) return;
  for (const at of b.attributes) if (a.getAttribute(at.name) !== at.value) a.setAttribute(at.name, at.value);
  for (const at of [...a.attributes]) if (!b.hasAttribute(at.name)) a.removeAttribute(at.name);
  const ac = a.childNodes, bc = b.childNodes;
  if (ac.length !== bc.length) { a.replaceChildren(...[...bc].map(n => n.cloneNode(true))); return; }
  for (let i = 0; i < bc.length; i++) morph(ac[i], bc[i]);
}
function put(id, html) {           // patch a part in place: a new curve moves points, it does not rebuild
  const el = document.getElementById(id);
  if (!el) return;
  const b = el.cloneNode(false);
  b.innerHTML = html;
  morph(el, b);
}
function setLog(el, text) {        // a tail that moved on: drop the lines that left it, append the new ones
  const cur = el.textContent, node = el.firstChild;
  if (text === cur) return;
  const i = node && el.childNodes.length === 1 && node.nodeType === 3 ? cur.indexOf(text.slice(0, 200)) : -1;
  if (i >= 0 && text.startsWith(cur.slice(i))) { node.deleteData(0, i); node.appendData(text.slice(cur.length - i)); }
  else el.textContent = text;
}
function setHeader(html) {         // same view: patch the text that changed (no re-render, little layout)
  const cur = element.querySelector('[data-testid="run-header"]'), t = document.createElement('template');
  t.innerHTML = html;
  const next = t.content.firstElementChild;
  if (cur && next && cur.dataset.gen && cur.dataset.gen === next.dataset.gen) morph(cur, next);
  else props.value = html;
}
function apply(r) {
  if (r.header) setHeader(r.header);
  if (r.charts) for (const [k, v] of Object.entries(r.charts)) put('aw-chart-' + k, v);
  if (r.samples != null) put('aw-samples', r.samples);
  if (r.events != null) put('aw-events', r.events);
  if (r.log != null) {
    const el = document.getElementById('aw-log');
    if (el) { const tail = el.scrollTop + el.clientHeight >= el.scrollHeight - 8;
              setLog(el, r.log); if (tail) el.scrollTop = el.scrollHeight; }
  }
  if (lastB !== undefined && r.keys.b !== lastB) trigger('apply');   // state/metrics changed: the buttons
  lastB = r.keys.b;
}
async function sync() {            // (re)open the stream for what the header shows, or close it
  if (!element.isConnected) { if (es) es.close(); es = null; return; }     // unmounted
  const head = element.querySelector('[data-run]');
  if (!head && shown !== null) { shown = shownRun = null; clear(); }     // no run shown any more
  const want = head && !document.hidden && element.offsetParent !== null
    ? [head.dataset.run, head.dataset.gen, JSON.parse(head.dataset.picks || '[]'), parseFloat(head.dataset.smoothing || '0')]
    : null;
  const key = want && JSON.stringify(want);
  if (key === sub) return;
  sub = key;
  if (es) { es.close(); es = null; delete element.dataset.stream; }
  if (!want) return;
  if (want[1] !== shown) {
    if (want[0] !== shownRun) clear();            // another run: nothing of the last one under its header
    shown = want[1]; shownRun = want[0]; lastB = undefined;
  }
  try {
    const ticket = await server.live_ticket(...want);
    if (sub !== key) return;                      // the view changed meanwhile
    es = new EventSource('aworld/live/' + ticket);
    element.dataset.stream = es.url;              // which stream this page reads (tests, benchmarks)
    es.onmessage = e => { if (sub === key) apply(JSON.parse(e.data)); };
    es.onerror = () => { if (es && es.readyState === EventSource.CLOSED) { sub = null; setTimeout(sync, 2000); } };
  } catch (e) { sub = null; setTimeout(sync, 2000); }     // the studio restarting: try again
}
new MutationObserver(sync).observe(element, {childList: true, subtree: true, attributes: true,
                                             attributeFilter: ['data-run', 'data-gen']});
new IntersectionObserver(sync).observe(element);  // the Monitor tab shown / hidden
document.addEventListener('visibilitychange', sync);
sync();
"""


@dataclass
class MonitorUI:
    run: Any = None
    header: Any = None
    stop_btn: Any = None
    kill_btn: Any = None
    charts: Any = None
    picker: Any = None
    smoothing: Any = None
    custom: Any = None
    samples: Any = None
    log: Any = None
    events: Any = None


def _placeholder(dom_id: str, inner: str = "", cls: str = "") -> str:
    return f'<div id="{dom_id}" class="{cls}">{inner}</div>'


class MonitorTab:
    def __init__(self, studio: Studio):
        self.studio = studio
        self.streams = LiveStreams(self.live, POLL_S, {"charts": CHART_S, "log": LOG_S, "samples": SAMPLES_S})

    def build(self) -> MonitorUI:
        ui = MonitorUI()
        with gr.Row(equal_height=False, elem_classes="aw-runbar"):
            ui.run = gr.Dropdown([], value=None, label="Run", scale=6, elem_id="monitor-run", allow_custom_value=True)
            ui.stop_btn = gr.Button("Stop", variant="stop", scale=1, min_width=110, visible=False, size="md",
                                    elem_id="stop-btn")
            ui.kill_btn = gr.Button("Kill now", variant="secondary", scale=1, min_width=110, visible=False, size="md",
                                    elem_id="kill-btn")

        def live_ticket(args: list) -> str:  # a plain function: Gradio marks server functions with an attribute
            return self.streams.ticket(*(list(args or []) + [None] * 4)[:4])

        ui.header = gr.HTML(render.no_run(), elem_id="run-header", js_on_load=LIVE_JS,
                            server_functions=[live_ticket])
        ui.charts = gr.HTML(
            '<div class="aw-charts">'
            + _placeholder("aw-chart-reward-box", '<div class="aw-chart-title">Reward</div>'
                           + _placeholder("aw-chart-reward"), "aw-chart-box")
            + _placeholder("aw-chart-loss-box", '<div class="aw-chart-title">Loss</div>'
                           + _placeholder("aw-chart-loss"), "aw-chart-box")
            + "</div>", elem_id="charts")
        with gr.Row(equal_height=True):
            ui.picker = gr.Dropdown([], value=[], multiselect=True, label="More metrics", scale=4,
                                    info="any key the run logs (eval, KL, learning rate, per-reward terms, …)",
                                    elem_id="metric-picker")
            ui.smoothing = gr.Slider(0.0, 0.99, value=0.6, step=0.01, label="Smoothing", scale=2,
                                     info="exponential moving average, as in TensorBoard", elem_id="smoothing")
        ui.custom = gr.HTML(_placeholder("aw-chart-custom"), elem_id="custom-chart")
        with gr.Row(equal_height=False):
            with gr.Column(scale=6):
                gr.HTML('<div class="aw-section-title">Latest trajectories</div>')
                ui.samples = gr.HTML(_placeholder("aw-samples", render.samples_html([])), elem_id="samples")
            with gr.Column(scale=6):
                gr.HTML('<div class="aw-section-title">Log</div>')
                ui.log = gr.HTML('<pre id="aw-log" class="aw-logtail"></pre>', elem_id="log-tail")
                ui.events = gr.HTML(_placeholder("aw-events"), elem_id="events")
        self.ui = ui
        return ui

    def wire(self) -> None:
        """User actions re-render the header (a new ``gen``: the page script starts over and pulls
        everything); state changes refresh the buttons."""
        ui = self.ui
        common = dict(show_progress="hidden", api_visibility="private", concurrency_limit=None)
        show = dict(fn=self.show, inputs=[ui.run, ui.picker, ui.smoothing], outputs=[ui.header], **common)
        buttons = dict(fn=self.buttons, inputs=[ui.run], outputs=[ui.stop_btn, ui.kill_btn, ui.picker], **common)
        ui.run.change(**show).then(**buttons)
        ui.picker.change(**show)
        ui.smoothing.release(**show)
        ui.header.apply(**buttons)
        ui.stop_btn.click(self.on_stop, [ui.run], [ui.stop_btn], api_visibility="private").then(**show).then(**buttons)
        ui.kill_btn.click(self.on_kill, [ui.run], [ui.kill_btn], api_visibility="private").then(**show).then(**buttons)

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
            return f'<div class="aw-run"><div class="aw-msg aw-msg-error">{render.esc(st)}</div></div>'
        st.refresh()
        return self.header_html(run_id, st, secrets.token_hex(4), picks or [], float(smoothing or 0.0))

    def buttons(self, run_id: str | None):
        """Stop while active, Kill once stopping; the metric names for the picker."""
        st = self._state(run_id)
        if not isinstance(st, RunState):
            return gr.update(visible=False), gr.update(visible=False), gr.update(choices=[])
        st.refresh()
        stopping = st.state == "stopping" or (st.active and st.run.stop_requested())
        return (gr.update(visible=st.active and not stopping, interactive=True, value="Stop"),
                gr.update(visible=stopping, interactive=True), gr.update(choices=st.metric_names()))

    def on_stop(self, run_id):
        if run_id:
            self.studio.stop(run_id)
        return gr.update(interactive=False, value="Stopping…")

    def on_kill(self, run_id):
        if run_id:
            self.studio.stop(run_id, kill=True)
        return gr.update(interactive=False)

    # -- the page's poll --------------------------------------------------------------------------
    def live(self, run_id, gen, picks, smoothing, keys, due=HEAVY_PARTS) -> dict:
        """What changed since ``keys`` (the keys of what the page shows): the header, the events,
        and those of the heavy parts (``charts``, ``samples``, ``log``) that are ``due`` — None for
        the rest — and the new keys (a changed part that is not due stays owed)."""
        keys = dict(keys or {})
        picks = [str(p) for p in (picks or []) if p]
        smoothing = float(smoothing or 0.0)
        st = self._state(run_id)
        if not isinstance(st, RunState):   # e.g. deleted meanwhile: say so once (the page then clears)
            gone = keys.get("h") == "gone"
            header = None if gone else self.show(run_id, picks, smoothing)
            return {"keys": {"h": "gone"}, "header": header, "charts": None, "samples": None, "log": None,
                    "events": None}
        st.refresh()
        stop = st.run.stop_requested()
        new = {"h": f"{st.status_version}|{st.metrics_version}|{stop}|{int(time.time()) if st.active else 0}",
               "m": f"{st.metrics_version}|{smoothing}|{','.join(picks)}",
               "s": st.samples_version, "l": st.log_version, "e": len(st.events), "b": f"{st.state}|{stop}|{len(st.series)}"}
        out: dict[str, Any] = {"header": None, "charts": None, "samples": None, "log": None, "events": None}
        if new["h"] != keys.get("h"):
            out["header"] = self.header_html(run_id, st, gen, picks, smoothing)
        heavy = {"m": ("charts", lambda: self.charts(st, picks, smoothing)),
                 "s": ("samples", lambda: render.samples_html(list(st.samples))),
                 "l": ("log", st.log_text)}
        for key, (part, build) in heavy.items():
            if new[key] != keys.get(key):
                if part in due:
                    out[part] = build()
                else:
                    new[key] = keys.get(key)
        if new["e"] != keys.get("e"):
            out["events"] = render.events_html(st.events)
        out["keys"] = new
        return out

    def header_html(self, run_id: str, st: RunState, gen: str, picks: list[str], smoothing: float) -> str:
        note = ""
        if st.state == "queued":
            note = ("Queued: waiting for the machine's training slot (another run is training). It starts "
                    "by itself when that run ends — closing this page does not affect it.")
        elif st.run.stop_requested() and st.active:
            note = (f"Stop requested: the run stops at its next step boundary and saves a checkpoint; "
                    f"it is killed if it has not stopped {self.studio.stop_timeout_s:.0f} s after the request.")
        reward = st.series.get(first_present(st, REWARD_KEYS) or "")
        attrs = {"gen": gen or "", "picks": json.dumps(picks), "smoothing": f"{smoothing:g}"}
        return render.run_header(run_id, st.progress(), st.latest, st.read_spec() or {}, st.status, st.failure(),
                                 st.run.stop_requested(), note, reward.count if reward else 0, attrs)

    def charts(self, st: RunState, picks: list[str], smoothing: float) -> dict[str, str]:
        """The reward, loss and picked-metrics curves as SVG: smoothed dark, raw light (until a
        series is downsampled: then its buckets are averages already), eval points amber."""
        reward_key, loss_key = first_present(st, REWARD_KEYS), first_present(st, LOSS_KEYS)
        reward = self._lines(st.series.get(reward_key) if reward_key else None, "train", REWARD_COLOR, smoothing)
        for key, label in EVAL_REWARD_KEYS.items():
            s = st.series.get(key)
            if s is not None and s.xs:
                reward.append(Line(label, s.xs, s.ys, EVAL_COLOR, width=1.5, markers=len(s.xs) <= 60,
                                   latest=s.last_y))
        loss = self._lines(st.series.get(loss_key) if loss_key else None, "loss", LOSS_COLOR, smoothing)
        custom_lines: list[Line] = []
        for i, name in enumerate(picks):
            s = st.series.get(name)
            if s is not None and s.xs:
                xs, ys = s.points(smoothing)
                custom_lines.append(Line(name, xs, ys, PALETTE[i % len(PALETTE)], latest=s.last_y))
        custom = ""
        if picks:
            custom = ('<div class="aw-chart-box"><div class="aw-chart-title">' + render.esc(", ".join(picks))
                      + "</div>" + svg_chart(custom_lines, "value", "none of these metrics has values yet", "custom",
                                             width=1320)
                      + "</div>")
        return {"reward": svg_chart(reward, "reward", chart_id="reward"),
                "loss": svg_chart(loss, "loss", chart_id="loss"), "custom": custom}

    @staticmethod
    def _lines(s: Series | None, name: str, color: str, smoothing: float) -> list[Line]:
        if s is None or not s.xs:
            return []
        xs, ys = s.points(smoothing)
        lines = []
        if smoothing and s.width == 1:
            lines.append(Line(f"{name} (raw)", s.xs, s.ys, color, width=1.2, opacity=RAW_ALPHA, legend=False))
        lines.append(Line(name, xs, ys, color, latest=s.last_y))
        return lines
