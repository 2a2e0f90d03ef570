"""Sweeps in the studio: the Setup's Sweep panel (which settings to search and how: ranges or lists, trials,
objective, sampler, pruner) and the Sweeps tab (a sweep's trials sorted by the objective with their settings,
the objective against each setting, Optuna's importances, stop / resume, the best trial cloned into Setup).

Both only read and write through :class:`~aworld_gui.core.sweep_core.SweepsCore`; the page wires them in
(``page.py``). The Sweep fields are the one source of the sweep started: the sweep.yaml is built from them
when Sweep is pressed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import gradio as gr

from ..rendering.i18n import Markdown, _, headers
from ..rendering.templates import macro
from ..core.sweep_core import SweepsCore, sweep_doc
from ..rendering import sweep_render

SWEEPS_TICK_S = 3.0
ERROR = macro("tabs/common.html", "error")
EXAMPLE_PARAMS = """\
# each setting: a range {low, high, log, step} or a list of values (a categorical choice)
learning_rate: {low: 1.0e-4, high: 1.0e-2, log: true}
beta: [0.0, 0.04]
"""


@dataclass
class SweepSetupUI:
    accordion: Any = None
    params: Any = None
    trials: Any = None
    sampler: Any = None
    pruner: Any = None
    metric: Any = None
    direction: Any = None
    name: Any = None
    start_btn: Any = None
    msg: Any = None

    def fields(self) -> list:
        return [self.trials, self.sampler, self.pruner, self.metric, self.direction, self.params, self.name]


@dataclass
class SweepsUI:
    pick: Any = None
    refresh_btn: Any = None
    headline: Any = None
    table: Any = None
    charts: Any = None
    importances: Any = None
    stop_btn: Any = None
    resume_btn: Any = None
    clone_btn: Any = None
    best_run: Any = None
    msg: Any = None
    timer: Any = None


class SweepPanel:
    """The Setup's Sweep accordion; its Sweep button starts the sweep of the Setup's current inputs."""

    def __init__(self, core: SweepsCore):
        self.core = core
        self.ui = SweepSetupUI()

    def build(self) -> SweepSetupUI:
        ui = self.ui
        with gr.Accordion(
            _("Sweep: many runs of this setup, searched with Optuna"), open=False, elem_id="sweep-panel"
        ) as ui.accordion:
            Markdown(
                _(
                    "Each trial is an ordinary run with these settings over the setup above; every range is "
                    "checked against the engine's own config check before anything runs."
                ),
                elem_classes="aw-muted",
            )
            with gr.Row(equal_height=True):
                ui.trials = gr.Number(
                    value=4, precision=0, minimum=1, label=_("Trials"), elem_id="sweep-trials", scale=1
                )
                ui.sampler = gr.Dropdown(
                    [("TPE", "tpe"), (_("random"), "random"), (_("grid"), "grid")],
                    value="tpe",
                    label=_("Sampler"),
                    elem_id="sweep-sampler",
                    scale=1,
                )
                ui.pruner = gr.Dropdown(
                    [(_("median (Optuna)"), "median"), (_("none"), "none")],
                    value="median",
                    label=_("Pruning"),
                    elem_id="sweep-pruner",
                    scale=1,
                )
                ui.metric = gr.Textbox(
                    value="eval/reward", label=_("Objective metric"), max_lines=1, elem_id="sweep-metric", scale=2
                )
                ui.direction = gr.Dropdown(
                    [(_("maximize"), "maximize"), (_("minimize"), "minimize")],
                    value="maximize",
                    label=_("Direction"),
                    elem_id="sweep-direction",
                    scale=1,
                )
            ui.params = gr.Code(
                EXAMPLE_PARAMS, language="yaml", label=_("Settings to search"), elem_id="sweep-params", lines=5
            )
            with gr.Row(equal_height=True):
                ui.name = gr.Textbox(label=_("Sweep name (optional)"), max_lines=1, elem_id="sweep-name", scale=3)
                ui.start_btn = gr.Button(_("Start sweep"), variant="primary", elem_id="sweep-start", scale=1)
            ui.msg = gr.HTML("", elem_id="sweep-msg")
        return ui

    def on_start(self, collect_inputs: Callable[..., Any], n_setup: int, *values):
        """(message, the sweep to show in the Sweeps tab)."""
        si = collect_inputs(*values[:n_setup])
        trials, sampler, pruner, metric, direction, params, name = values[n_setup:]
        try:
            doc = sweep_doc(trials, sampler, pruner, metric, direction, params, name)
        except Exception as e:  # noqa: BLE001 - the params YAML: said plainly, never raised
            return ERROR(e, _("Sweep refused:")), gr.update()
        res = self.core.launch(si, doc)
        if not res.get("ok"):
            return ERROR(res.get("error"), _("Sweep refused:")), gr.update()
        return (
            macro("tabs/sweep.html", "started")(res["sweep_id"]),
            gr.update(choices=self.core.sweep_ids(), value=res["sweep_id"]),
        )


def shown_headers(columns: list[str]) -> list[str]:
    """The trials table's headers (sweep_render.table's: trial, state, value, each param, run) in the page's
    language; the params by their names."""
    return [*headers(*columns[:3]), *columns[3:-1], *headers(columns[-1])]


class SweepsTab:
    def __init__(self, core: SweepsCore):
        self.core = core
        self.ui = SweepsUI()
        self._imp_key: tuple | None = None
        self._imp: dict[str, float] | None = None

    def build(self) -> SweepsUI:
        ui = self.ui
        ids = self.core.sweep_ids()
        with gr.Row(equal_height=True):
            ui.pick = gr.Dropdown(ids, value=ids[0] if ids else None, label=_("Sweep"), elem_id="sweep-pick", scale=4)
            ui.refresh_btn = gr.Button(_("Refresh"), elem_id="sweep-refresh", scale=1)
            ui.stop_btn = gr.Button(_("Stop sweep"), elem_id="sweep-stop", scale=1)
            ui.resume_btn = gr.Button(_("Resume sweep"), elem_id="sweep-resume", scale=1)
            ui.clone_btn = gr.Button(_("Clone the best trial into Setup"), elem_id="sweep-clone", scale=2)
        ui.msg = Markdown("", elem_id="sweep-action-msg")
        ui.headline = gr.HTML("", elem_id="sweep-view-headline")
        ui.table = gr.Dataframe(
            headers=headers("trial", "state", "value", "run"),
            value=[],
            interactive=False,
            elem_id="sweep-trials-table",
            wrap=True,
        )
        ui.charts = gr.HTML("", elem_id="sweep-charts")
        ui.importances = gr.HTML("", elem_id="sweep-importance")
        ui.best_run = gr.State(None)
        ui.timer = gr.Timer(SWEEPS_TICK_S)
        return ui

    def view(self, sweep_id: str | None):
        """(headline, table, charts, importances, the best trial's run)."""
        if not sweep_id:
            return (
                f'<div class="aw-muted">{_("No sweep yet: start one from Setup → Sweep.")}</div>',
                gr.update(value=[]),
                "",
                "",
                None,
            )
        try:
            d = self.core.detail(sweep_id)
        except ValueError as e:
            return ERROR(e), gr.update(value=[]), "", "", None
        columns, rows = sweep_render.table(d)
        imp = self._importances(sweep_id, d)
        best = (d.get("best") or {}).get("run_id")
        return (
            sweep_render.headline(d),
            # headers in the value: an update's headers= is not applied to the value (params showed as "5", "6")
            gr.update(value={"headers": shown_headers(columns), "data": rows}),
            sweep_render.charts(d),
            sweep_render.importance_bars(imp),
            best,
        )

    def _importances(self, sweep_id: str, d: dict) -> dict[str, float] | None:
        """Optuna's importances, computed again only when the set of complete trials changed."""
        key = (sweep_id, tuple(t["number"] for t in d["trials"] if t.get("state") == "complete"))
        if self._imp_key != key:
            try:
                self._imp = self.core.importances(sweep_id)
            except Exception:  # noqa: BLE001 - a study being written: importances on the next tick
                return None
            self._imp_key = key
        return self._imp

    def outputs(self) -> list:
        ui = self.ui
        return [ui.headline, ui.table, ui.charts, ui.importances, ui.best_run]

    def on_refresh(self, sweep_id):
        ids = self.core.sweep_ids()
        value = sweep_id if sweep_id in ids else (ids[0] if ids else None)
        return [gr.update(choices=ids, value=value), *self.view(value)]

    def on_stop(self, sweep_id):
        if not sweep_id:
            return ""
        state = self.core.stop(sweep_id).get("state")
        return f"{_('Stop requested:')} `{sweep_id}` ({state})"

    def on_resume(self, sweep_id):
        if not sweep_id:
            return ""
        try:
            pid = self.core.resume(sweep_id)
        except ValueError as e:
            return f"**{e}**"
        return f"{_('Resumed:')} `{sweep_id}` (pid {pid})"

    def wire(self, tab: Any) -> None:
        ui = self.ui
        ui.pick.change(self.view, [ui.pick], self.outputs(), api_visibility="private", show_progress="hidden")
        for trigger in (ui.refresh_btn.click, tab.select):
            trigger(self.on_refresh, [ui.pick], [ui.pick, *self.outputs()], api_visibility="private")
        ui.timer.tick(self.view, [ui.pick], self.outputs(), api_visibility="private", show_progress="hidden")
        ui.stop_btn.click(self.on_stop, [ui.pick], [ui.msg], api_visibility="private").then(
            self.view, [ui.pick], self.outputs(), api_visibility="private"
        )
        ui.resume_btn.click(self.on_resume, [ui.pick], [ui.msg], api_visibility="private").then(
            self.view, [ui.pick], self.outputs(), api_visibility="private"
        )
