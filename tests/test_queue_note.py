"""What a queued run waits for, in the Monitor's header and the Runs table: one function, the same place in line
and the same run named, the run holding the slot or the run queued before it — never "held by the running job"
when no run holds it. Real queue logic (engines/runs/lifecycle.py ``wait_for_slot``) in a process per queued run."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import psutil

from aworld_gui.worker.check_worker import CheckWorker
from aworld_gui.tabs.monitor_tab import MonitorTab
from aworld_gui.core.queue_note import queue_note
from aworld_gui.tabs.runs_tab import table_rows
from aworld_gui.core.studio import Studio
from engines.runs.rundir import FINISHED, QUEUED, RUNNING, STOPPING, RunDir
from engines.runs.lifecycle import Slot, slot_holder
from testing.waiting import wait_for

ME = {"pid": psutil.Process().pid, "pid_create_time": psutil.Process().create_time()}


def plain(html: str) -> str:
    """The English a page shows for the markers (i18n) and tags."""
    from aworld_gui.rendering.i18n import localize

    return re.sub(r"<[^>]+>", "", localize(str(html), "en")).replace("&#x27;", "'")


def a_run(runs, name: str, state: str, proc=None) -> RunDir:
    """A run directory whose process is ``proc`` (a stand-in process of its own), else this test's process."""
    run = RunDir.create(runs, name)
    run.write_spec({"engine": "fake", "run_id": run.run_id})
    who = ME if proc is None else {"pid": proc.pid, "pid_create_time": psutil.Process(proc.pid).create_time()}
    run.write_status(state=state, launched=time.time(), created=time.time(), **who)
    time.sleep(0.01)
    return run


def views(studio: Studio, run: RunDir) -> tuple[str, str]:
    """(the Monitor's header, the run's Runs-table state cell) as text."""
    st = studio.cache.refresh(run.path, force=True)
    header = MonitorTab(studio).header_html(run.run_id, st, "", [], 0.0)
    [row] = [r for r in table_rows(studio.list_runs()) if r[0] == run.run_id]
    return plain(header), plain(row[2])


WAITER = """import sys, time
from engines.runs.rundir import RUNNING, RunDir
from engines.runs.lifecycle import Slot, wait_for_slot
run = RunDir(sys.argv[1])
if wait_for_slot(run, Slot(sys.argv[2]), 0.05):      # a run process's wait, then it holds the slot and trains
    run.mark_process(RUNNING)
    time.sleep(120)
"""


def test_both_tabs_say_the_same_place_and_what_the_run_waits_for(tmp_path):
    runs = tmp_path / "runs"
    holder = a_run(runs, "holder", RUNNING)
    slot = Slot(runs)
    assert slot.try_acquire()  # the holder run's slot (this process, as a run would)
    first, second = a_run(runs, "first", QUEUED), a_run(runs, "second", QUEUED)
    studio = Studio(runs, worker=CheckWorker())
    procs = []
    for run in (first, second):  # each queued run's own process, as `aworld-train run` has
        procs.append(subprocess.Popen([sys.executable, "-c", WAITER, str(run.path), str(runs)]))
        wait_for(lambda: run.read_status().get("pid") == procs[-1].pid, 60, "the run's process waiting")  # noqa: B023
    try:
        wait_for(lambda: second.read_status().get("queue_position") == 2, 60, "the second run second in line")
        monitor, table = views(studio, second)
        assert "#2 in line" in table and table.removeprefix("Queued ") in monitor  # the Monitor says the table's words
        for text in (monitor, table):
            assert f"run {first.run_id}" in text and f"run {holder.run_id} holds the training slot" in text
        monitor, table = views(studio, first)
        assert "#1 in line" in table and table.removeprefix("Queued ") in monitor
        assert f"run {holder.run_id}, which holds the machine’s training slot" in monitor
        assert f"run {holder.run_id}, which holds the machine’s training slot" in table
        # the holder ends: the first run takes the slot; the second is now first in line, behind it
        holder.write_status(state="finished", ended=time.time())
        slot.release()
        wait_for(lambda: first.read_status().get("state") == RUNNING, 60, "the first run given the slot")
        wait_for(
            lambda: (
                second.read_status().get("queue_position") == 1
                and second.read_status().get("waiting_for") == first.run_id
            ),
            60,
            "the second run next",
        )
        monitor, table = views(studio, second)
        assert "#1 in line" in table and table.removeprefix("Queued ") in monitor
        assert f"run {first.run_id}, which holds" in monitor and f"run {first.run_id}, which holds" in table
        assert queue_note(first.read_status()) == "" and "in line" not in views(studio, first)[1]
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_no_running_job_is_claimed_when_no_run_holds_the_slot():
    status = {"state": "queued", "queue_position": 1, "queued_ahead": [], "waiting_for": None}
    text = plain(queue_note(status))
    assert "held by" not in text and "running job" not in text
    assert "#1 in line · waits for the machine’s training slot to be free" in text
    status = {"state": "queued", "queue_position": 3, "queued_ahead": ["a", "b"], "waiting_for": None}
    assert "2 runs queued before it (first: a)" in plain(queue_note(status, short=True))


def test_a_queued_run_is_never_named_the_slots_holder(tmp_path):
    """The slot's holder is the running run whose process the lock file names. A queued run whose status still has
    that pid (here: this process, which made it) was named instead when the folder listed it first — the order of a
    directory's listing, so the test above passed or failed by its runs' random suffixes."""
    runs = tmp_path / "runs"
    holder = a_run(runs, "holder", RUNNING)
    slot = Slot(runs)
    assert slot.try_acquire()
    try:
        for i in range(6):  # listed before the holder or after it (the listing's order is the folder's)
            a_run(runs, f"queued{i}", QUEUED)
        assert slot_holder(runs) == holder.run_id
        holder.write_status(state=STOPPING)
        assert slot_holder(runs) == holder.run_id
        holder.write_status(state=FINISHED)  # the lock file still names this process: no run holds the slot
        assert slot_holder(runs) is None
    finally:
        slot.release()
