"""Setup: one card per module (agent, datasets, reward, engine & config), each with a live status
badge and its check's messages; Launch stays disabled while any module has an error.

Every edit re-runs all checks in the check worker (about 0.1 s once warm) and refreshes every
card. Config has one source of truth, the YAML of user overrides: the form is rendered from it
(``@gr.render``, config_form.py), its fields edit keys in it, and the effective config, the memory
estimate and the run's ``run.yaml`` are computed from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import yaml


from ..rendering import glossary, render
from ..core import presets
from ..rendering.i18n import Markdown, _
from ..core import inputs as inp
from . import reward_card
from .config_editor import ConfigEditor
from . import config_form
from .config_form_render import render_config_form
from .engine_setup import EngineSetupPanel
from ..core.studio import MODULE_TITLES, Studio
from ..worker.check_worker import WorkerError

AUTO = "(auto-detect)"
NONE = "(none)"


@dataclass
class SetupUI:
    strip: Any = None
    launch_btn: Any = None
    launch_msg: Any = None
    agent: Any = None
    agent_upload: Any = None
    agent_note: Any = None
    agent_status: Any = None
    agent_spec: Any = None
    train: Any = None
    train_upload: Any = None
    test: Any = None
    test_upload: Any = None
    prompt_col: Any = None
    answer_col: Any = None
    data_status: Any = None
    train_preview: Any = None
    test_preview: Any = None
    rendered: Any = None
    reward_pick: Any = None
    reward_upload: Any = None
    reward_note: Any = None
    reward_weights: Any = None
    reward_status: Any = None
    reward_preview: Any = None
    reward_calls: Any = None
    engine: Any = None
    engines_table: Any = None
    config_status: Any = None
    config_yaml: Any = None
    effective: Any = None
    memory_estimate: Any = None  # the config check's memory estimate (HTML)
    checked: Any = None  # gr.State: the last check's effective config, tagged with its spec
    reward_docs: Any = None  # gr.State: {key: (label, description)}
    cli: Any = None
    problems: Any = None  # gr.State: {module: why its upload cannot be used}
    run_name: Any = None
    run_note: Any = None
    preset: Any = None
    preset_load: Any = None
    preset_name: Any = None
    preset_save: Any = None
    preset_msg: Any = None
    config_memory: Any = None
    config_note: Any = None
    data_note: Any = None

    def inputs(self) -> list:
        return [
            self.agent,
            self.train,
            self.test,
            self.prompt_col,
            self.answer_col,
            self.reward_pick,
            self.reward_weights,
            self.config_yaml,
            self.engine,
            self.problems,
            self.run_name,
            self.run_note,
        ]


def collect(
    agent, train, test, prompt_col, answer_col, picks, weights, config_text, engine, problems=None, name="", note=""
) -> inp.SetupInputs:
    """The SetupInputs the components describe."""
    weights_by_row = _weights(weights)
    rewards = []
    for i, key in enumerate(picks or []):
        w = weights_by_row[i] if i < len(weights_by_row) else 1.0
        rewards.append({"ref": key, "weight": w} if ":" in key else {"name": key, "weight": w})
    columns = {k: v for k, v in (("prompt", prompt_col), ("answer", answer_col)) if v and v != AUTO}
    return inp.SetupInputs(
        agent=agent or None,
        train=train or None,
        test=None if (not test or test == NONE) else test,
        rewards=rewards,
        config_text=config_text or "",
        engine=engine or inp.DEMO_ENGINE,
        columns=columns,
        problems=dict(problems or {}),
        name=(name or "").strip(),
        note=(note or "").strip(),
    )


def _weights(table: Any) -> list[float]:
    rows = _rows(table)
    out = []
    for r in rows:
        try:
            w = float(r[1])
            out.append(w if math.isfinite(w) else 1.0)
        except (TypeError, ValueError, IndexError):
            out.append(1.0)
    return out


def _rows(table: Any) -> list[list]:
    if table is None:
        return []
    if hasattr(table, "values") and hasattr(table, "columns"):  # pandas
        return table.values.tolist()
    if isinstance(table, dict) and "data" in table:
        return table["data"]
    return list(table)


class SetupTab:
    def __init__(self, studio: Studio):
        self.studio = studio
        self.editor = ConfigEditor(studio)

    # -- layout ------------------------------------------------------------------------------------
    def build(self) -> SetupUI:
        ui = SetupUI()
        demo = inp.demo_inputs()
        with gr.Row(elem_classes="aw-launchbar", equal_height=True):
            with gr.Column(scale=5, min_width=400):
                ui.strip = gr.HTML(render.checks_strip(None, MODULE_TITLES, checking=True), elem_id="checks-strip")
            with gr.Column(scale=2, min_width=260):
                ui.launch_btn = gr.Button(
                    _("Launch training"), variant="primary", size="lg", interactive=False, elem_id="launch-btn"
                )
        with gr.Accordion(_("Presets: load a whole setup, or save this one"), open=False, elem_id="presets"):
            with gr.Row(equal_height=True, elem_classes="aw-runbar"):
                ui.preset = gr.Dropdown(
                    self.preset_choices(), value=None, label=_("Preset"), scale=4, elem_id="preset-select"
                )
                ui.preset_load = gr.Button(_("Load"), scale=1, size="md", min_width=100, elem_id="preset-load")
                ui.preset_name = gr.Textbox(
                    label=_("Save this setup as"),
                    max_lines=1,
                    scale=3,
                    placeholder=_("a name, e.g. my-letters-lr1e-3"),
                    elem_id="preset-name",
                )
                ui.preset_save = gr.Button(_("Save"), scale=1, size="md", min_width=100, elem_id="preset-save")
            ui.preset_msg = Markdown("", elem_classes="aw-muted", elem_id="preset-msg")
        with gr.Row(equal_height=True, elem_classes="aw-runbar"):
            ui.run_name = gr.Textbox(
                label=_("Run name (optional)"),
                max_lines=1,
                scale=3,
                elem_id="run-name",
                placeholder=_("e.g. letters-lr1e-3 — also part of the run id"),
            )
            ui.run_note = gr.Textbox(
                label=_("Note (optional)"),
                max_lines=2,
                scale=7,
                elem_id="run-note",
                placeholder=_("what this run tries; editable later in Runs"),
            )
        ui.launch_msg = gr.HTML("", elem_id="launch-msg", elem_classes="aw-launch-msg")

        # Agent ------------------------------------------------------------------------------------
        with gr.Row(equal_height=False):
            with gr.Column(scale=5, min_width=360, elem_classes="aw-card"):
                ui.agent_status = gr.HTML(
                    render.module_status("agent", _("Agent"), None, checking=True), elem_id="status-agent"
                )
                with gr.Row(equal_height=False, elem_classes="aw-runbar"):
                    ui.agent = gr.Dropdown(
                        inp.file_choices(inp.shipped_agents(), [demo.agent]),
                        value=demo.agent,
                        label=_("Agent config (YAML)"),
                        allow_custom_value=True,
                        scale=4,
                        elem_id="agent-select",
                    )
                    ui.agent_upload = gr.UploadButton(
                        _("Upload YAML"),
                        file_types=[".yaml", ".yml"],
                        size="md",
                        scale=1,
                        min_width=130,
                        elem_id="agent-upload",
                    )
                ui.agent_note = Markdown("", elem_classes="aw-muted")
                ui.agent_spec = gr.HTML(render.agent_spec(None), elem_id="agent-spec")

            # Datasets ------------------------------------------------------------------------------
            with gr.Column(scale=7, min_width=420, elem_classes="aw-card", elem_id="dataset-card"):
                ui.data_status = gr.HTML(
                    render.module_status("dataset", _("Datasets"), None, checking=True), elem_id="status-dataset"
                )
                with gr.Row(equal_height=False, elem_classes="aw-runbar"):
                    ui.train = gr.Dropdown(
                        inp.file_choices(inp.shipped_datasets(), [demo.train]),
                        value=demo.train,
                        label=_("Train set"),
                        allow_custom_value=True,
                        scale=4,
                        elem_id="train-select",
                    )
                    ui.train_upload = gr.UploadButton(
                        _("Upload train"),
                        file_types=list(inp.DATASET_SUFFIXES),
                        size="md",
                        scale=1,
                        min_width=130,
                        elem_id="train-upload",
                    )
                with gr.Row(equal_height=False, elem_classes="aw-runbar"):
                    ui.test = gr.Dropdown(
                        [(NONE, NONE)] + inp.file_choices(inp.shipped_datasets(), [demo.test]),
                        value=demo.test,
                        label=_("Test set (optional)"),
                        allow_custom_value=True,
                        scale=4,
                        elem_id="test-select",
                    )
                    ui.test_upload = gr.UploadButton(
                        _("Upload test"),
                        file_types=list(inp.DATASET_SUFFIXES),
                        size="md",
                        scale=1,
                        min_width=130,
                        elem_id="test-upload",
                    )
                ui.data_note = Markdown("", elem_classes="aw-muted", elem_id="data-note")
                with gr.Row():
                    ui.prompt_col = gr.Dropdown([AUTO], value=AUTO, label=_("Prompt column"), elem_id="prompt-col")
                    ui.answer_col = gr.Dropdown(
                        [AUTO], value=AUTO, label=_("Reference-answer column"), elem_id="answer-col"
                    )
                with gr.Tabs():
                    with gr.Tab(_("Train rows"), elem_id="tab-train-rows"):
                        ui.train_preview = gr.Dataframe(
                            interactive=False, max_height=230, wrap=True, elem_id="train-preview"
                        )
                    with gr.Tab(_("Test rows"), elem_id="tab-test-rows"):
                        ui.test_preview = gr.Dataframe(interactive=False, max_height=230, wrap=True)
                ui.rendered = gr.HTML("", elem_id="rendered")

        # Reward ------------------------------------------------------------------------------------
        with gr.Row(equal_height=False):
            with gr.Column(scale=6, min_width=380, elem_classes="aw-card"):
                ui.reward_status = gr.HTML(
                    render.module_status("reward", _("Reward"), None, checking=True), elem_id="status-reward"
                )
                with gr.Row(equal_height=False, elem_classes="aw-runbar"):
                    ui.reward_pick = gr.Dropdown(
                        [(inp.reward_label(inp.DEMO_REWARD), inp.DEMO_REWARD)],
                        value=[inp.DEMO_REWARD],
                        multiselect=True,
                        label=_("Reward functions (registry and files)"),
                        scale=4,
                        elem_id="reward-pick",
                        allow_custom_value=True,
                        info=_(
                            "built-ins, TRL's and verl's rewards, your files; type "
                            "module:factory(arg=value) for a factory"
                        ),
                    )
                    ui.reward_upload = gr.UploadButton(
                        _("Upload .py"), file_types=[".py"], size="md", scale=1, min_width=130, elem_id="reward-upload"
                    )
                ui.reward_note = Markdown("", elem_classes="aw-muted")
                ui.reward_weights = gr.Dataframe(
                    value=[[inp.reward_label(inp.DEMO_REWARD), 1.0, ""]],
                    headers=["reward", "weight", "what it scores"],
                    datatype=["str", "number", "str"],
                    column_count=3,
                    interactive=True,
                    static_columns=[0, 2],
                    column_widths=["38%", "14%", "48%"],
                    label=_("Weights (edit the weight column)"),
                    wrap=True,
                    max_height=200,
                    elem_id="reward-weights",
                )
                Markdown(
                    f"**{_('Preview on sample rows')}** — {_('the reference answer and a wrong one, scored by each function (user code runs in the check worker, never in the studio).')}",
                    elem_classes="aw-muted",
                )
                ui.reward_preview = gr.Dataframe(interactive=False, max_height=230, wrap=True, elem_id="reward-preview")
                ui.reward_calls = gr.HTML(reward_card.calls_html(None), elem_id="reward-calls")

            # Engine & config -----------------------------------------------------------------------
            with gr.Column(scale=6, min_width=380, elem_classes="aw-card"):
                ui.config_status = gr.HTML(
                    render.module_status("config", _("Engine & config"), None, checking=True), elem_id="status-config"
                )
                ui.engine = gr.Dropdown(
                    [(inp.DEMO_ENGINE, inp.DEMO_ENGINE)],
                    value=inp.DEMO_ENGINE,
                    label=_("Training engine"),
                    elem_id="engine-select",
                )
                ui.engines_table = gr.HTML("", elem_id="engines-table")
                ui.config_note = Markdown("", elem_classes="aw-muted", elem_id="config-note")
                self.setup_panel = EngineSetupPanel(self.studio).build()  # an engine's own environment
                # the one spec, shown in the Advanced accordion below; the form is rendered from it
                ui.config_yaml = gr.Code(
                    demo.config_text,
                    language="yaml",
                    lines=8,
                    interactive=True,
                    label=_("Config overrides"),
                    elem_id="config-yaml",
                    render=False,
                )
                ui.checked = gr.State(None)
                ui.config_memory = gr.JSON(config_form.fresh_memory(demo.engine), visible=False)
                self.render_form(ui)
                ui.memory_estimate = gr.HTML(render.memory_estimate(None), elem_id="memory-estimate")
                self.editor.build()
                with gr.Accordion(_("What these settings mean"), open=False, elem_id="glossary-setup"):
                    Markdown(glossary.as_markdown(glossary.TRAINING_TERMS), elem_classes="aw-muted")
                with gr.Accordion(_("Advanced: config YAML (overrides)"), open=False):
                    ui.config_yaml.render()
                with gr.Accordion(_("Effective config (after defaults)"), open=False):
                    ui.effective = gr.Code(
                        "",
                        language="yaml",
                        lines=10,
                        interactive=False,
                        label=_("Effective config"),
                        elem_id="effective-config",
                    )
                with gr.Accordion(_("Same run from the command line"), open=False):
                    ui.cli = gr.Code("", language="shell", lines=6, interactive=False, label=_("CLI"), wrap_lines=True)
        ui.reward_docs = gr.State({})
        ui.problems = gr.State({})
        self.ui = ui
        return ui

    # -- the config form, rendered from the spec ---------------------------------------------------------
    def render_form(self, ui: SetupUI) -> None:
        """The model picker and the engine's main settings (config_form_render.py)."""
        render_config_form(self.studio, ui.engine, ui.config_yaml, ui.checked)

    # -- wiring ------------------------------------------------------------------------------------
    def check_inputs(self) -> list:
        return self.ui.inputs()

    def check_outputs(self) -> list:
        ui = self.ui
        return [
            ui.strip,
            ui.agent_status,
            ui.agent_spec,
            ui.data_status,
            ui.train_preview,
            ui.test_preview,
            ui.rendered,
            ui.prompt_col,
            ui.answer_col,
            ui.reward_status,
            ui.reward_preview,
            ui.reward_calls,
            ui.config_status,
            ui.effective,
            ui.launch_btn,
            ui.engines_table,
            ui.cli,
            ui.memory_estimate,
            ui.checked,
        ]

    def check_kw(self) -> dict:
        """The check of the Setup. "multiple": a newer check starts at once and cancels this page's older one
        (Studio.check); queued behind it instead, it would wait for a hanging check's whole time limit."""
        return dict(
            fn=self.on_check,
            inputs=self.check_inputs(),
            outputs=self.check_outputs(),
            show_progress="minimal",
            show_progress_on=[self.ui.strip],
            trigger_mode="multiple",
            api_visibility="private",
            concurrency_id="checks",
            concurrency_limit=4,
        )

    def then_check(self, event):
        """``event`` followed by the check of the Setup."""
        return event.then(**self.check_kw())

    def check_on(self, listener):
        """The check of the Setup on ``listener`` (a component's event, e.g. ``agent.input``)."""
        return listener(**self.check_kw())

    def wire(self) -> None:
        ui = self.ui
        then_check, check_on = self.then_check, self.check_on
        private = dict(api_visibility="private", show_progress="hidden")

        # presets: load puts in every input (the form follows the spec); save writes the current setup
        then_check(
            ui.preset_load.click(
                self.on_preset_load, [ui.preset], [*self.input_components(), ui.preset_msg], api_visibility="private"
            )
        )
        ui.preset_save.click(
            self.on_preset_save, [ui.preset_name, *ui.inputs()], [ui.preset, ui.preset_msg], api_visibility="private"
        )
        # file pickers and mappings: a user change → check
        check_on(ui.agent.input)
        then_check(
            ui.train.input(
                self.on_train_changed,
                [ui.train, ui.test],
                [ui.prompt_col, ui.answer_col, ui.test, ui.data_note],
                **private,
            )
        )
        then_check(ui.test.input(lambda: "", [], [ui.data_note], queue=False, **private))
        check_on(ui.prompt_col.input)
        check_on(ui.answer_col.input)
        # uploads
        then_check(
            ui.agent_upload.upload(
                self.on_agent_upload, [ui.agent_upload, ui.agent], [ui.agent, ui.agent_note], api_visibility="private"
            )
        )
        then_check(
            ui.train_upload.upload(
                self.on_data_upload,
                [ui.train_upload, ui.test],
                [ui.train, ui.prompt_col, ui.answer_col, ui.test, ui.data_note],
                api_visibility="private",
            )
        )
        then_check(
            ui.test_upload.upload(
                self.on_test_upload, [ui.test_upload, ui.test], [ui.test, ui.data_note], api_visibility="private"
            )
        )
        # rewards
        then_check(
            ui.reward_pick.input(
                self.on_rewards_picked,
                [ui.reward_pick, ui.reward_weights, ui.reward_docs, ui.problems],
                [ui.reward_weights, ui.problems],
                **private,
            )
        )
        check_on(ui.reward_weights.input)
        then_check(
            ui.reward_upload.upload(
                self.on_reward_upload,
                [ui.reward_upload, ui.reward_pick, ui.reward_weights, ui.reward_docs, ui.problems],
                [ui.reward_pick, ui.reward_weights, ui.reward_docs, ui.reward_note, ui.problems],
                api_visibility="private",
            )
        )
        # engine & config: an engine picked swaps each engine's own overrides in the page; any change of the spec
        # (typed, a field's edit, a key set, a preset, a clone, an engine) is checked
        ui.engine.input(
            None,
            [ui.engine, ui.config_yaml, ui.config_memory],
            [ui.config_yaml, ui.config_memory],
            js=config_form.switch_engine_js(inp.DEMO_ENGINE, inp.engine_demo_configs()),
            queue=False,
            **private,
        ).then(self.engine_note, [ui.config_memory, ui.config_yaml], [ui.config_note], **private)
        check_on(ui.config_yaml.change)
        check_on(ui.engine.change)
        self.editor.wire(ui.engine, ui.config_yaml)
        # an engine's environment set up from here: its availability refreshed, then every check again
        self.setup_panel.wire(
            ui.engine,
            lambda: [
                dict(
                    fn=self.on_engines_refreshed,
                    inputs=[ui.engine],
                    outputs=[ui.engine, ui.engines_table],
                    api_visibility="private",
                    show_progress="hidden",
                ),
                self.check_kw(),
            ],
        )

    # -- presets -----------------------------------------------------------------------------------
    def preset_choices(self) -> list[tuple[str, str]]:
        return [
            (f"{name} · {p['kind']}" + (f" — {p['description']}" if p["description"] else ""), name)
            for name, p in presets.list_presets(self.studio.runs_dir).items()
        ]

    def on_preset_load(self, name):
        found = presets.list_presets(self.studio.runs_dir).get(name or "")
        if not found:
            return [gr.update()] * len(self.input_components()) + [_("Pick a preset first.")]
        try:
            si = presets.load_preset(found["path"])
        except (OSError, ValueError) as e:
            return [gr.update()] * len(self.input_components()) + [f"**{_('Cannot load the preset')} {name}:** {e}"]
        return [*self.show_inputs(si), f"{_('Loaded the preset, checking it now:')} **{name}**"]

    def on_preset_save(self, name, *values):
        try:
            path = presets.save_preset(self.studio.runs_dir, name, collect(*values))
        except (OSError, ValueError) as e:
            return gr.update(), f"**{_('Not saved:')}** {e}"
        return (
            gr.update(choices=self.preset_choices(), value=path.stem),
            f"{_('Saved as preset')} **{path.stem}** (`{path}`).",
        )

    def input_components(self) -> list:
        """What :meth:`show_inputs` fills: ``SetupUI.inputs()`` and the engines' memory."""
        return [*self.ui.inputs(), self.ui.config_memory]

    def show_inputs(self, si: inp.SetupInputs) -> list:
        """Updates that put ``si`` into the Setup components (e.g. a run cloned from the Runs tab)."""
        picks = [r.get("name") or r.get("ref") for r in si.rewards]
        files = sorted({k.rpartition(":")[0] for k in picks if ".py:" in k})
        docs = self.reward_registry(extra_files=[f for f in files if Path(f).is_file()])
        for key in picks:
            docs.setdefault(key, (inp.reward_label(key), ""))
        table = [[docs[k][0], r.get("weight", 1.0), docs[k][1]] for k, r in zip(picks, si.rewards)]
        tests = [si.test] if si.test else []
        return [
            gr.update(choices=inp.file_choices(inp.shipped_agents(), [si.agent]), value=si.agent),
            gr.update(choices=inp.file_choices(inp.shipped_datasets(), [si.train]), value=si.train),
            gr.update(choices=[(NONE, NONE)] + inp.file_choices(inp.shipped_datasets(), tests), value=si.test or NONE),
            *(
                gr.update(choices=[AUTO, *([col] if col else [])], value=col or AUTO)
                for col in (si.columns.get("prompt"), si.columns.get("answer"))
            ),
            gr.update(choices=[(label, key) for key, (label, _) in docs.items()], value=picks),
            table,
            si.config_text,
            gr.update(value=si.engine),
            dict(si.problems),
            si.name,
            si.note,
            config_form.fresh_memory(si.engine),
        ]

    def load_outputs(self) -> list:
        ui = self.ui
        return [ui.engine, ui.reward_pick, ui.reward_weights, ui.reward_docs]

    # -- handlers ----------------------------------------------------------------------------------
    def on_load(self, engine: str, picks: list[str], weights: Any):
        """Page load: engines and the reward registry from the worker."""
        engine_choices = self.engine_choices()
        docs = self.reward_registry()
        picks = [p for p in (picks or []) if p in docs] or ([inp.DEMO_REWARD] if inp.DEMO_REWARD in docs else [])
        choices = [(label, key) for key, (label, _) in docs.items()]
        table = self._weights_table(picks, weights, docs)
        return (
            gr.update(choices=engine_choices or [(engine, engine)], value=engine),
            gr.update(choices=choices, value=picks),
            table,
            docs,
        )

    def engine_choices(self) -> list[tuple[str, str]]:
        return [
            (e["name"] if e.get("available") else f"{e['name']} — unavailable: {e.get('reason')}", e["name"])
            for e in self.studio.catalog().get("engines", [])
        ]

    def on_engines_refreshed(self, engine: str):
        """After an engine's environment was set up: its new availability in the list and the table."""
        choices = self.engine_choices()
        return (
            gr.update(choices=choices or [(engine, engine)], value=engine),
            render.engines_table(self.studio.catalog().get("engines", []), engine),
        )

    def reward_registry(self, extra_files: list[str] | None = None) -> dict[str, tuple[str, str]]:
        """{key: (label, description)}: built-ins, the ecosystem's rewards (catalog), then the functions of
        shipped and extra reward files."""
        docs = reward_card.registry(self.studio.catalog())
        for path in [*inp.shipped_reward_files(), *(extra_files or [])]:
            try:
                for fn in self.studio.reward_functions(path):
                    docs[fn["ref"]] = (inp.reward_label(fn["ref"]), fn.get("doc", ""))
            except WorkerError:
                continue
        return docs

    def _weights_table(self, picks: list[str], weights: Any, docs: dict) -> list[list]:
        old = {r[0]: r[1] for r in _rows(weights) if r}
        out = []
        for key in picks or []:
            label, desc = docs.get(key, (inp.reward_label(key), ""))
            out.append([label, old.get(label, 1.0), desc])
        return out

    def on_check(
        self,
        agent,
        train,
        test,
        prompt_col,
        answer_col,
        picks,
        weights,
        config_text,
        engine,
        problems,
        name,
        note,
        request: gr.Request = None,
    ):
        """Inputs: :meth:`SetupUI.inputs`; the last output is the effective config tagged with its spec."""
        si = collect(
            agent, train, test, prompt_col, answer_col, picks, weights, config_text, engine, problems, name, note
        )
        # a newer check from this page cancels this one: it then changes nothing on the page
        page = getattr(request, "session_hash", None)
        report = self.studio.check(si, client=page)
        if report.get("cancelled"):
            return [gr.update()] * len(self.check_outputs())
        effective = (report["results"]["config"].get("details") or {}).get("effective")
        return [*self.check_updates(si, report), config_form.effective_for(si.engine, si.config_text, effective)]

    def check_updates(self, si: inp.SetupInputs, report: dict) -> list:
        res = report["results"]
        prev = report.get("preview") or {}
        train_prev, test_prev = prev.get("train") or {}, prev.get("test") or {}
        details = (agent := res["agent"]).get("details") or {}
        agent_spec = render.agent_spec(
            details.get("spec"),
            details.get("tool_schemas"),
            details.get("tool_servers"),
            details.get("mcp_servers"),
            details.get("origins"),
            config_model=(config_form.parse_overrides(si.config_text) or {}).get("model"),
        )
        cols = (
            train_prev.get("columns") or ((res["dataset"].get("details") or {}).get("train") or {}).get("columns") or []
        )
        mapped = (res["dataset"].get("details") or {}).get("columns") or {}
        p_val = si.columns.get("prompt") or AUTO
        a_val = si.columns.get("answer") or AUTO
        prompt_dd = gr.update(
            choices=[AUTO, *cols],
            value=p_val if p_val in [AUTO, *cols] else AUTO,
            info=f"detected: {mapped.get('prompt')}" if mapped.get("prompt") else "",
        )
        answer_dd = gr.update(
            choices=[AUTO, *cols],
            value=a_val if a_val in [AUTO, *cols] else AUTO,
            info=f"detected: {mapped.get('answer')}" if mapped.get("answer") else "",
        )
        # config card: engine + config
        eng, cfg = res["engine"], res["config"]
        worst = max((eng, cfg), key=lambda r: {"error": 2, "warning": 1}.get(r["status"], 0))
        combined = {
            "status": worst["status"],
            "message": (cfg["message"] if eng["status"] != "error" else eng["message"]),
            "warnings": [*eng.get("warnings", []), *cfg.get("warnings", [])],
        }
        if eng["status"] == "error" and cfg["status"] == "error" and cfg["message"] != eng["message"]:
            combined["message"] = f"{eng['message']} · {cfg['message']}"
        effective = (cfg.get("details") or {}).get("effective")
        cat = self.studio.catalog()
        return [
            render.checks_strip(res, MODULE_TITLES, seconds=report.get("wall_s"), check_id=report.get("check_id")),
            render.module_status("agent", _("Agent"), agent),
            agent_spec,
            render.module_status("dataset", _("Datasets"), res["dataset"]),
            _frame(train_prev),
            _frame(test_prev),
            render.prompt_block(report.get("prompt")),
            prompt_dd,
            answer_dd,
            render.module_status("reward", _("Reward"), res["reward"]),
            reward_card.reward_preview_frame(res["reward"]),
            reward_card.calls_html(res["reward"]),
            render.module_status("config", _("Engine & config"), combined),
            yaml.safe_dump(effective, sort_keys=False)
            if effective
            else "# fix the errors above to see the effective config",
            gr.update(interactive=bool(report.get("ok"))),
            render.engines_table(cat.get("engines", []), si.engine),
            si.cli_command()
            + ("  \\\n  --config config.yaml   # the overrides YAML" if si.config_text.strip() else ""),
            render.memory_estimate((cfg.get("details") or {}).get("memory"), cfg["status"]),
        ]

    def on_train_changed(self, train, test):
        """A new train set: column mappings back to auto-detect, and a shipped test set that belongs to
        another train set cleared (evaluation would score the wrong task), with a note saying so."""
        test_update, note = self._test_for(train, test)
        return gr.update(value=AUTO), gr.update(value=AUTO), test_update, note

    @staticmethod
    def _test_for(train, test) -> tuple[Any, str]:
        if not test or test == NONE or inp.paired_test(train, test):
            return gr.update(), ""
        return (
            gr.update(value=NONE),
            f"{_('The test set belongs to another training set, so it was cleared:')} **{Path(test).name}** — "
            f"{_('upload or pick a test set for this data, or train without one.')}",
        )

    def on_agent_upload(self, file, current):
        if not file:
            return gr.update(), ""
        stored = self.studio.store_upload(file if isinstance(file, str) else file.name)
        path, notes = inp.resolve_agent_upload(stored)
        choices = inp.file_choices(inp.shipped_agents(), [path])
        note = (
            (f"{_('Relative paths in the upload:')} " + "; ".join(notes))
            if notes
            else f"{_('Uploaded')} {Path(stored).name}"
        )
        masked = inp.masked_secrets(stored)
        if masked:
            note += (
                f". {_('Secrets written in it were not stored:')} {', '.join(masked)} {_('now read')} `****`; "
                f"{_('pass them as')} `${{ENV_VAR}}` (docs/SECURITY.md)"
            )
        return gr.update(choices=choices, value=path), note

    def on_data_upload(self, file, test):
        if not file:
            return gr.update(), gr.update(), gr.update(), gr.update(), gr.update()
        stored = self.studio.store_upload(file if isinstance(file, str) else file.name)
        test_update, note = self._test_for(stored, test)
        return (
            gr.update(choices=inp.file_choices(inp.shipped_datasets(), [stored]), value=stored),
            gr.update(value=AUTO),
            gr.update(value=AUTO),
            test_update,
            note,
        )

    def on_test_upload(self, file, current):
        if not file:
            return gr.update(), gr.update()
        stored = self.studio.store_upload(file if isinstance(file, str) else file.name)
        return (
            gr.update(choices=[(NONE, NONE)] + inp.file_choices(inp.shipped_datasets(), [stored]), value=stored),
            "",
        )

    def on_rewards_picked(self, picks, weights, docs, problems):
        """A new choice of rewards replaces a failed upload's error (the user moved on from it)."""
        problems = {k: v for k, v in (problems or {}).items() if k != "reward"}
        return self._weights_table(picks, weights, docs or {}), problems

    def on_reward_upload(self, file, picks, weights, docs, problems):
        """An uploaded reward file's functions join the picks. One that cannot be imported (or defines
        no function) puts the Reward card in error until it is replaced or another reward is picked
        — the previous reward must not train silently in its place."""
        problems = {k: v for k, v in (problems or {}).items() if k != "reward"}
        if not file:
            return gr.update(), gr.update(), docs, "", problems
        stored = self.studio.store_upload(file if isinstance(file, str) else file.name)
        name = Path(stored).name
        try:
            fns = self.studio.reward_functions(stored)
            why = None if fns else "it defines no public function"
        except WorkerError as e:
            why = str(e)
        if why:
            problems["reward"] = (
                f"the uploaded reward file {name} cannot be used: {why} — fix it and upload it "
                "again, or pick another reward"
            )
            return gr.update(), gr.update(), docs, f"**{_('Cannot use')} {name}:** {why}", problems
        docs = dict(docs or {})
        for fn in fns:
            docs[fn["ref"]] = (inp.reward_label(fn["ref"]), fn.get("doc", ""))
        # the upload replaces a picked function of the same file name (a new version of it);
        # otherwise its first function is added
        same = {f"{Path(stored).name}:{fn['name']}": fn["ref"] for fn in fns}
        picks = [same.get(_file_fn(p), p) for p in picks or []]
        if not any(fn["ref"] in picks for fn in fns):
            picks.append(fns[0]["ref"])
        choices = [(label, key) for key, (label, _) in docs.items()]
        names = ", ".join(f["name"] for f in fns)
        return (
            gr.update(choices=choices, value=picks),
            self._weights_table(picks, weights, docs),
            docs,
            f"{_('Loaded')} {Path(stored).name}: {names} ({_('checked in the worker')})",
            problems,
        )

    # -- engine & config -------------------------------------------------------------------------------
    def engine_note(self, memory: dict, config_text: str) -> str:
        """What an engine picked did to the overrides (config_form.switch_engine, made in the page)."""
        memory = memory or {}
        previous, engine = memory.get("previous"), memory.get("engine")
        if not previous or previous == engine:
            return ""
        if memory.get("demo"):
            start = _("starts from its own config for the demo.")
        elif (config_text or "").strip():
            start = _("starts from its earlier overrides.")
        else:
            start = _("starts from its defaults.")
        return (
            f"{_('Each engine keeps its own config overrides: these are kept aside for')} **{previous}** "
            f"{_('(they come back if you switch back);')} **{engine}** {start}"
        )


def _file_fn(key: str) -> str:
    """``/x/y/letter_reward.py:letter_reward`` → ``letter_reward.py:letter_reward``."""
    target, _, attr = key.rpartition(":")
    return f"{Path(target).name}:{attr}" if target.endswith(".py") else key


def _frame(preview: dict | None):
    import pandas as pd

    if not preview:
        return pd.DataFrame()
    if preview.get("error"):
        return pd.DataFrame({"error": [preview["error"]]})
    return pd.DataFrame(preview.get("rows") or [], columns=preview.get("columns"))
