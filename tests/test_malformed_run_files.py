"""One bad run folder never breaks the Runs list for everyone (issue 41, item 6): a run.yaml that is a line of text,
invalid YAML or a list, a label.json that is no object — that run lists with the reason, the others as usual, and
its status answers; a link in the runs folder is no run (listed under its target's name, it could not be found by
its own; pointing out of the runs folder, it would serve files from elsewhere)."""

from __future__ import annotations

import json

import pytest

from aworld_gui.core.run_cache import RunCache
from aworld_gui.core.studio import Studio
from aworld_gui.tabs.runs_tab import table_rows
from engines.runs.rundir import RunDir

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
