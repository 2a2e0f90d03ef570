"""Model-based test of the Setup's config, without a browser: random seeded sequences of 8 user steps run through
the Setup's own functions (the preset and clone handlers, the model picker, the reward upload, the check, Launch's
preparation), and after every step every view equals the model (testing/setup_model.py): the overrides YAML, the
form rendered from it, the model picker; after a real check the form's other fields and the effective config; after
Launch's preparation run.yaml. The edits the page makes of the YAML text (a field's, an engine picked: the one
implementation is aworld_gui/static/yaml_edit.js, unit-tested in tests/test_browser_config_form.py and run in the
studio by tests/test_browser_setup_model.py) are modelled here on the values: the YAML parsed, the key set, dumped.

``AWORLD_SETUP_SEQUENCES=5000`` runs a longer search by hand (default 200)."""

from __future__ import annotations

import os

import gradio as gr
import pytest
import yaml

from aworld_gui.tabs import config_form
from aworld_gui.core import inputs as inp
from aworld_gui.core.run_cache import RunCache
from aworld_gui.tabs.setup_inputs import collect
from aworld_gui.tabs.setup_tab import SetupTab
from aworld_gui.core.studio import Studio
from testing.setup_model import (
    BOX,
    OTHER_ENGINE,
    Model,
    Step,
    break_yaml,
    hand_edit,
    reward_file,
    same,
    sequence,
    unbreak,
)

SEQUENCES = int(os.environ.get("AWORLD_SETUP_SEQUENCES", "200"))
CHECK_EVERY = 20  # a real check (about 0.5 s) after the last step of every 20th sequence
MIDWAY_EVERY = 10  # and after the 4th step of every 10th (its answer must not show once the spec changed)
LAUNCH_EVERY = 50  # Launch's preparation (run.yaml) after every 50th


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    studio = Studio(tmp_path_factory.mktemp("setup-model") / "runs", cache=RunCache())
    studio.start()
    tab = SetupTab(studio)
    info = studio.engine_info("trl")
    # two runs to clone: their run.yaml written by Launch's preparation (no training)
    clones, runs = [], []
    for text in ("max_steps: 7\nlearning_rate: 0.003\nuse_peft: true\n", "beta: 0.08\nmax_completion_length: 3\n"):
        si = inp.demo_inputs()
        si.config_text = text
        res = studio.worker.call("prepare", inputs=si.to_dict(), runs_dir=str(studio.runs_dir), timeout_s=180)
        assert res.get("ok"), res
        runs.append(res["run_id"])
        config = yaml.safe_load(studio.spec_text(res["run_id"]))["config"]
        clones.append({k: v for k, v in config.items() if info["defaults"].get(k, object()) != v})
    models = [m["path"] for m in studio.catalog().get("models") or []][:2]
    assert len(models) == 2, "the shipped tiny models are listed"
    yield studio, tab, clones, runs, models
    studio.close()


class Logic:
    """The Setup's state as the page holds it, changed only by the Setup's own functions."""

    def __init__(self, studio: Studio, tab: SetupTab, runs: list[str], models: list[str], upload):
        self.studio, self.tab, self.runs, self.models, self.upload = studio, tab, runs, models, upload
        demo = inp.demo_inputs()
        self.values = dict(
            agent=demo.agent,
            train=demo.train,
            test=demo.test,
            prompt_col=None,
            answer_col=None,
            picks=[inp.DEMO_REWARD],
            weights=[["letter_reward", 1.0, ""]],
            config_text=demo.config_text,
            engine=demo.engine,
            problems={},
            name="",
            note="",
        )
        self.put_aside: dict[str, str] = {}  # each engine's text, put aside when another engine is picked
        self.checked, self.docs = None, {}

    @property
    def text(self) -> str:
        return self.values["config_text"]

    def edit(self, key, value):  # a field's edit, on the values (the page edits the key's line: yaml_edit.js)
        data = yaml.safe_load(self.text) or {}
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
        self.values["config_text"] = yaml.safe_dump(data, sort_keys=False) if data else ""

    def view(self) -> config_form.FormView:
        return config_form.form_view(self.studio.engine_info(self.values["engine"]), self.text, self.checked)

    def switch(self, engine):  # an engine picked: this one's text put aside, its own back (no demo config for verl)
        assert engine in self.put_aside or engine not in inp.engine_demo_configs()  # else its demo config could come
        self.put_aside[self.values["engine"]] = self.text
        self.values["config_text"] = self.put_aside.pop(engine, "")
        self.values["engine"] = engine

    def put(self, updates: list):  # a Setup put in whole (SetupTab.show_inputs, as the page applies it)
        names = [
            "agent",
            "train",
            "test",
            "prompt_col",
            "answer_col",
            "picks",
            "weights",
            "config_text",
            "engine",
            "problems",
            "name",
            "note",
        ]
        shown, memory = updates[: len(names)], updates[len(names)]  # then the notes about the inputs
        self.put_aside = dict(memory["texts"])  # what other engines had is forgotten
        for name, u in zip(names, shown):
            self.values[name] = u.get("value") if isinstance(u, dict) and u.get("__type__") == "update" else u

    def collect(self) -> inp.SetupInputs:
        v = self.values
        return collect(
            v["agent"],
            v["train"],
            v["test"],
            v["prompt_col"],
            v["answer_col"],
            v["picks"],
            v["weights"],
            v["config_text"],
            v["engine"],
            v["problems"],
            v["name"],
            v["note"],
        )

    def check(self) -> dict:
        v = self.values
        out = self.tab.on_check(
            v["agent"],
            v["train"],
            v["test"],
            v["prompt_col"],
            v["answer_col"],
            v["picks"],
            v["weights"],
            v["config_text"],
            v["engine"],
            v["problems"],
            v["name"],
            v["note"],
        )
        self.checked = out[-1]
        return {"effective": out[13], "ok": out[14]["interactive"], "status": out[12]}

    def step(self, step: Step, model: Model, between) -> None:
        k = step.kind
        view = self.view()
        if k == "number":
            self.edit(step.key, step.value)
        elif k == "tick":
            shown = next(f.value for f in view.fields if f.name == BOX)
            self.edit(BOX, not shown)
        elif k in ("yaml_same", "yaml_other"):
            self.values["config_text"] = hand_edit(self.text, step.key, step.value, other=k == "yaml_other")
        elif k == "yaml_invalid_fixed":
            self.values["config_text"] = break_yaml(self.text)
            model.broken = True
            between()
            model.broken = False
            self.values["config_text"] = hand_edit(unbreak(self.text), step.key, step.value)
        elif k == "engine_round_trip":
            back = self.values["engine"]
            self.switch(OTHER_ENGINE)
            engine_was, model.engine = model.engine, OTHER_ENGINE
            between()
            model.engine = engine_was
            self.switch(back)
        elif k == "preset":
            name = step.value
            self.put(self.tab.on_preset_load(name))
        elif k == "clone":
            self.put(self.tab.show_inputs(self.studio.clone_inputs(self.runs[step.value])))
        elif k == "model":
            self.edit("model", None if step.value is None else self.models[step.value])
        elif k == "reward_upload":
            v = self.values
            picks, table, self.docs, _, v["problems"] = self.tab.files.on_reward_upload(
                self.upload, v["picks"], v["weights"], self.docs, v["problems"]
            )
            v["picks"], v["weights"] = picks["value"], table


def views_wrong(logic: Logic, model: Model) -> list[str]:
    """What any view shows that the model does not (an empty list: every view agrees)."""
    wrong = []
    if logic.values["engine"] != model.engine:
        wrong.append(f"engine {logic.values['engine']} (model {model.engine})")
    parsed = config_form.parse_overrides(logic.text)
    if parsed != (None if model.broken else model.current):
        wrong.append(f"YAML {logic.text!r} (model {'broken' if model.broken else model.current})")
    view = logic.view()
    info = logic.studio.engine_info(model.engine)
    defaults = {f["name"]: f.get("default") for f in info["fields"]}
    checked = logic.checked or {}
    effective = checked.get("values") if checked.get("engine") == model.engine else None
    wrong += model.expect_form(view.fields, effective, defaults)
    if not model.broken:
        want = model.current.get("model") or config_form.AGENT_MODEL
        if view.model != want:
            wrong.append(f"model picker {view.model!r} (model {want!r})")
    return wrong


def test_every_view_of_the_setup_equals_the_model_after_every_step(setup, tmp_path):
    studio, tab, clones, runs, models = setup
    upload = str(reward_file(tmp_path))
    checks = launches = 0
    for seed in range(SEQUENCES):
        steps = sequence(seed, models=len(models), clones=len(clones))
        logic, model = Logic(studio, tab, runs, models, upload), Model()
        trail = []

        def verify(where: str):
            wrong = views_wrong(logic, model)  # noqa: B023
            assert not wrong, f"seed {seed}, after {' → '.join(trail)} ({where}): " + "; ".join(wrong)  # noqa: B023

        for i, step in enumerate(steps):
            trail.append(str(step))
            logic.step(step, model, lambda: verify("midway"))
            model.apply(step, models, clones)
            verify("after the step")
            if i == 3 and seed % MIDWAY_EVERY == 0:
                checks += 1
                logic.check()
                verify("after a check")
        if seed % CHECK_EVERY == 0:  # the real check of the last spec
            checks += 1
            report = logic.check()
            assert report["ok"], f"seed {seed} {trail}: the check failed: {report['status']}"
            verify("after the check")  # the fields not in the YAML now show the effective values
            effective = yaml.safe_load(report["effective"])
            for key, value in model.current.items():
                assert same(effective.get(key), value), f"seed {seed} {trail}: effective {key}={effective.get(key)!r}"
            view = logic.view()
            assert view.current and all(same(f.value, effective[f.name]) for f in view.fields), (seed, trail)
        if seed % LAUNCH_EVERY == 0:  # Launch's preparation writes run.yaml from the same spec
            launches += 1
            res = studio.worker.call(
                "prepare", inputs=logic.collect().to_dict(), runs_dir=str(studio.runs_dir), timeout_s=180
            )
            assert res.get("ok"), (seed, trail, res)
            config = yaml.safe_load(studio.spec_text(res["run_id"]))["config"]
            for key, value in model.current.items():
                assert same(config.get(key), value), f"seed {seed} {trail}: run.yaml {key}={config.get(key)!r}"
            logic.check()  # the page checks every spec it shows: once this one's answered, the form is its check
            view = logic.view()
            assert view.current, (seed, trail)
            for f in view.fields:
                assert same(f.value, config[f.name]), (
                    f"seed {seed} {trail}: form {f.name}={f.value!r}, run.yaml {config[f.name]!r}"
                )
    assert checks >= SEQUENCES // CHECK_EVERY + SEQUENCES // MIDWAY_EVERY and launches >= SEQUENCES // LAUNCH_EVERY


def test_the_issue_32_sequence_form_yaml_and_run_yaml_agree(setup):
    """The walkthrough's sequence: 0.005 typed into learning_rate, then learning_rate 0.002 and max_steps 6 written
    in the YAML: the form shows 0.002 and 6 (it showed 0.005 and 400), as do the effective config and run.yaml;
    a YAML that does not parse shows no stale values."""
    studio, tab, clones, runs, models = setup
    logic = Logic(studio, tab, runs, models, None)
    logic.edit("learning_rate", 0.005)
    text = logic.text.replace("learning_rate: 0.005", "learning_rate: 0.002").replace("max_steps: 400", "max_steps: 6")
    logic.values["config_text"] = text
    report = logic.check()
    shown = {f.name: f.value for f in logic.view().fields}
    assert (shown["learning_rate"], shown["max_steps"]) == (0.002, 6)
    effective = yaml.safe_load(report["effective"])
    assert (effective["learning_rate"], effective["max_steps"]) == (0.002, 6)
    res = studio.worker.call("prepare", inputs=logic.collect().to_dict(), runs_dir=str(studio.runs_dir), timeout_s=180)
    config = yaml.safe_load(studio.spec_text(res["run_id"]))["config"]
    assert (config["learning_rate"], config["max_steps"]) == (0.002, 6)
    logic.values["config_text"] = text + "max_steps: [\n"
    view = logic.view()
    assert not view.valid and all(not f.interactive and f.value in (None, "", False) for f in view.fields)


def test_a_check_answered_for_a_state_the_page_left_is_followed_by_a_check_of_the_page(setup):
    """The browser model-based test's seed 55 under two test workers: trl's check of a preset answered after verl had
    been picked (an older check of the page reached the studio last: a newer call from one page cancels the older),
    and the page stayed on verl with trl's check shown, "not current", for good. On every change of the check shown
    the Setup's reconcile compares the page's inputs now with those of that check, and checks the page again when
    they differ; when they agree it changes nothing (the browser's test_a_stale_check_answering_last_is_checked_again
    holds a reconcile on its way: its own answer is reconciled too)."""
    studio, tab, clones, runs, models = setup
    logic = Logic(studio, tab, runs, models, None)
    logic.check()  # trl's check, shown
    names = ["agent", "train", "test", "prompt_col", "answer_col", "picks", "weights", "config_text", "engine"]
    page = lambda: [logic.values[n] for n in names] + [logic.values["problems"], "", ""]  # noqa: E731
    agreed = tab.on_reconcile(*page(), logic.checked)
    assert agreed == [gr.skip()] * len(agreed)  # nothing changes
    logic.switch(OTHER_ENGINE)  # the page now shows verl; the check shown is still trl's
    assert not logic.view().current
    out = tab.on_reconcile(*page(), logic.checked)
    logic.checked = out[-1]
    assert logic.checked["engine"] == OTHER_ENGINE and logic.view().current
    assert tab.on_reconcile(*page(), logic.checked)[-1] == gr.skip()  # and then nothing more


def test_a_setting_the_check_refuses_is_said_at_its_field(setup):
    """What the config check refuses is said at the field it names, as the Config card says it: one value out of
    range among several problems (every one at once), and settings that do not fit the data (prompts_per_step 64
    for 24 rows) — these were said in the Config card only (issue 42). A field whose value the check took says
    nothing; the next edit's form shows the last check's words only for the spec it checked."""
    from aworld_gui.rendering.i18n import localize

    studio, tab, _clones, runs, models = setup
    logic = Logic(studio, tab, runs, models, upload=None)

    def said(view, name):
        f = next(f for f in view.fields if f.name == name)
        return localize(f.problem, "en") if f.problem else None

    logic.values["config_text"] = "max_steps: 0\nbeta: -1\nlearning_rate: abc\n"
    assert logic.check()["ok"] is False
    view = logic.view()
    assert said(view, "max_steps").startswith("`max_steps` = 0 is below its minimum 1")
    assert "is not a number" in said(view, "learning_rate")  # the form's own word for a value it cannot hold
    assert said(view, "num_generations") is None
    logic.values["config_text"] = "prompts_per_step: 64\n"
    assert logic.check()["ok"] is False
    view = logic.view()
    assert "prompts_per_step" in said(view, "prompts_per_step") and "24" in said(view, "prompts_per_step")
    assert said(view, "max_steps") is None
    logic.edit("prompts_per_step", 4)  # not checked yet: the field's words were for 64
    assert said(logic.view(), "prompts_per_step") is None
