"""The studio core behind the Runs tab: listing, export, reproduce command, config diff, clone,
checkpoint archives, deletion; and the pure Setup helpers (uploads, rewards, config YAML)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pytest
import yaml

from aworld_gui.core import inputs as inp
from aworld_gui.core.run_cache import RunCache
from aworld_gui.core.studio import Studio
from engines.core.modules import Modules
from engines.runs.rundir import RunDir


class _NoWorker:
    """Answers the engine catalog only (these tests run no checks)."""

    def start(self):
        pass

    def close(self):
        pass

    def call(self, task, **kw):
        assert task == "catalog"
        return {
            "engines": [
                {
                    "name": "trl",
                    "available": True,
                    "reason": "",
                    "fields": [],
                    "defaults": {"learning_rate": 1e-5, "max_steps": 10},
                }
            ],
            "rewards": {},
        }


@pytest.fixture
def studio(tmp_path):
    return Studio(tmp_path / "runs", worker=_NoWorker(), cache=RunCache())


def make_run(studio: Studio, lr: float, state: str = "finished") -> RunDir:
    run = RunDir.create(studio.runs_dir, "trl")
    run.write_spec(
        {
            "engine": "trl",
            "run_id": run.run_id,
            "agent": {"name": "a", "model": "/m", "system_prompt": "hi", "tools": []},
            "data": {"train": str(inp.DEMO_TRAIN), "test": None, "columns": {"prompt": "prompt", "answer": "answer"}},
            "reward": [{"ref": inp.DEMO_REWARD, "weight": 1.0}, {"name": "exact_match", "weight": 0.5}],
            "config": {"learning_rate": lr, "max_steps": 10},
        }
    )
    run.write_status(state=state, step=10, total_steps=10, last_reward=0.75, started=1.0)
    ck = run.checkpoints_dir / "checkpoint-10"
    ck.mkdir(parents=True)
    (ck / "model.safetensors").write_bytes(b"weights")
    return run


def test_runs_are_listed_exported_diffed_cloned_and_deleted(studio):
    a, b = make_run(studio, 1e-3), make_run(studio, 5e-4)
    runs = studio.list_runs()
    assert {r["run_id"] for r in runs} == {a.run_id, b.run_id}
    assert all(r["state"] == "finished" and r["last_reward"] == 0.75 for r in runs)

    diff = studio.config_diff(a.run_id, b.run_id)
    assert "-  learning_rate: 0.001" in diff and "+  learning_rate: 0.0005" in diff and "run_id" not in diff

    exported = studio.export_spec(a.run_id)
    assert yaml.safe_load(open(exported))["config"]["learning_rate"] == 1e-3

    cli = studio.cli_command(a.run_id)
    assert f"rerun {a.path}" in cli and sys.executable.rsplit("/", 1)[0] in cli  # this interpreter's own CLI

    zpath = studio.checkpoint_zip(a.run_id, "checkpoint-10")
    assert zipfile.ZipFile(zpath).read("checkpoint-10/model.safetensors") == b"weights"
    with pytest.raises(ValueError):
        studio.checkpoint_zip(a.run_id, "../../etc")
    # an export names one of the run's checkpoints: a path (issue 41's probe: any folder exported, zipped, and
    # written outside .exports by a name with "/../" in it) is refused before anything starts
    for name in ("/root", "../../etc", "checkpoint-10/../../..", "checkpoint-11"):
        with pytest.raises(ValueError, match="no checkpoint"):
            studio.export_model(a.run_id, name)
    assert not list((studio.runs_dir / ".exports").glob("*-hf*"))

    si = studio.clone_inputs(a.run_id)
    assert yaml.safe_load(open(si.agent))["model"] == "/m"
    assert si.train == str(inp.DEMO_TRAIN) and si.columns == {"prompt": "prompt", "answer": "answer"}
    assert si.rewards == [{"ref": inp.DEMO_REWARD, "weight": 1.0}, {"name": "exact_match", "weight": 0.5}]
    assert yaml.safe_load(si.config_text) == {"learning_rate": 1e-3}  # only what differs from the defaults

    studio.delete(b.run_id)
    assert [r["run_id"] for r in studio.list_runs()] == [a.run_id]
    for bad in ("", "../x", ".uploads", "nope"):
        with pytest.raises(ValueError):
            studio.run_path(bad)


def test_a_clone_keeps_every_reward_term_with_its_settings(studio, tmp_path):
    """A reward model, an LLM judge, a factory with its arguments and a pickled callable survive a clone:
    through the Setup's reward picker (the keys show_inputs shows, read back by collect) and through the
    Setup's CLI command, they load as the very terms the run had."""
    import cloudpickle

    from aworld_gui.tabs.setup_inputs import collect
    from engines.rewards import load_reward
    from engines.rewards.spec import parse_cli_reward
    from testing.reward_model import build_reward_model

    pickled = tmp_path / "code" / "reward_4_short.pkl"
    pickled.parent.mkdir()
    pickled.write_bytes(cloudpickle.dumps(lambda completion, **kw: -len(completion) / 100))
    factory = {
        "ref": "trl.rewards:get_soft_overlong_punishment",
        "args": {"max_completion_len": 64, "soft_punish_cache": 8},
        "weight": 0.5,
    }
    judge = {
        "url": "http://127.0.0.1:9/v1",
        "model": "judge",
        "name": "strict",
        "scale": 10,
        "prompt": "Question: {prompt}\nReply: {completion}\nScore 0-10, {{strict}}:",
    }
    original = [
        {"name": "exact_match", "weight": 1.0},
        factory,
        {"reward_model": {"path": build_reward_model(tmp_path / "rm"), "batch_size": 4}, "weight": 2.0},
        {"judge": judge, "weight": 0.25},
        {"pickle": str(pickled), "name": "short", "weight": 0.1},
        {"name": "length_penalty", "kwargs": {"target_chars": 12}, "weight": 0.3},
    ]
    run = make_run(studio, 1e-3)
    run.write_spec({**run.read_spec(), "reward": original})

    si = studio.clone_inputs(run.run_id)
    picks = [r.get("name") or r.get("ref") for r in si.rewards]  # what Setup's reward picker holds
    assert picks[1] == "trl.rewards:get_soft_overlong_punishment(max_completion_len=64, soft_punish_cache=8)"
    back = collect(
        si.agent,
        si.train,
        si.test,
        None,
        None,
        picks,
        [[p, r["weight"], ""] for p, r in zip(picks, si.rewards)],
        si.config_text,
        si.engine,
    )
    want = load_reward(original)
    for entries in (
        back.modules().reward_func,
        [e for r in si.rewards for e in parse_cli_reward(f"{r.get('name') or r['ref']}@{r['weight']:g}")],
    ):
        got = load_reward(entries)
        assert (
            got.names
            == want.names
            == ["exact_match", "soft_overlong_punishment_reward", "rm_rm", "strict", "short", "length_penalty"]
        )
        assert got.weights == [1.0, 0.5, 2.0, 0.25, 0.1, 0.3]
        assert got.to_spec(pickle_dir=tmp_path / "again") == want.to_spec(pickle_dir=tmp_path / "again")
        assert got.terms[1].args == factory["args"] and got.terms[5].kwargs == {"target_chars": 12}


def test_stop_on_a_run_that_is_not_active_writes_nothing(studio):
    run = make_run(studio, 1e-3, state="finished")
    out = studio.stop(run.run_id)
    assert out["stop_sent"] is False and "finished: there is nothing to stop" in out["message"]
    assert not (run.path / "STOP").exists()
    assert run.read_status()["state"] == "finished"


def test_the_reproduce_command_works_in_a_shell_without_the_virtualenv(studio, tmp_path, demo):
    """Pasted into a plain shell (no virtualenv active, the venv's bin not on PATH), the Runs tab's
    command trains the same spec as a new run; a failed attempt leaves no listed run behind."""
    from engines.core.prepare import prepare_run

    run = prepare_run(
        Modules(
            demo["agent"],
            demo["train"],
            demo["test"],
            demo["reward"],
            {"max_steps": 2, "prompts_per_step": 2, "num_generations": 4, "save_steps": 2},
            train_engine_name="trl",
        ),
        runs_dir=str(studio.runs_dir),
    )
    command = [line for line in studio.cli_command(run.run_id).splitlines() if not line.startswith("#")]
    assert len(command) == 1
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # what a fresh terminal has, no venv
    out = subprocess.run(
        ["/bin/sh", "-c", command[0]], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr[-3000:]
    new = [r for r in studio.list_runs() if r["run_id"] != run.run_id]
    assert len(new) == 1 and new[0]["state"] == "finished", new
    assert RunDir(studio.run_path(new[0]["run_id"])).read_spec()["config"] == run.read_spec()["config"]
    # a broken attempt (the earlier run is gone) creates no run directory that would be listed
    broken = subprocess.run(
        ["/bin/sh", "-c", command[0].replace(run.run_id, "no-such-run")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert broken.returncode == 2 and "has no run.yaml" in broken.stderr
    assert len(studio.list_runs()) == 2
    half = studio.runs_dir / "20990101-000000-trl-half"  # a folder that got a spec and nothing else
    half.mkdir()
    (half / "run.yaml").write_text("engine: trl\n")
    assert len(studio.list_runs()) == 2


def test_the_run_to_watch_is_the_one_training_not_the_newest_queued(studio):
    """Three launches: the first trains, two wait. The Monitor's default (and a reloaded page's) is the
    one training; with nothing training, the next in line."""
    import psutil

    sleepers = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(3)]
    try:
        runs = []
        for i, (proc, state) in enumerate(zip(sleepers, ("running", "queued", "queued"))):
            run = make_run(studio, 1e-3, state=state)
            run.write_status(pid=proc.pid, pid_create_time=psutil.Process(proc.pid).create_time(), launched=100.0 + i)
            runs.append(run)
        assert studio.list_runs()[0]["run_id"] == runs[2].run_id  # the newest is a queued one
        assert studio.latest_run() == studio.training_run() == runs[0].run_id
        assert studio.status()["run_id"] == runs[0].run_id
        sleepers[0].kill()
        sleepers[0].wait()  # the training run dies
        assert studio.training_run() is None
        assert studio.latest_run() == runs[1].run_id  # next in line, not the newest
    finally:
        for p in sleepers:
            p.kill()
            p.wait()


def test_a_live_run_cannot_be_deleted(studio):
    run = make_run(studio, 1e-3, state="running")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        import psutil

        run.write_status(pid=proc.pid, pid_create_time=psutil.Process(proc.pid).create_time())
        with pytest.raises(ValueError, match="still running"):
            studio.delete(run.run_id)
    finally:
        proc.kill()
        proc.wait()


def test_uploaded_agent_paths_are_resolved(tmp_path):
    upload = tmp_path / "up" / "letters_agent.yaml"
    upload.parent.mkdir()
    upload.write_text(inp.DEMO_AGENT.read_text())
    path, notes = inp.resolve_agent_upload(str(upload))
    assert path != str(upload) and notes
    assert yaml.safe_load(open(path))["model"] == str((inp.ASSETS / "models" / "tiny-letters").resolve())


def test_reward_text_helpers():
    uploaded = {"my_reward.py": "/runs/.uploads/abc/my_reward.py"}
    assert inp.parse_reward_text("exact_match@2, my_reward.py:score@0.5\n/abs/r.py:f", uploaded) == [
        {"name": "exact_match", "weight": 2.0},
        {"ref": "/runs/.uploads/abc/my_reward.py:score", "weight": 0.5},
        {"ref": "/abs/r.py:f", "weight": 1.0},
    ]
    with pytest.raises(ValueError):
        inp.parse_reward_text("exact_match@lots")


def test_an_upload_problem_keeps_its_module_in_error_and_launch_refused(tmp_path):
    class _Worker(_NoWorker):
        def call(self, task, **kw):
            if task == "check":
                return {
                    "results": {
                        m: {"module": m, "status": "ok", "message": "fine", "details": {}, "warnings": []}
                        for m in ("agent", "dataset", "reward", "config", "engine")
                    }
                }
            return super().call(task, **kw)

    studio = Studio(tmp_path / "runs", worker=_Worker(), cache=RunCache())
    si = inp.demo_inputs()
    si.problems = {"reward": "the uploaded reward file r.py cannot be used: SyntaxError"}
    report = studio.check(si)
    assert report["ok"] is False and report["results"]["reward"]["status"] == "error"
    assert "r.py cannot be used" in report["results"]["reward"]["message"]
    res = studio.launch(si)
    assert res == {"ok": False, "module": "reward", "error": si.problems["reward"]}
    assert not any(p.is_dir() and not p.name.startswith(".") for p in studio.runs_dir.iterdir())


def test_a_shipped_test_set_pairs_only_with_its_train_set():
    ds = inp.DATASETS_DIR
    assert inp.paired_test(str(ds / "letters_train.jsonl"), str(ds / "letters_test.jsonl"))
    assert inp.paired_test(str(ds / "letters_train.csv"), str(ds / "letters_test.jsonl"))
    assert not inp.paired_test(str(ds / "calc_train.jsonl"), str(ds / "letters_test.jsonl"))
    assert not inp.paired_test("/up/abc/my_train.jsonl", str(ds / "letters_test.jsonl"))
    assert inp.paired_test("/up/abc/my_train.jsonl", "/up/def/my_test.jsonl")  # chosen by the user: kept
    assert inp.paired_test("/up/abc/my_train.jsonl", None)


def test_runs_carry_a_name_and_a_note_that_can_be_changed(studio, tmp_path, demo):
    from engines.core.prepare import prepare_run

    run = prepare_run(
        Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], {"max_steps": 2}, train_engine_name="trl"),
        runs_dir=str(studio.runs_dir),
        name="lr 1e-3 / try #2",
        note="higher learning rate",
    )
    assert "-trl-lr-1e-3---try--2-" in run.run_id  # the name is part of the id, made safe
    (row,) = studio.list_runs()
    assert (row["name"], row["note"]) == ("lr 1e-3 / try #2", "higher learning rate")
    studio.relabel(run.run_id, name="  winner  ")
    assert run.read_label() == {"name": "winner", "note": "higher learning rate"}  # note kept
    studio.relabel(run.run_id, note="")
    assert run.read_label() == {"name": "winner", "note": ""}
    out = subprocess.run(
        [sys.executable, "-m", "engines", "label", str(run.path), "--note", "from the CLI"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and run.read_label()["note"] == "from the CLI"
    listing = subprocess.run(
        [sys.executable, "-m", "engines", "runs", "--runs-dir", str(studio.runs_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "winner" in listing.splitlines()[1] and listing.splitlines()[0].split()[:3] == ["run", "name", "state"]


def test_the_engine_note_says_what_an_engine_picked_did_to_the_overrides(studio):
    """Each engine keeps its own overrides: the switch is made in the page (static/yaml_edit.js), and the memories
    here are those it makes (tests/test_browser_config_form.py: the same ones); the note is the server's."""
    from aworld_gui.rendering.i18n import localize
    from aworld_gui.tabs.setup_tab import SetupTab

    note = lambda memory, text: localize(SetupTab(studio).engine_note(memory, text), "en")  # noqa: E731
    trl = "learning_rate: 0.001\nbeta: 0.04\n"
    said = note({"engine": "verl", "previous": "trl", "texts": {"trl": trl}, "demo": False}, "")
    assert "**trl**" in said and "kept aside" in said and "**verl** starts from its defaults" in said
    said = note({"engine": "trl", "previous": "verl", "texts": {"verl": "total_steps: 3\n"}}, trl)
    assert "**verl**" in said and "**trl** starts from its earlier overrides" in said
    said = note({"engine": "swift", "previous": "trl", "texts": {"trl": trl}, "demo": True}, "tuner_type: full\n")
    assert "**swift** starts from its own config for the demo" in said
    assert note({"engine": "trl", "previous": "trl", "texts": {"verl": ""}}, trl) == ""  # the same engine again
    assert note({"engine": "trl", "previous": "trl", "texts": {}}, trl) == note(None, trl) == ""


FIELDS = [
    {"name": "max_steps", "type": "int", "default": 100, "min": 1, "main": True},
    {"name": "learning_rate", "type": "float", "default": 1e-05, "main": True},
    {"name": "max_completion_length", "type": "int", "default": 256, "main": True},
    {"name": "use_peft", "type": "bool", "default": False, "main": True},
    {"name": "mode", "type": "str", "default": "grpo", "choices": ["grpo", "sft"], "main": True},
    {"name": "epsilon_high", "type": "float", "default": None},
]


def test_the_form_shows_the_yaml_then_the_check_of_that_yaml_then_the_defaults():
    """The form is derived from the overrides YAML: a key it sets shows its value; the others the effective value
    of the check of this very YAML (an older check's answer is not used), else the engine's default."""
    from aworld_gui.tabs.config_form import effective_for, form_view

    info = {"name": "trl", "fields": FIELDS}
    text = "learning_rate: 0.002   # typed\nmax_steps: 6\n"
    checked = effective_for(
        "trl",
        text,
        {"max_steps": 6, "learning_rate": 0.002, "max_completion_length": 2, "use_peft": False, "mode": "grpo"},
    )
    view = form_view(info, text, checked)
    shown = {f.name: (f.value, f.overridden) for f in view.fields}
    assert (
        shown
        == {
            "max_steps": (6, True),
            "learning_rate": (0.002, True),
            "max_completion_length": (2, False),
            "use_peft": (False, False),
            "mode": ("grpo", False),
        }
        and view.current
        and view.valid
    )
    # until the new YAML's check answers, the last check's values stand (not current): showing the defaults
    # meanwhile changed a field twice per edit, each time a new field under the user's keyboard
    stale = form_view(info, text + "use_peft: true\n", checked)  # the check of the YAML before
    assert {f.name: f.value for f in stale.fields}["max_completion_length"] == 2 and not stale.current
    assert {f.name: f.value for f in stale.fields}["use_peft"] is True
    other = form_view(info, text, effective_for("verl", text, {"max_completion_length": 9}))
    assert {f.name: f.value for f in other.fields}["max_completion_length"] == 256


def test_a_yaml_that_does_not_parse_shows_no_values_and_locks_the_form():
    """After a YAML edit that fails to parse, the fields used to keep showing the values from before."""
    from aworld_gui.tabs.config_form import form_view

    view = form_view(
        {"name": "trl", "fields": FIELDS},
        "learning_rate: 0.002\nmax_steps: [6\n",
        {"engine": "trl", "text": "learning_rate: 0.002\n", "values": {"max_steps": 400}},
    )
    assert not view.valid
    assert all(not f.interactive and f.value in (None, False) for f in view.fields)
    for text in ("- a list\n", "just text\n"):
        assert not form_view({"name": "trl", "fields": FIELDS}, text).valid
    assert form_view({"name": "trl", "fields": FIELDS}, "# only a comment\n").valid


def test_a_value_the_field_cannot_hold_is_shown_with_what_is_wrong_and_stays_editable():
    """Issue 42: ``abc`` typed into learning_rate locked the field, with no word why; only the YAML editor got the
    user out. The field shows the value as the YAML has it, says what is wrong, and can be edited; a list under a
    text field stays locked and says where to edit it."""
    from aworld_gui.rendering.i18n import translations
    from aworld_gui.tabs.config_form import form_view

    view = form_view({"name": "trl", "fields": FIELDS}, "max_steps: many\nmode: rl\nuse_peft: 1\nlearning_rate: 1e-5\n")
    shown = {f.name: (f.kind, f.value, f.interactive) for f in view.fields}
    assert shown["max_steps"] == ("number", "many", True) and shown["mode"] == ("choice", "rl", True)
    assert shown["use_peft"] == ("bool", False, True)
    assert shown["learning_rate"] == ("number", "1e-5", True)  # YAML 1.1 reads 1e-5 as a string: said at the field
    en = translations()["en"]
    said = {f.name: i18n_text(f.problem or "", en) for f in view.fields}
    assert said["max_steps"] == "“many” is not a number: type a number here."
    assert said["mode"] == "“rl” is not one of the choices: pick one here."
    assert said["use_peft"] == "“1” is not true or false: tick or untick the box to set it."
    assert said["max_completion_length"] == ""  # a value it holds: nothing said
    by_name = {f.name: f for f in view.fields}
    assert (
        by_name["mode"].choices
        and by_name["mode"] != form_view({"name": "trl", "fields": FIELDS}, "mode: grpo\n").fields[-1]
    )
    locked = form_view(
        {"name": "trl", "fields": FIELDS + [{"name": "note", "type": "str", "main": True}]}, "note: [a]\n"
    )
    note = [f for f in locked.fields if f.name == "note"][0]
    assert (note.kind, note.interactive) == ("text", False) and "Advanced: config YAML" in i18n_text(note.problem, en)


def i18n_text(text: str, table: dict) -> str:
    """``text`` with its translation markers replaced from ``table`` (as the page does: i18n_markers.js)."""
    import re

    return re.sub(
        r'__i18n__\{"__type__": "translation_metadata", "key": "(t[0-9a-f]{12})"\}', lambda m: table[m[1]], text
    )


def test_a_field_is_updated_exactly_when_what_it_shows_changes():
    """A slot of the form is updated when what it shows changes — another value, or the key set in or removed from
    the YAML (an emptied box whose value did not change is not refilled by Gradio) — and only then: an update puts
    the field's value back, over what the user is typing there (config_form_render.render_config_form)."""
    from aworld_gui.tabs.config_form import form_slots, form_view, shown_fields

    def slots(text: str) -> dict:
        shown = shown_fields(form_view({"name": "trl", "fields": FIELDS}, text), [])
        return {s["name"]: s for s in form_slots(shown, len(FIELDS))[1:] if s}

    a, b = slots("max_steps: 6\n"), slots("max_steps: 6\nuse_peft: true\n")
    assert a["max_steps"] == b["max_steps"] and a["use_peft"] != b["use_peft"]
    assert slots("max_steps: 7\n")["max_steps"] != a["max_steps"]
    assert slots("use_peft: false\n")["use_peft"] != a["use_peft"]  # the same value, now set in the YAML
    assert slots("max_steps: 6   # a comment\n\n") == a  # a comment or a blank line: nothing to update


def test_the_config_yaml_has_one_writer_per_kind_of_edit(studio):
    """The overrides YAML is the one spec: it is written only by page steps (a form field's edit, Set / Remove's
    line, an engine picked) and by a Setup put in whole (a preset, a clone); no check, fill or form step writes it,
    and every check takes it (never a form field) as its input."""
    import warnings

    from aworld_gui.web.page import build_app

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        demo = build_app(studio=studio)
    fns = demo.fns
    setup = next(f.fn.__self__ for f in fns.values() if getattr(f.fn, "__name__", "") == "on_check")
    spec = setup.ui.config_yaml._id
    writers = [f for f in fns.values() if spec in {c._id for c in f.outputs}]
    server = sorted(getattr(f.fn, "__name__", "?") for f in writers if f.fn is not None)
    # a clone from Runs and from the Sweeps tab's best trial, the Monitor's clone for a diagnosis, a preset
    assert server == ["clone", "clone", "clone_for_diagnosis", "on_preset_load"], server
    assert all(f.js for f in writers if f.fn is None) and len(writers) >= 4
    checks = [f for f in fns.values() if getattr(f.fn, "__name__", "") == "on_check"]
    assert checks and all(spec in {c._id for c in f.inputs} for f in checks)
    assert not any(getattr(f.fn, "__name__", "") in ("form_values", "on_yaml_edited") for f in fns.values())


def test_every_event_handler_takes_the_inputs_it_is_wired_to(studio):
    """Gradio's own check of each handler's arity against its inputs (a mismatch only warns at build time and
    fails every call of that event: after a merge, the Setup checks never ran)."""
    import warnings

    from aworld_gui.web.page import build_app

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        demo = build_app(studio=studio)
    mismatched = [str(w.message) for w in caught if "arguments for function" in str(w.message)]
    assert not mismatched, mismatched
    assert len(demo.fns) > 50  # the whole studio was built


def test_an_export_and_a_sweep_start_without_the_studios_credentials(studio, monkeypatch):
    """Issue 41's probe read that the export (``python -m engines export``) and the sweep (``aworld-train sweep``, then
    its detached driver, which runs user code) were started with the studio's whole environment. Each gets the
    environment a run gets: no credential, except what its setup asks for by ``${NAME}`` (and the operator invited).
    The processes' environments are read as handed to them (subprocess.run, the boundary with the child)."""
    import subprocess as sp

    from aworld_gui.core import exports, sweep_core

    monkeypatch.setenv("OPENAI_API_KEY", "sk-held-by-the-studio-0041")
    monkeypatch.setenv("HELD_UNASKED_KEY", "held-by-the-studio-0041")
    seen = []

    def started(argv, **kw):
        seen.append(kw.get("env"))
        return sp.CompletedProcess(argv, 1, "", "error: stopped here by the test")

    monkeypatch.setattr(exports.subprocess, "run", started)
    monkeypatch.setattr(sweep_core.subprocess, "run", started)
    run = make_run(studio, 1e-3)
    with pytest.raises(ValueError, match="stopped here"):
        studio.export_model(run.run_id, "checkpoint-10")
    si = studio.clone_inputs(run.run_id)
    si.config_text = "learning_rate: 0.001\nreport_to: ${HELD_UNASKED_KEY}\n"
    answer = sweep_core.SweepsCore(studio.runs_dir).launch(si, {"trials": 2, "params": {"beta": [0.0, 0.1]}})
    assert answer == {"ok": False, "error": "stopped here by the test"}, answer
    export_env, sweep_env = seen
    assert export_env is not None and "OPENAI_API_KEY" not in export_env and "HELD_UNASKED_KEY" not in export_env
    assert export_env.get("PATH") == os.environ["PATH"]  # the rest of the environment, as a run has it
    assert "OPENAI_API_KEY" not in sweep_env
    assert sweep_env["HELD_UNASKED_KEY"] == "held-by-the-studio-0041"  # asked for by ${NAME}: the CLI's rule
