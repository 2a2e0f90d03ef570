"""Runs: every run under the runs dir (found by scanning it, so a studio restart loses none),
curves of several runs overlaid, a diff of two run specs, clone / stop / delete, the run.yaml and
the command that reproduces it, checkpoint downloads."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import gradio as gr
from markupsafe import Markup

from engines.runs.rundir import ACTIVE_STATES, RunDir

from ..rendering.charts import PALETTE, Line, svg_chart
from ..rendering import engine_text
from ..rendering.render import RUN_LABEL, badge
from ..rendering.templates import macro
from ..core.run_cache import Series
from ..rendering.i18n import Markdown, _, headers
from ..core.studio import Studio

RUNS_TICK_S = 2.0
#: the metrics always offered to overlay, named in the page's language (any other metric by the name it is logged under)
METRIC_LABELS = {"reward": _("reward"), "loss": _("loss")}


def metric_choices(names) -> list[tuple[str, str]]:
    return [(str(METRIC_LABELS.get(name, name)), name) for name in sorted(set(names) | set(METRIC_LABELS))]


HEADERS = headers("run", "name · note", "state", "engine", "model", "started", "progress", "last reward")


@dataclass
class RunsUI:
    table: Any = None
    selected: Any = None
    open_btn: Any = None
    clone_btn: Any = None
    stop_btn: Any = None
    resume_btn: Any = None
    delete_btn: Any = None
    confirm_btn: Any = None
    action_msg: Any = None
    spec_file: Any = None
    cli: Any = None
    ckpt: Any = None
    ckpt_btn: Any = None
    ckpt_file: Any = None
    export_btn: Any = None
    evals_html: Any = None
    compare: Any = None
    compare_metric: Any = None
    compare_smoothing: Any = None
    compare_plot: Any = None
    diff_a: Any = None
    diff_b: Any = None
    diff: Any = None
    timer: Any = None
    sig: Any = None
    empty: Any = None
    label_name: Any = None
    label_note: Any = None
    label_btn: Any = None


def _view(name: str):
    """A macro of templates/tabs/runs.html."""
    return macro("tabs/runs.html", name)


def table_rows(runs: list[dict]) -> list[list]:
    rows = []
    for r in runs:
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["started"])) if r.get("started") else ""
        progress = f"{r.get('step') or 0}/{r['total_steps']}" if r.get("total_steps") else str(r.get("step") or "")
        reward = "" if r.get("last_reward") is None else f"{r['last_reward']:.3f}"
        label = str(RUN_LABEL.get(r["state"], r["state"])) + (
            f": {engine_text.message(r['cause'])}" if r.get("cause") else ""
        )
        # render.badge's HTML; the queue note is core/queue_note's (a Markup: a str is text)
        state = str(_view("state_cell")(Markup(badge(r["state"], label)), r.get("queue"), r.get("unreadable")))
        name = str(_view("name_cell")(r.get("name") or "", r.get("note")))
        rows.append([r["run_id"], name, state, r["engine"], r.get("model") or "", started, progress, reward])
    return rows


def shown_rows(table) -> list[list]:
    """The rows of the Runs table as the page has it (the Dataframe's value: a pandas DataFrame, or rows)."""
    if table is None:
        return []
    rows = table.values.tolist() if hasattr(table, "values") else list(table)
    return [list(row) for row in rows]


def overlay_chart(
    series: dict[str, Series],
    metric: str,
    smoothing: float = 0.0,
    names: dict[str, str] | None = None,
    live: str | None = None,
) -> str:
    """One metric of several runs in one SVG chart, a colour and a legend entry per run, named by the run's name
    where it has one (``names``: run id → name); the ``live`` run (training now) first in the legend and drawn on
    top of the others. Each redraw is a whole new chart: nothing of an earlier set of runs stays in the page."""
    names = names or {}
    lines = []
    for i, (run_id, s) in enumerate(series.items()):
        if s is not None and s.xs:
            xs, ys = s.points(smoothing)
            name = names.get(run_id) or run_id
            if run_id == live:
                name = f"{name} · {_('live')}"
            lines.append(Line(name, xs, ys, PALETTE[i % len(PALETTE)], latest=ys[-1], on_top=run_id == live))
    lines.sort(key=lambda ln: not ln.on_top)  # the legend lists the live run first; svg_chart draws it last
    empty = f"{_('none of these runs has logged this metric yet:')} {metric}"
    return svg_chart(lines, METRIC_LABELS.get(metric, metric), empty, chart_id="compare", width=1320)


class RunsTab:
    def __init__(self, studio: Studio):
        self.studio = studio

    def build(self) -> RunsUI:
        ui = RunsUI()
        Markdown(
            f"{_('Every run under')} `{self.studio.runs_dir}`. {_('Runs live in their own processes: they keep training when this page or the studio closes, and show up here again on restart.')}",
            elem_classes="aw-muted",
        )
        ui.empty = gr.HTML(self.empty_note(), elem_id="runs-empty", visible=True)
        ui.table = gr.Dataframe(
            headers=HEADERS,
            value=[],
            interactive=False,
            max_height=330,
            wrap=False,
            datatype=["str", "html", "html", "str", "str", "str", "str", "str"],
            elem_id="runs-table",
            label=_("Runs (click a row to select it)"),
        )
        with gr.Row(equal_height=False, elem_classes="aw-runbar"):
            ui.selected = gr.Dropdown([], value=None, label=_("Selected run"), scale=4, elem_id="runs-selected")
            # disabled until a run they apply to is selected (action_updates)
            off = dict(scale=1, size="md", interactive=False)
            ui.open_btn = gr.Button(_("Open in Monitor"), min_width=140, elem_id="runs-open", **off)
            ui.clone_btn = gr.Button(_("Clone into Setup"), min_width=140, elem_id="runs-clone", **off)
            ui.stop_btn = gr.Button(_("Stop"), variant="stop", min_width=90, elem_id="runs-stop", **off)
            ui.resume_btn = gr.Button(_("Resume"), min_width=90, elem_id="runs-resume", **off)
            ui.delete_btn = gr.Button(_("Delete…"), min_width=90, elem_id="runs-delete", **off)
            ui.confirm_btn = gr.Button(
                _("Confirm delete"),
                variant="stop",
                scale=1,
                min_width=130,
                visible=False,
                size="md",
                elem_id="runs-confirm-delete",
            )
        with gr.Row(equal_height=True, elem_classes="aw-runbar"):
            ui.label_name = gr.Textbox(
                label=_("Name"), scale=3, max_lines=1, elem_id="runs-name", placeholder=_("a name for the selected run")
            )
            ui.label_note = gr.Textbox(
                label=_("Note"), scale=6, max_lines=3, elem_id="runs-note", placeholder=_("what this run tries")
            )
            ui.label_btn = gr.Button(
                _("Save name and note"), scale=2, size="md", interactive=False, min_width=140, elem_id="runs-label-save"
            )
        ui.action_msg = Markdown("")
        with gr.Row(equal_height=False):
            with gr.Column(scale=5):
                ui.spec_file = gr.File(label=_("run.yaml (the complete spec)"), interactive=False, elem_id="runs-spec")
                with gr.Row(equal_height=False, elem_classes="aw-runbar"):
                    ui.ckpt = gr.Dropdown([], label=_("Checkpoint"), scale=3, elem_id="runs-ckpt")
                    ui.ckpt_btn = gr.Button(
                        _("Download checkpoint (.zip)"), scale=2, size="md", elem_id="runs-ckpt-btn", interactive=False
                    )
                    ui.export_btn = gr.Button(
                        _("Export as a model folder (.zip)"),
                        scale=2,
                        size="md",
                        elem_id="runs-export-btn",
                        interactive=False,
                    )
                ui.ckpt_file = gr.File(
                    label=_("Checkpoint archive"), interactive=False, visible=False, elem_id="runs-ckpt-file"
                )
                ui.evals_html = gr.HTML("", elem_id="runs-evals")
            with gr.Column(scale=7):
                ui.cli = gr.Code(
                    "",
                    language="shell",
                    lines=6,
                    interactive=False,
                    label=_("Reproduce from the command line"),
                    wrap_lines=True,
                    elem_id="runs-cli",
                )
        with gr.Accordion(_("Compare runs"), open=True):
            with gr.Row(equal_height=True):
                ui.compare = gr.Dropdown(
                    [], value=[], multiselect=True, label=_("Runs to overlay"), scale=5, elem_id="compare-runs"
                )
                ui.compare_metric = gr.Dropdown(
                    metric_choices([]),
                    value="reward",
                    label=_("Metric"),
                    scale=2,
                    allow_custom_value=True,
                    elem_id="compare-metric",
                )
                ui.compare_smoothing = gr.Slider(0, 0.99, value=0.6, step=0.01, label=_("Smoothing"), scale=2)
            ui.compare_plot = gr.HTML(overlay_chart({}, "reward"), elem_id="compare-plot")
        with gr.Accordion(_("Diff two run specs"), open=False):
            with gr.Row():
                ui.diff_a = gr.Dropdown([], label=_("Run A"), elem_id="diff-a")
                ui.diff_b = gr.Dropdown([], label=_("Run B"), elem_id="diff-b")
            ui.diff = gr.Code("", language=None, lines=12, interactive=False, label=_("run.yaml diff"), elem_id="diff")
        ui.timer = gr.Timer(RUNS_TICK_S, active=False)
        ui.sig = gr.State(None)
        self.ui = ui
        return ui

    def wire(self, monitor_run, runs_tab, other_tabs) -> None:
        """The table refreshes on a timer that runs only while the Runs tab is open."""
        ui = self.ui
        list_outs = [
            ui.table,
            ui.selected,
            ui.compare,
            ui.diff_a,
            ui.diff_b,
            monitor_run,
            ui.sig,
            ui.open_btn,
            ui.clone_btn,
            ui.stop_btn,
            ui.delete_btn,
            ui.ckpt_btn,
            ui.export_btn,
            ui.resume_btn,
            ui.ckpt,
            ui.empty,
        ]
        refresh_kw = dict(
            fn=self.refresh,
            inputs=[ui.sig, ui.selected, monitor_run, ui.table],
            outputs=list_outs,
            show_progress="hidden",
            api_visibility="private",
            concurrency_limit=None,
        )
        ui.timer.tick(**refresh_kw)
        self.refresh_kw = refresh_kw
        runs_tab.select(lambda: gr.Timer(active=True), None, ui.timer, api_visibility="private", queue=False).then(
            **refresh_kw
        )
        for tab in other_tabs:
            tab.select(lambda: gr.Timer(active=False), None, ui.timer, api_visibility="private", queue=False)
        ui.table.select(self.on_row_select, [ui.table], [ui.selected], api_visibility="private")
        actions = [ui.open_btn, ui.clone_btn, ui.stop_btn, ui.delete_btn, ui.ckpt_btn, ui.export_btn, ui.resume_btn]
        self.actions = actions
        ui.selected.change(
            self.on_selected,
            [ui.selected],
            [ui.spec_file, ui.cli, ui.ckpt, ui.ckpt_file, ui.confirm_btn, ui.action_msg, *actions],
            api_visibility="private",
            show_progress="hidden",
        )
        ui.selected.change(
            self.label_of,
            [ui.selected],
            [ui.label_name, ui.label_note, ui.label_btn],
            api_visibility="private",
            show_progress="hidden",
        )
        ui.label_btn.click(
            self.on_relabel, [ui.selected, ui.label_name, ui.label_note], [ui.action_msg], api_visibility="private"
        ).then(**self.refresh_kw)
        ui.stop_btn.click(self.on_stop, [ui.selected], [ui.action_msg], api_visibility="private").then(
            self.action_updates, [ui.selected], actions, api_visibility="private", show_progress="hidden"
        )
        # from the checkpoint picked below (its latest when the run is selected)
        ui.resume_btn.click(self.on_resume, [ui.selected, ui.ckpt], [ui.action_msg], api_visibility="private").then(
            **refresh_kw
        ).then(self.action_updates, [ui.selected], actions, api_visibility="private", show_progress="hidden")
        ui.delete_btn.click(
            lambda sel: (
                gr.update(visible=bool(sel)),
                f"{_('Delete this run and all its files? Press Confirm delete:')} **{sel}**"
                if sel
                else _("Select a run first."),
            ),
            [ui.selected],
            [ui.confirm_btn, ui.action_msg],
            api_visibility="private",
        )
        ui.confirm_btn.click(
            self.on_delete, [ui.selected], [ui.action_msg, ui.confirm_btn, ui.selected], api_visibility="private"
        ).then(**refresh_kw)
        ui.export_btn.click(
            self.on_export, [ui.selected, ui.ckpt], [ui.ckpt_file, ui.action_msg], api_visibility="private"
        )
        ui.selected.change(
            self.evaluations_html, [ui.selected], [ui.evals_html], api_visibility="private", show_progress="hidden"
        )
        ui.ckpt_btn.click(
            self.on_checkpoint, [ui.selected, ui.ckpt], [ui.ckpt_file, ui.action_msg], api_visibility="private"
        )
        cmp_kw = dict(
            fn=self.on_compare,
            inputs=[ui.compare, ui.compare_metric, ui.compare_smoothing],
            outputs=[ui.compare_plot, ui.compare_metric],
            api_visibility="private",
            show_progress="hidden",
        )
        ui.compare.change(**cmp_kw)
        ui.compare_metric.change(**cmp_kw)
        ui.compare_smoothing.release(**cmp_kw)
        ui.diff_a.change(self.studio.config_diff, [ui.diff_a, ui.diff_b], [ui.diff], api_visibility="private")
        ui.diff_b.change(self.studio.config_diff, [ui.diff_a, ui.diff_b], [ui.diff], api_visibility="private")

    # -- handlers ----------------------------------------------------------------------------------
    def refresh(self, sig, selected, monitor_run, shown=None):
        """Runs table and every run picker; sends nothing while the page's table (``shown``, as the page has it)
        shows the runs as they are, and updates the pickers only when a run appears or disappears.

        What the page shows is read from the page, not from what this sent before: two refreshes in flight (the tab's
        pick and a tick) can answer out of order, and the older answer, landing last, left a table this believed
        current, stale for good once the runs stopped changing (a queued run's words could stay missing from Runs
        while the Monitor said them; tests/test_browser_runs_table.py holds one answer back to show it)."""
        runs = self.studio.list_runs()
        rows = table_rows(runs)
        ids = [r["run_id"] for r in runs]
        on_page = shown_rows(shown)
        sig = dict(sig or {})
        skip = gr.skip()
        out = [skip] * 6
        follow = [skip] * 8  # the actions (and its checkpoints) follow the selected run as it changes
        if rows != on_page:
            out[0] = rows
            follow = self.action_updates(selected) + [skip]
            ckpts = self._checkpoints(selected)
            if repr((selected, ckpts)) != sig.get("ckpts"):
                sig["ckpts"] = repr((selected, ckpts))
                follow[7] = gr.update(choices=ckpts, value=ckpts[-1] if ckpts else None)
        if rows != on_page and ids != [row[0] for row in on_page]:  # the pickers were sent with the same table
            sel = selected if selected in ids else (ids[0] if ids else None)
            out[1:6] = [
                gr.update(choices=ids, value=sel),
                gr.update(choices=ids),
                gr.update(choices=ids),
                gr.update(choices=ids),
                gr.update(choices=ids),
            ]
            if not sig.get("compare_set") and ids:  # first fill: overlay the latest runs
                sig["compare_set"] = True
                out[2] = gr.update(choices=ids, value=ids[:3])
        empty = gr.update(visible=not runs) if rows != on_page else skip  # shown before any run (build)
        return out + [sig] + follow + [empty]

    def on_row_select(self, table, evt: gr.SelectData):
        try:
            row = evt.index[0]
            rows = table.values.tolist() if hasattr(table, "values") else list(table)
            return rows[row][0]
        except Exception:  # noqa: BLE001
            return gr.update()

    def label_of(self, run_id):
        try:
            label = RunDir(self.studio.run_path(run_id)).read_label() if run_id else None
        except ValueError:
            label = None
        if label is None:
            return "", "", gr.update(interactive=False)
        return label["name"], label["note"], gr.update(interactive=True)

    def on_relabel(self, run_id, name, note):
        if not run_id:
            return _("Select a run first.")
        try:
            label = self.studio.relabel(run_id, name or "", note or "")
        except ValueError as e:
            return f"**{e}**"
        return f"{_('Saved the name and note of')} **{run_id}**: “{label['name'] or '—'}”."

    def empty_note(self) -> str:
        return _view("empty_note")(self.studio.runs_dir)

    def _checkpoints(self, run_id) -> list[str]:
        try:
            return self.studio.checkpoints(run_id) if run_id else []
        except (ValueError, OSError):
            return []

    def action_updates(self, run_id) -> list:
        """Open, Clone, Stop, Delete, Download and Resume enabled only when they apply to the selected run:
        Stop while it is active, Delete once it is not, Download when it has a checkpoint, Resume when it is
        stopped, failed or ended early with a checkpoint before its end, on an engine that resumes."""
        state, ckpts = None, self._checkpoints(run_id)
        if run_id:
            try:
                state = self.studio.state(run_id).state
            except (ValueError, OSError):
                state = None
        active = state in ACTIVE_STATES
        return [
            gr.update(interactive=state is not None),
            gr.update(interactive=state is not None),
            gr.update(interactive=active),
            gr.update(interactive=state is not None and not active),
            gr.update(interactive=bool(ckpts)),
            gr.update(interactive=bool(ckpts)),
            gr.update(interactive=bool(ckpts) and not active and state is not None and self.studio.resumable(run_id)),
        ]

    def on_selected(self, run_id):
        actions = self.action_updates(run_id)
        if not run_id:
            return [
                None,
                "",
                gr.update(choices=[], value=None),
                gr.update(visible=False),
                gr.update(visible=False),
                "",
                *actions,
            ]
        try:
            spec = self.studio.export_spec(run_id)
            cli = self.studio.cli_command(run_id)
            ckpts = self.studio.checkpoint_choices(run_id)
        except (ValueError, OSError) as e:
            return [
                None,
                "",
                gr.update(choices=[], value=None),
                gr.update(visible=False),
                gr.update(visible=False),
                f"**{e}**",
                *actions,
            ]
        return [
            spec,
            cli,
            gr.update(choices=ckpts, value=ckpts[-1][1] if ckpts else None),
            gr.update(visible=False),
            gr.update(visible=False),
            "",
            *actions,
        ]

    def on_stop(self, run_id):
        if not run_id:
            return _("Select a run first.")
        try:
            st = self.studio.stop(run_id)
        except ValueError as e:
            return f"**{e}**"
        if not st.get("stop_sent"):
            return st["message"]
        return f"{_('Stop requested: it stops at its next step boundary.')} **{run_id}** ({st.get('state')})"

    def on_resume(self, run_id, checkpoint):
        if not run_id:
            return _("Select a run first.")
        try:
            res = self.studio.resume(run_id, checkpoint)
        except ValueError as e:
            return f"**{e}**"
        if not res.get("ok"):
            return f"**{_('Not resumed:')}** {macro('tabs/common.html', 'text')(engine_text.message(res.get('error')))}"
        said = _("is queued and resumes, when the machine is free, from") if res.get("queued") else _("resumes from")
        return f"**{res['run_id']}** {said} `{res['checkpoint']}` ({_('step')} {res['step']}) · {_('attempt')} {res['attempt']}"

    def on_delete(self, run_id):
        try:
            self.studio.delete(run_id)
        except ValueError as e:
            return f"**Not deleted:** {e}", gr.update(visible=False), gr.update()
        return f"{_('Deleted')} **{run_id}**.", gr.update(visible=False), gr.update(value=None)

    def no_checkpoint(self, run_id) -> str:
        """Why there is no checkpoint to take: none yet, or — a run trained on a Ray cluster — where they are."""
        there = self.studio.checkpoints_unreachable(run_id) if run_id else None
        if there is None:
            return _("This run has no checkpoint yet.")
        return (
            f"{_('This run trained on a Ray cluster; its checkpoints are at')} `{there}`"
            f"{_(', which this machine does not see: copy them into the run folder’s checkpoints/ (docs/CLUSTER.md).')}"
        )

    def _file_of(self, make, run_id, name, label: str, failed: str, done: str):
        """A download of the run's checkpoint ``name`` made by ``make(run_id, name)``: the file offered under
        ``label`` and ``done`` said, or why there is none (``failed`` before the error)."""
        if not run_id or not name:
            return gr.update(visible=False), self.no_checkpoint(run_id)
        try:
            path = make(run_id, name)
        except (ValueError, OSError) as e:
            return gr.update(visible=False), f"**{failed}{e}**"
        return gr.update(value=path, visible=True, label=label), done

    def on_export(self, run_id, name):
        return self._file_of(
            self.studio.export_model,
            run_id,
            name,
            _("Exported model (a Hugging Face folder, zipped)"),
            _("Not exported:") + " ",
            f"{_('Exported as a Hugging Face model folder (weights, tokenizer, chat template, model card):')} **{name}**",
        )

    def evaluations_html(self, run_id) -> str:
        """The run's evaluations: when, which models, their mean rewards (details in Evaluate)."""
        try:
            evals = self.studio.evaluations(run_id) if run_id else []
        except ValueError:
            evals = []
        shown = [{**e, "badge": Markup(badge(e["state"] or "queued"))} for e in evals]  # render.badge's HTML
        return _view("evaluations")(shown)

    def on_checkpoint(self, run_id, name):
        return self._file_of(self.studio.checkpoint_zip, run_id, name, _("Checkpoint archive"), "", "")

    def on_compare(self, run_ids, metric, smoothing):
        series = {}
        names: set[str] = set()
        for rid in run_ids or []:
            try:
                st = self.studio.state(rid)
            except ValueError:
                continue
            names.update(st.metric_names())
            if metric in st.series:
                series[rid] = st.series[metric]
        choices = metric_choices(names)
        labels = {r["run_id"]: r.get("name") for r in self.studio.list_runs() if r["run_id"] in series}
        chart = overlay_chart(series, metric, float(smoothing or 0), labels, self.studio.training_run())
        return chart, gr.update(choices=choices)
