"""Evaluate: score a run's base model and checkpoints side by side on a dataset with the reward, through
the agent's own loop (tools run). Launching prepares the evaluation in the check worker and starts it as a
process of its own (``aworld-train eval --dir``); this tab only reads its directory: progress while it
runs, then a summary per model and a per-sample table (filterable to where the models disagree or fail)
with any sample's trajectories."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
from markupsafe import Markup

from engines.runs.rundir import ACTIVE_STATES, RunDir

from ..rendering.i18n import Markdown, _, headers
from ..core import inputs as inp
from ..rendering import engine_text, render
from ..core.studio import Studio
from ..rendering.templates import macro

RUN_DATASET = "(the run's test set)"
#: the dataset picker's first choice: the run's own test set (value RUN_DATASET), named in the page's language
RUN_DATASET_CHOICE = (str(_("(the run's test set)")), RUN_DATASET)
RUN_REWARD = "(the run's reward)"
FILTERS = ["all samples", "models disagree", "a model failed"]
#: the table's filters (values FILTERS), named in the page's language
FILTER_CHOICES = list(zip([_("all samples"), _("models disagree"), _("a model failed")], FILTERS))
TICK_S = 1.0
ERROR = macro("tabs/common.html", "error")


@dataclass
class EvaluateUI:
    run: Any = None
    models: Any = None
    dataset: Any = None
    dataset_upload: Any = None
    rewards: Any = None
    samples: Any = None
    temperature: Any = None
    max_samples: Any = None
    launch_btn: Any = None
    msg: Any = None
    evals: Any = None
    progress: Any = None
    summary: Any = None
    filter: Any = None
    table: Any = None
    row: Any = None
    trajectory: Any = None
    timer: Any = None


def _last_user(prompt: Any) -> str:
    if isinstance(prompt, list):
        for m in reversed(prompt):
            if isinstance(m, dict) and m.get("role") == "user":
                return str(m.get("content", ""))
    return str(prompt or "")


def model_label(model: str) -> str:
    """A model as the page names it: the agent's base model in the page's language, a checkpoint by its name."""
    return str(_("base")) if model == "base" else model


def _view(name: str):
    """A macro of templates/tabs/evaluate.html."""
    return macro("tabs/evaluate.html", name)


def read_predictions(eval_dir: str | Path) -> list[dict]:
    return RunDir(eval_dir).read_jsonl("predictions.jsonl")


def summary_html(metrics: dict[str, dict]) -> str:
    """One column per model: mean reward, each reward term, pass@k, tool calls, samples, and seconds: loading the
    model, generating and scoring, the whole."""
    if not metrics:
        return _view("summary")([], [])
    models = list(metrics)
    keys: list[str] = []
    for m in models:
        keys += [k for k in metrics[m] if k not in keys]
    order = (
        ["reward"]
        + sorted(k for k in keys if k.startswith("rewards/"))
        + sorted(k for k in keys if k.startswith("pass@"))
        + [k for k in ("tool_calls", "samples", "prompts", "load_seconds", "generate_seconds", "seconds") if k in keys]
    )
    best = max(models, key=lambda m: metrics[m].get("reward") or 0.0)
    head = [(model_label(m), m == best and len(models) > 1) for m in models]
    # render.fmt_num's HTML (a number, or the value escaped)
    rows = [(k, [Markup(render.fmt_num(metrics[m].get(k))) for m in models]) for k in order]
    return _view("summary")(head, rows)


def sample_rows(predictions: list[dict], which: str = FILTERS[0], threshold: float = 1.0) -> tuple[list, list[str]]:
    """(rows, headers): one row per (prompt, sample) with each model's completion and reward."""
    models: list[str] = []
    by_key: dict[tuple, dict[str, dict]] = {}
    for p in predictions:
        if p["model"] not in models:
            models.append(p["model"])
        by_key.setdefault((p["index"], p["sample"]), {})[p["model"]] = p
    rows = []
    for (index, sample), per in sorted(by_key.items()):
        rewards = [per[m]["reward"] for m in models if m in per]
        if which == FILTERS[1] and len(set(round(r, 6) for r in rewards)) <= 1:
            continue
        if which == FILTERS[2] and all(r >= threshold for r in rewards):
            continue
        first = next(iter(per.values()))
        row = [index, sample, _last_user(first["prompt"])[:300], first.get("answer")]
        for m in models:
            p = per.get(m)
            row += [render.visible_text(p["completion"])[:300] if p else "", round(p["reward"], 4) if p else None]
        rows.append(row)
    shown = ["#", *headers("sample", "prompt", "answer")]
    for m in models:
        shown += [f"{model_label(m)}: {_('completion')}", f"{model_label(m)}: {_('reward')}"]
    return rows, shown


def trajectories_html(predictions: list[dict], index: int, sample: int = 0) -> str:
    parts = []
    for p in predictions:
        if p["index"] == index and p["sample"] == sample:
            shown = {
                "prompt": p["prompt"],
                "completion": p["trajectory"],
                "answer": p.get("answer"),
                "rewards": p.get("rewards"),
                "reward": p.get("reward"),
            }
            parts.append((model_label(p["model"]), Markup(render.trajectory(shown))))  # render.trajectory's HTML
    return _view("trajectories")(parts)


class EvaluateTab:
    def __init__(self, studio: Studio):
        self.studio = studio

    def build(self) -> EvaluateUI:
        ui = EvaluateUI()
        Markdown(
            _(
                "Score the agent's base model and any checkpoints on a dataset with the reward — the agent's own loop runs (tools included), in a process of its own."
            ),
            elem_classes="aw-muted",
        )
        with gr.Row(equal_height=True, elem_classes="aw-runbar"):
            ui.run = gr.Dropdown([], value=None, label=_("Run"), scale=4, elem_id="eval-run")
            ui.models = gr.CheckboxGroup([], value=[], label=_("Models to compare"), scale=6, elem_id="eval-models")
        with gr.Row(equal_height=True):
            ui.dataset = gr.Dropdown(
                [RUN_DATASET_CHOICE],
                value=RUN_DATASET,
                label=_("Dataset"),
                allow_custom_value=True,
                scale=4,
                elem_id="eval-dataset",
            )
            ui.dataset_upload = gr.UploadButton(
                _("Upload"),
                file_types=list(inp.DATASET_SUFFIXES),
                size="md",
                scale=1,
                min_width=100,
                elem_id="eval-dataset-upload",
            )
            ui.rewards = gr.Textbox(
                "",
                placeholder=_("(the run's reward)"),  # left empty: RUN_REWARD
                label=_("Rewards (NAME@WEIGHT, file.py:fn@WEIGHT)"),
                scale=4,
                elem_id="eval-rewards",
            )
            ui.samples = gr.Number(
                1, precision=0, minimum=1, maximum=64, label=_("Samples per prompt"), scale=1, elem_id="eval-samples"
            )
            ui.temperature = gr.Number(
                0.0,
                minimum=0.0,
                maximum=5.0,
                label=_("Temperature"),
                scale=1,
                elem_id="eval-temperature",
                info=_("0: greedy"),
            )
            ui.max_samples = gr.Number(
                0, precision=0, minimum=0, label=_("First N rows (0: all)"), scale=1, elem_id="eval-max"
            )
        ui.launch_btn = gr.Button(_("Evaluate"), variant="primary", elem_id="eval-launch")
        ui.msg = gr.HTML("", elem_id="eval-msg")
        with gr.Row(equal_height=True, elem_classes="aw-runbar"):
            ui.evals = gr.Dropdown([], value=None, label=_("Evaluations of this run"), scale=6, elem_id="eval-pick")
            ui.progress = gr.HTML("", elem_id="eval-progress")
        ui.summary = gr.HTML(summary_html({}), elem_id="eval-summary")
        ui.filter = gr.Radio(FILTER_CHOICES, value=FILTERS[0], label=_("Show"), elem_id="eval-filter")
        ui.table = gr.Dataframe(
            interactive=False,
            wrap=True,
            max_height=380,
            elem_id="eval-table",
            label=_("Samples (click a row for its trajectories)"),
        )
        ui.row = gr.State(None)
        ui.trajectory = gr.HTML(trajectories_html([], -1), elem_id="eval-trajectory")
        ui.timer = gr.Timer(TICK_S, active=False)
        self.ui = ui
        return ui

    def wire(self, tab) -> None:
        ui = self.ui
        quiet = dict(api_visibility="private", show_progress="hidden")
        tab.select(self.on_open, [ui.run], [ui.run, ui.dataset], **quiet)
        ui.run.change(self.on_run, [ui.run], [ui.models, ui.evals], **quiet)
        ui.dataset_upload.upload(self.on_upload, [ui.dataset_upload], [ui.dataset], api_visibility="private")
        ui.launch_btn.click(
            self.on_launch,
            [ui.run, ui.models, ui.dataset, ui.rewards, ui.samples, ui.temperature, ui.max_samples],
            [ui.msg, ui.evals, ui.timer],
            api_visibility="private",
        )
        show = dict(
            fn=self.on_show,
            inputs=[ui.run, ui.evals, ui.filter],
            outputs=[ui.progress, ui.summary, ui.table, ui.timer],
            **quiet,
        )
        ui.evals.change(**show)
        ui.filter.change(**show)
        ui.timer.tick(**show)
        ui.table.select(self.on_row, [ui.run, ui.evals], [ui.trajectory], **quiet)

    # -- handlers ----------------------------------------------------------------------------------
    def on_open(self, current):
        ids = self.studio.run_ids()
        value = current if current in ids else (self.studio.latest_run() if ids else None)
        datasets = [RUN_DATASET_CHOICE, *inp.shipped_datasets()]
        return gr.update(choices=ids, value=value), gr.update(choices=datasets)

    def on_upload(self, file):
        if not file:
            return gr.update()
        stored = self.studio.store_upload(file if isinstance(file, str) else file.name)
        return gr.update(choices=[RUN_DATASET_CHOICE, stored, *inp.shipped_datasets()], value=stored)

    def on_run(self, run_id):
        if not run_id:
            return gr.update(choices=[], value=[]), gr.update(choices=[], value=None)
        try:
            models = self.studio.model_choices(run_id)
            evals = self.studio.evaluations(run_id)
        except ValueError:
            return gr.update(choices=[], value=[]), gr.update(choices=[], value=None)
        picked = ["base"] + self.studio.checkpoints(run_id)[-1:]  # the base model and the run's latest checkpoint
        return (
            gr.update(choices=models, value=picked),
            gr.update(choices=self._eval_choices(evals), value=evals[0]["eval_id"] if evals else None),
        )

    @staticmethod
    def _eval_choices(evals: list[dict]) -> list[tuple[str, str]]:
        """What each evaluation compared, on what. Not its state: the list is not refreshed as it runs (it said
        "queued" beside a "Finished" badge); the badge beside the list shows the live state."""
        return [
            (
                " · ".join(
                    [e["eval_id"], ", ".join(map(model_label, e["models"]))]
                    + ([e["dataset"]] if e.get("dataset") else [])
                ),
                e["eval_id"],
            )
            for e in evals
        ]

    def on_launch(self, run_id, models, dataset, rewards, samples, temperature, max_samples):
        if not run_id:
            return f'<div class="aw-msg aw-msg-error">{_("Pick a run first.")}</div>', gr.update(), gr.update()
        try:
            entries = None if (not rewards or rewards.strip() == RUN_REWARD) else inp.parse_reward_text(rewards)
        except ValueError as e:
            return ERROR(e), gr.update(), gr.update()
        res = self.studio.launch_eval(
            run_id,
            list(models or []),
            None if dataset in (None, "", RUN_DATASET) else dataset,
            entries,
            int(samples or 1),
            float(temperature or 0.0),
            int(max_samples) if max_samples else None,
        )
        if not res.get("ok"):
            return (
                ERROR(res.get("error"), _("Evaluation refused:")),
                gr.update(),
                gr.update(),
            )
        evals = self.studio.evaluations(run_id)
        return (
            _view("started")(Markup(render.badge("running", _("started"))), res["eval_id"]),  # render.badge's HTML
            gr.update(choices=self._eval_choices(evals), value=res["eval_id"]),
            gr.Timer(active=True),
        )

    def on_show(self, run_id, eval_id, which):
        if not run_id or not eval_id:
            return "", summary_html({}), None, gr.Timer(active=False)
        try:
            path = self.studio.eval_path(run_id, eval_id)
        except ValueError as e:
            return (
                ERROR(e),
                summary_html({}),
                None,
                gr.Timer(active=False),
            )
        from engines.inference.evaluation import read_metrics
        from engines.runs.lifecycle import effective_status

        status = effective_status(RunDir(path))
        state = status.get("state") or "queued"
        active = state in ACTIVE_STATES
        badge = render.badge(  # render.badge's HTML
            state,
            str(render.RUN_LABEL.get(state, state))
            + (f": {engine_text.message(status.get('cause'))}" if status.get("cause") else ""),
        )
        shown = _view("state")(
            state,
            Markup(badge),
            status.get("step") or 0,
            status.get("total_steps"),
            status.get("model") if active else None,
            status.get("error"),
        )
        predictions = read_predictions(path)
        rows, columns = sample_rows(predictions, which)
        import pandas as pd

        table = pd.DataFrame(rows, columns=columns) if rows else pd.DataFrame({str(_("sample")): []})
        return (
            shown,
            summary_html(read_metrics(path)),
            table,
            gr.Timer(active=active),
        )

    def on_row(self, run_id, eval_id, evt: gr.SelectData):
        try:
            path = self.studio.eval_path(run_id, eval_id)
            row = evt.row_value if getattr(evt, "row_value", None) is not None else None
            index, sample = int(row[0]), int(row[1])
        except (ValueError, TypeError, IndexError):
            return gr.update()
        return trajectories_html(read_predictions(path), index, sample)
