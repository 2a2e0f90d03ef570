"""One bad run folder never breaks the Runs list for everyone (issue 41, item 6): a run.yaml that is a line of text,
invalid YAML or a list, a label.json that is no object — that run lists with the reason, the others as usual, and
its status answers; a link in the runs folder is no run (listed under its target's name, it could not be found by
its own; pointing out of the runs folder, it would serve files from elsewhere)."""

from __future__ import annotations

import json
import os

import pytest

from aworld_gui.core.run_cache import RunCache
from aworld_gui.core.studio import Studio
from aworld_gui.tabs.runs_tab import table_rows
from engines.runs.lifecycle import slot_holder
from engines.runs.rundir import RunDir
from testing.waiting import promptly

BAD_SPECS = {
    "a line of text": ("just a line of text\n", "not a mapping of settings (it holds a str)"),
    "a list": ("- engine: trl\n- agent: x\n", "not a mapping of settings (it holds a list)"),
    "invalid YAML": ("engine: [trl\n", "not valid YAML"),
}


class NoWorker:
    def start(self):
        pass

    def close(self):
        pass


def finished_run(runs, engine="trl", **spec) -> RunDir:
    run = RunDir.create(runs, engine)
    run.write_spec({"engine": engine, "agent": {"model": "/models/tiny-letters"}, **spec})
    run.write_status(state="finished", step=3, total_steps=3, started=1.0)
    return run


@pytest.mark.parametrize("case", sorted(BAD_SPECS))
def test_a_malformed_run_yaml_lists_that_run_with_the_reason_and_the_others_as_usual(tmp_path, case):
    text, reason = BAD_SPECS[case]
    runs = tmp_path / "runs"
    good = finished_run(runs)
    bad = finished_run(runs)
    bad.file("run.yaml").write_text(text, encoding="utf-8")
    studio = Studio(runs, worker=NoWorker(), cache=RunCache())

    rows = {r["run_id"]: r for r in studio.list_runs()}
    assert set(rows) == {good.run_id, bad.run_id}
    assert rows[good.run_id]["unreadable"] is None and rows[good.run_id]["model"] == "tiny-letters"
    assert reason in rows[bad.run_id]["unreadable"] and rows[bad.run_id]["state"] == "finished"
    assert rows[bad.run_id]["engine"] == "?" and rows[bad.run_id]["model"] == ""
    table = {row[0]: row for row in table_rows(list(rows.values()))}
    assert 'data-testid="unreadable-note"' in table[bad.run_id][2] and reason.split(" (")[0] in table[bad.run_id][2]
    assert "unreadable-note" not in table[good.run_id][2]
    assert studio.status(bad.run_id)["state"] == "finished"  # /status answers for it too


def test_an_agent_that_is_not_a_mapping_and_a_label_that_is_not_an_object_list_as_blanks(tmp_path):
    runs = tmp_path / "runs"
    run = finished_run(runs, agent="just-a-name")
    run.file("label.json").write_text(json.dumps(["not", "an", "object"]), encoding="utf-8")
    row = Studio(runs, worker=NoWorker(), cache=RunCache()).list_runs()[0]
    assert (row["model"], row["name"], row["note"], row["unreadable"]) == ("", "", "", None)


def test_a_link_in_the_runs_folder_is_no_run(tmp_path):
    runs = tmp_path / "runs"
    real = finished_run(runs)
    elsewhere = finished_run(tmp_path / "elsewhere")
    (runs / "20990101-000000-trl-link").symlink_to(real.path, target_is_directory=True)
    (runs / "20990101-000000-trl-away").symlink_to(elsewhere.path, target_is_directory=True)
    studio = Studio(runs, worker=NoWorker(), cache=RunCache())
    assert [r["run_id"] for r in studio.list_runs()] == [real.run_id]
    with pytest.raises(ValueError, match="no run"):
        studio.run_path("20990101-000000-trl-away")


def test_a_status_whose_times_are_not_numbers_and_metrics_lines_that_are_not_objects_break_nothing(tmp_path):
    """Issue 41's third probe: a status.json with ``"created": "x"`` beside a run made in the same second made the
    list's sort compare a str with a float (``/list_runs``, ``/status`` and the page's load failed for everyone),
    and a metrics.jsonl line that is JSON but no object (``[1, 2]``, ``null``, ``"text"``: user code in the run can
    append one) failed that run's status. Each is read as no value / no row."""
    runs = tmp_path / "runs"
    good = finished_run(runs)
    odd = RunDir(runs / (good.run_id[:15] + "-zzz"))  # the same second as the good run: the sort compares times
    odd.path.mkdir()
    odd.write_spec({"engine": "trl", "agent": {"model": "/models/tiny-letters"}})
    odd.file("status.json").write_text(json.dumps({"state": "finished", "created": "x"}), encoding="utf-8")
    for line in ("[1, 2]", "null", '"text"', json.dumps({"step": 1, "loss": 0.5, "reward": 0.25})):
        with good.file("metrics.jsonl").open("a", encoding="utf-8") as f:
            f.write(line + "\n")
    studio = Studio(runs, worker=NoWorker(), cache=RunCache())

    assert {r["run_id"] for r in studio.list_runs()} == {good.run_id, odd.run_id}
    assert studio.status(odd.run_id)["state"] == "finished"
    status = studio.status(good.run_id)
    assert status["state"] == "finished" and "error" not in status, status
    assert good.read_jsonl("metrics.jsonl") == [{"step": 1, "loss": 0.5, "reward": 0.25}]


def _fifo(path):
    path.unlink(missing_ok=True)
    os.mkfifo(path)  # nobody ever writes into it: a plain read waits for ever


def _write(name: str, text: str):
    return lambda run: run.file(name).write_text(text, encoding="utf-8")


DEEP_JSON = "[" * 100_000 + "]" * 100_000
#: case → (what is done to the bad run, what its row says: a text in ``unreadable``, or its state and name)
ODD_RUNS = {
    "run.yaml nested 3000 deep (flow)": (_write("run.yaml", "[" * 3000 + "]" * 3000), "nested too deep"),
    "run.yaml nested 3000 deep (block)": (_write("run.yaml", "- " * 3000 + "x"), "nesting depth"),
    "run.yaml nested 3000 deep (mapping)": (_write("run.yaml", "{a: " * 3000 + "1" + "}" * 3000), "nested too deep"),
    "run.yaml a pipe": (lambda run: _fifo(run.file("run.yaml")), "run.yaml cannot be read: run.yaml is not a plain"),
    "label.json a pipe": (lambda run: _fifo(run.file("label.json")), ("finished", "")),
    "label.json nested deep": (_write("label.json", DEEP_JSON), ("finished", "")),
    "label.json of a megabyte": (_write("label.json", json.dumps({"name": "n" * (1 << 20)})), ("finished", "")),
    "STOP a pipe": (lambda run: _fifo(run.file("STOP")), ("finished", "")),
    "status.json nested deep": (_write("status.json", DEEP_JSON), ("unknown", "")),
    "status.json of 5 MB": (
        _write("status.json", json.dumps({"state": "running", "x": "x" * (5 << 20)})),
        ("unknown", ""),
    ),
    "a queue place that is no number": (
        _write("status.json", json.dumps({"state": "queued", "queue_position": "first"})),
        "its files cannot be read: ValueError",
    ),
    "a pid that is no number": (_write("status.json", json.dumps({"state": "running", "pid": [1]})), ("failed", "")),
    "the slot's lock a pipe": (lambda run: _fifo(run.path.parent / ".slot.lock"), ("finished", "")),
}


@pytest.mark.parametrize("case", list(ODD_RUNS))
def test_run_files_that_are_pipes_deep_or_odd_never_break_or_hold_the_list(tmp_path, case):
    """Issue 41's fifth probe: a run.yaml nested 3000 deep raised RecursionError out of every list_runs; a run.yaml,
    label.json or STOP that is a pipe (user code in a run can make one) held the list, or the watchdog, for ever; a
    status.json was read whole, however large. Each is read as a plain file, capped, and parsed with the one YAML
    loader; a row whose values fail is that run's problem: it lists with why, the others as usual. (Every call runs
    in a thread with a deadline: a regression fails instead of hanging the suite.)"""
    make_odd, says = ODD_RUNS[case]
    runs = tmp_path / "runs"
    good, odd = finished_run(runs), finished_run(runs)
    make_odd(odd)
    studio = Studio(runs, worker=NoWorker(), cache=RunCache())

    rows = {r["run_id"]: r for r in promptly(studio.list_runs)}
    assert set(rows) == {good.run_id, odd.run_id}
    assert rows[good.run_id]["unreadable"] is None and rows[good.run_id]["model"] == "tiny-letters"
    assert rows[good.run_id]["state"] == "finished"
    row = rows[odd.run_id]
    if isinstance(says, str):
        assert says in (row["unreadable"] or ""), row
        table = {r[0]: r for r in table_rows(list(rows.values()))}
        assert 'data-testid="unreadable-note"' in table[odd.run_id][2]
    else:
        assert (row["state"], row["name"]) == says, row
    assert promptly(odd.stop_reason) is None and promptly(odd.stop_request_time) is None
    shown = promptly(lambda: studio.spec_text(odd.run_id))
    assert shown.startswith("# run.yaml cannot be read") if case == "run.yaml a pipe" else shown is not None
    assert promptly(studio.latest_run) and promptly(lambda: slot_holder(runs)) is None


def test_run_yaml_is_parsed_once_per_process_for_its_text_and_each_reader_gets_its_own_copy(tmp_path, monkeypatch):
    """Issue 43: the run process read its spec for the machine's slot, the trainer's arguments and the resume — three
    parses of one file; the studio parsed every run's for its table on each refresh."""
    from engines.runs import rundir

    calls = []
    real = rundir.load_yaml_text
    monkeypatch.setattr(rundir, "load_yaml_text", lambda *a, **k: calls.append(1) or real(*a, **k))
    rundir._parsed_spec.cache_clear()
    run = rundir.RunDir(tmp_path / "run-a")
    run.path.mkdir()
    run.write_spec({"engine": "trl", "config": {"learning_rate": 0.001}})
    first = run.read_spec()
    first["config"]["learning_rate"] = 9.0  # a reader's change stays its own
    assert run.read_spec()["config"]["learning_rate"] == 0.001 and len(calls) == 1
    run.write_spec({"engine": "trl", "config": {"learning_rate": 0.002}})
    assert run.read_spec()["config"]["learning_rate"] == 0.002 and len(calls) == 2  # a new text is read anew
