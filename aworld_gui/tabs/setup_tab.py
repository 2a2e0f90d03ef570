"""Setup: one card per module (agent, datasets, reward, engine & config), each with a live status
badge and its check's messages; Launch stays disabled while any module has an error.

Every edit re-runs all checks in the check worker (about 0.1 s once warm) and refreshes every
card. Config has one source of truth, the YAML of user overrides: the form is derived from it
(config_form.py, updated by value), its fields edit keys in it, and the effective config, the memory
estimate and the run's ``run.yaml`` are computed from it.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import gradio as gr

from engines.results.check_result import field_problems

from ..rendering import glossary, render
from ..core import inputs as inp, presets
from ..rendering.i18n import Markdown, _, headers
from . import config_form, reward_card, setup_check_view
from .config_editor import ConfigEditor
from .config_form_render import render_config_form
from .engine_setup import EngineSetupPanel
from .probe_panel import ProbePanel
from .setup_files import SetupFiles
from .setup_inputs import AUTO, AUTO_CHOICE, NONE, NONE_CHOICE, SetupUI, collect
from ..core.studio import MODULE_TITLES, Studio


def inputs_key(si: inp.SetupInputs) -> str:
    """A short key of everything a check of ``si`` depends on (the run's name and note aside)."""
    fields = {k: v for k, v in si.to_dict().items() if k not in ("name", "note")}
    return hashlib.sha1(json.dumps(fields, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]


class SetupTab:
    def __init__(self, studio: Studio):
        self.studio = studio
        self.editor = ConfigEditor(studio)
        self.files = SetupFiles(studio)  # uploads, the test set's pairing, the rewards offered
        self.probe = ProbePanel(studio)  # Probe beside Launch, its report, the difficulty filter

    # -- layout ------------------------------------------------------------------------------------
    def build(self) -> SetupUI:
        ui = SetupUI()
        demo = inp.demo_inputs()
        with gr.Row(elem_classes="aw-launchbar", equal_height=True):
            with gr.Column(scale=5, min_width=400):
                ui.strip = gr.HTML(render.checks_strip(None, MODULE_TITLES, checking=True), elem_id="checks-strip")
                self.probe.build_chip(ui)
            with gr.Column(scale=2, min_width=260), gr.Row(equal_height=True):
                ui.launch_btn = gr.Button(
                    _("Launch training"), variant="primary", size="lg", interactive=False, elem_id="launch-btn"
                )
                self.probe.build_button(ui)
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
        self.probe.build()

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
                ui.agent_note = Markdown("", elem_classes="aw-muted", elem_id="agent-note")
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
                        [NONE_CHOICE] + inp.file_choices(inp.shipped_datasets(), [demo.test]),
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
                    ui.prompt_col = gr.Dropdown(
                        [AUTO_CHOICE], value=AUTO, label=_("Prompt column"), elem_id="prompt-col"
                    )
                    ui.answer_col = gr.Dropdown(
                        [AUTO_CHOICE], value=AUTO, label=_("Reference-answer column"), elem_id="answer-col"
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
                ui.reward_note = Markdown("", elem_classes="aw-muted", elem_id="reward-note")
                ui.reward_weights = gr.Dataframe(
                    value=[[inp.reward_label(inp.DEMO_REWARD), 1.0, ""]],
                    headers=headers("reward", "weight", "what it scores"),
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
        return setup_check_view.check_outputs(self.ui)

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

    def reconcile_kw(self) -> dict:
        """On every change of the check shown (an answer landed, the reconcile's own included): the page's inputs as
        they are now against those that check ran on (docs/ARCHITECTURE.md, "One spec in Setup")."""
        return dict(self.check_kw(), fn=self.on_reconcile, inputs=[*self.check_inputs(), self.ui.checked])

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
        ui.checked.change(**self.reconcile_kw())
        self.probe.wire(ui, then_check)

        # presets: load puts in every input (the form follows the spec); save writes the current setup
        then_check(
            ui.preset_load.click(self.on_preset_load, [ui.preset], self.input_components(), api_visibility="private")
        )
        ui.preset_save.click(
            self.on_preset_save, [ui.preset_name, *ui.inputs()], [ui.preset, ui.preset_msg], api_visibility="private"
        )
        # a message belongs to the state it describes: a pick or an upload of the user's ends the preset's, and
        # another agent or reward picked ends the note about an upload of one (an upload says its own)
        # (another test set picked ends the note that the last one was cleared)
        said = {ui.agent.input: [ui.agent_note], ui.test.input: [ui.data_note], ui.reward_pick.input: [ui.reward_note]}
        for listener in (
            ui.agent.input,
            ui.agent_upload.upload,
            ui.train.input,
            ui.train_upload.upload,
            ui.test.input,
            ui.test_upload.upload,
            ui.reward_pick.input,
            ui.reward_upload.upload,
        ):
            self.clears(listener, said.get(listener, []) + [ui.preset_msg])
        # file pickers and mappings: a user change → check
        check_on(ui.agent.input)
        then_check(
            ui.train.input(
                self.files.on_train_changed,
                [ui.train, ui.test],
                [ui.prompt_col, ui.answer_col, ui.test, ui.data_note],
                **private,
            )
        )
        check_on(ui.test.input)
        check_on(ui.prompt_col.input)
        check_on(ui.answer_col.input)
        # uploads
        then_check(
            ui.agent_upload.upload(
                self.files.on_agent_upload,
                [ui.agent_upload, ui.agent],
                [ui.agent, ui.agent_note],
                api_visibility="private",
            )
        )
        then_check(
            ui.train_upload.upload(
                self.files.on_data_upload,
                [ui.train_upload, ui.test],
                [ui.train, ui.prompt_col, ui.answer_col, ui.test, ui.data_note],
                api_visibility="private",
            )
        )
        then_check(
            ui.test_upload.upload(
                self.files.on_test_upload, [ui.test_upload, ui.test], [ui.test, ui.data_note], api_visibility="private"
            )
        )
        # rewards
        then_check(
            ui.reward_pick.input(
                self.files.on_rewards_picked,
                [ui.reward_pick, ui.reward_weights, ui.reward_docs, ui.problems],
                [ui.reward_weights, ui.problems],
                **private,
            )
        )
        check_on(ui.reward_weights.input)
        then_check(
            ui.reward_upload.upload(
                self.files.on_reward_upload,
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

    @staticmethod
    def clears(listener, notes: list) -> None:
        """``notes`` emptied on ``listener`` (in the page's order of events, before the handlers' own answers)."""
        listener(
            lambda: [""] * len(notes) if len(notes) > 1 else "",
            [],
            notes,
            queue=False,
            api_visibility="private",
            show_progress="hidden",
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
            return [gr.update()] * (len(self.input_components()) - 1) + [_("Pick a preset first.")]
        try:
            si = presets.load_preset(found["path"])
        except (OSError, ValueError) as e:
            said = f"**{_('Cannot load the preset')} {name}:** {e}"
            return [gr.update()] * (len(self.input_components()) - 1) + [said]
        # each load is marked apart (a second load of the same preset changes nothing else a page can see); the
        # page's Markdown keeps a class and a title, not data attributes
        loaded = f'<span class="aw-preset-loaded" title="{time.time_ns()}"></span>'
        return self.show_inputs(si, said=f"{_('Loaded the preset:')} **{name}**{loaded}")

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
        """What :meth:`show_inputs` fills: ``SetupUI.inputs()``, the engines' memory, and the notes about the inputs
        (each about an upload or a load the new inputs replace; the preset's message last)."""
        ui = self.ui
        return [*ui.inputs(), ui.config_memory, *self.notes()]

    #: the messages about one state of the inputs: an upload's (agent, data, reward), then the preset's
    NOTES = ("agent_note", "data_note", "reward_note", "preset_msg")

    def notes(self) -> list:
        return [getattr(self.ui, name) for name in self.NOTES]

    def show_inputs(self, si: inp.SetupInputs, said: str = "") -> list:
        """Updates that put ``si`` into the Setup components (a preset loaded, a run cloned from the Runs tab); the
        notes about the inputs it replaces go, and the preset's message says ``said``."""
        picks = [r.get("name") or r.get("ref") for r in si.rewards]
        files = sorted({k.rpartition(":")[0] for k in picks if ".py:" in k})
        docs = self.files.reward_registry(extra_files=[f for f in files if Path(f).is_file()])
        for key in picks:
            docs.setdefault(key, (inp.reward_label(key), ""))
        table = [[docs[k][0], r.get("weight", 1.0), docs[k][1]] for k, r in zip(picks, si.rewards)]
        tests = [si.test] if si.test else []
        return [
            gr.update(choices=inp.file_choices(inp.shipped_agents(), [si.agent]), value=si.agent),
            gr.update(choices=inp.file_choices(inp.shipped_datasets(), [si.train]), value=si.train),
            gr.update(choices=[NONE_CHOICE] + inp.file_choices(inp.shipped_datasets(), tests), value=si.test or NONE),
            *(
                gr.update(choices=[AUTO_CHOICE, *([col] if col else [])], value=col or AUTO)
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
            *[""] * (len(self.NOTES) - 1),
            said,
        ]

    def load_outputs(self) -> list:
        ui = self.ui
        return [ui.engine, ui.reward_pick, ui.reward_weights, ui.reward_docs]

    # -- handlers ----------------------------------------------------------------------------------
    def on_load(self, engine: str, picks: list[str], weights: Any):
        """Page load: engines and the reward registry from the worker."""
        engine_choices = self.engine_choices()
        docs = self.files.reward_registry()
        picks = [p for p in (picks or []) if p in docs] or ([inp.DEMO_REWARD] if inp.DEMO_REWARD in docs else [])
        choices = [(label, key) for key, (label, _) in docs.items()]
        table = self.files.weights_table(picks, weights, docs)
        return (
            gr.update(choices=engine_choices or [(engine, engine)], value=engine),
            gr.update(choices=choices, value=picks),
            table,
            docs,
        )

    def engine_choices(self) -> list[tuple[str, str]]:
        """The engine picker's choices: an unavailable engine's label says so in one word (a dropdown's label is
        translated by Gradio up to its first marker only); why it is unavailable is in the engines table below."""
        return [
            (e["name"] if e.get("available") else f"{e['name']} — {_('unavailable')}", e["name"])
            for e in self.studio.catalog().get("engines", [])
        ]

    def on_engines_refreshed(self, engine: str):
        """After an engine's environment was set up: its new availability in the list and the table."""
        choices = self.engine_choices()
        return (
            gr.update(choices=choices or [(engine, engine)], value=engine),
            render.engines_table(self.studio.catalog().get("engines", []), engine),
        )

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
            return [gr.update()] * len(setup_check_view.OUTPUT_NAMES)
        config = report["results"]["config"]
        effective = (config.get("details") or {}).get("effective")
        problems = field_problems(config) if config.get("status") == "error" else {}
        return [
            *setup_check_view.check_updates(self.studio, si, report),
            config_form.effective_for(si.engine, si.config_text, effective, inputs_key(si), problems),
        ]

    def on_reconcile(self, *args, request: gr.Request = None):
        """The page's inputs now (``args``, then the shown check's State): checked again when the shown check ran on
        other inputs, else nothing changes. A check is cancelled by the newest of the page's to reach the studio,
        which under load can be an older one; and a request's inputs are those of the page when it was sent, so a
        reconcile held on its way checks a state the page has left. Its answer changes the check shown, which runs
        this again: the page ends on a check of what it shows, however the answers interleave."""
        *inputs, checked = args
        if (checked or {}).get("inputs") == inputs_key(collect(*inputs)):
            return [gr.skip()] * len(setup_check_view.OUTPUT_NAMES)
        return self.on_check(*inputs, request=request)

    # -- engine & config -------------------------------------------------------------------------------
    def engine_note(self, memory: dict, config_text: str) -> str:
        """What an engine picked did to the overrides (made in the page: static/yaml_edit.js, ``switchEngine``)."""
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
