"""A run file deleted, truncated or replaced mid-run (issue 29 item 13): metrics.jsonl was deleted, the
trainer recreated it, the studio kept showing its in-memory points and said nothing, and after a restart
11 steps were gone. Now the writer says what was lost (a ``warning`` event in events.jsonl) and the studio says
so, keeps the points it read while the file's new rows go on after them (issue 41 item 5), and shows the file alone
when it starts over."""

from __future__ import annotations

import os

import pytest

from aworld_gui.core.run_cache import RunState
from engines.runs.rundir import EVENTS_FILE, METRICS_FILE, SAMPLES_FILE, RunDir
from engines.runs.json_lines import JsonlTail


def warnings(run: RunDir) -> list[dict]:
    return [e for e in run.read_jsonl(EVENTS_FILE) if e.get("event") == "warning"]


def eleven_steps(tmp_path) -> RunDir:
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    for step in range(1, 12):
        run.append_metrics(step, {"loss": 1.0 / step, "reward": step / 10})
    return run


def delete(path):
    os.remove(path)


def truncate(path):
    with open(path, "r+b") as f:
        f.truncate(10)


def replace(path):
    tmp = path.with_name("other.jsonl")
    tmp.write_text('{"step": 99, "loss": 0.5}\n' * 200)  # longer than the file it replaces
    os.replace(tmp, path)


@pytest.mark.parametrize("how, damage", [("deleted", delete), ("truncated", truncate), ("replaced", replace)])
def test_the_writer_says_which_steps_its_metrics_file_lost(tmp_path, how, damage):
    run = eleven_steps(tmp_path)
    damage(run.file(METRICS_FILE))
    run.append_metrics(12, {"loss": 0.1})
    (lost,) = warnings(run)
    assert lost["code"] == "metrics_lost" and lost["how"] == how and lost["file"] == METRICS_FILE
    assert lost["rows"] == 11 and lost["steps"] == [1, 11]
    assert f"metrics.jsonl was {how} while the run was writing it" in lost["message"]
    assert "(steps 1–11) are gone from it" in lost["message"]
    run.append_metrics(13, {"loss": 0.1})
    assert len(warnings(run)) == 1  # said once; the watch goes on with the new file


def test_the_writer_says_nothing_when_its_files_only_grow(tmp_path):
    run = eleven_steps(tmp_path)
    other = RunDir(run.path)  # another writer of the same run (a callback's own RunDir) appends too
    other.append_metrics(12, {"loss": 0.1})
    run.append_sample({"step": 12, "prompt": "p"})
    run.append_metrics(13, {"loss": 0.1})
    run.event("checkpoint", step=13)
    assert warnings(run) == []


def test_samples_and_events_files_lost_are_said_too(tmp_path):
    run = eleven_steps(tmp_path)
    run.append_sample({"step": 11, "prompt": "p"})
    run.event("checkpoint", step=11)
    os.remove(run.file(SAMPLES_FILE))
    os.remove(run.file(EVENTS_FILE))
    run.append_sample({"step": 12, "prompt": "p"})
    run.event("checkpoint", step=12)
    codes = [e["code"] for e in warnings(run)]
    assert codes == ["events_lost", "samples_lost"], codes  # (the first warning found events.jsonl gone too)
    assert any(e.get("step") == 12 for e in run.read_jsonl(EVENTS_FILE) if e["event"] == "checkpoint")


def test_a_tail_reads_a_replaced_file_from_its_start(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 1}\n{"step": 2}\n')
    tail = JsonlTail(path)
    assert [r["step"] for r in tail.read_new()] == [1, 2]
    tmp = tmp_path / "new.jsonl"
    tmp.write_text('{"step": 7}\n{"step": 8}\n{"step": 9}\n')  # bigger: the old offset falls inside it
    os.replace(tmp, path)
    assert [r["step"] for r in tail.read_new()] == [7, 8, 9] and tail.replaced == 1
    os.remove(path)
    assert tail.read_new() == [] and tail.replaced == 2
    assert tail.read_new() == [] and tail.replaced == 2  # still gone: counted once


def test_the_studio_keeps_the_points_it_read_when_the_trainer_goes_on_and_says_so(tmp_path):
    """Issue 41 item 5: metrics.jsonl deleted mid-run, recreated from the next step — the Monitor showed 73 of 160
    points and no notice. The studio keeps the points it had read while the new rows go on after them, and says
    the file lost them; after a restart the run's own warning says which steps are gone."""
    run = eleven_steps(tmp_path)
    state = RunState(run.path).refresh(force=True)
    assert state.rows == 11 and state.series["loss"].count == 11
    os.remove(run.file(METRICS_FILE))
    state.refresh(force=True)
    (notice,) = [e for e in state.events if e.get("code") == "metrics_replaced"]
    assert "metrics.jsonl was deleted, truncated or replaced" in notice["message"]
    assert "the 11 step row(s) read before (up to step 11) are no longer in it" in notice["message"]
    assert "the charts keep them" in notice["message"]
    assert state.rows == 11 and state.series["loss"].count == 11  # nothing new yet: what was read stays
    run.append_metrics(12, {"loss": 0.1})  # the trainer goes on: it recreates the file and says what is gone
    state.refresh(force=True)
    assert state.series["loss"].xs == [float(s) for s in range(1, 13)] and state.last_step == 12 and state.rows == 12
    assert any(e.get("code") == "metrics_lost" for e in state.events)
    restarted = RunState(run.path).refresh(force=True)  # after a restart, the file and the writer's word are left
    assert restarted.series["loss"].xs == [12.0]
    (lost,) = [e for e in restarted.events if e.get("code") == "metrics_lost"]
    assert lost["steps"] == [1, 11]


def test_a_metrics_file_that_starts_over_is_shown_as_it_is(tmp_path):
    """Rows that do not go on after the last step read are another history: the charts show the file alone."""
    run = eleven_steps(tmp_path)
    state = RunState(run.path).refresh(force=True)
    os.remove(run.file(METRICS_FILE))
    state.refresh(force=True)
    for step in (1, 2):
        run.append_metrics(step, {"loss": 0.5})
    state.refresh(force=True)
    assert state.series["loss"].xs == [1.0, 2.0] and state.rows == 2 and state.last_step == 2
