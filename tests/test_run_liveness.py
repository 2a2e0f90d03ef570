"""A run whose process dies without a final status (SIGKILL, a machine restart) is recorded in its run
directory — the contract — by the first reader that sees the dead pid: status.json says so and
events.jsonl has one ``failed`` event, however many readers race."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path


from engines.runs.lifecycle import effective_status, record_killed
from engines.runs.rundir import RunDir
from testing import studio as studio_helpers
from testing.studio import end_process_group, start_fake_run
from testing.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent


def killed_fake_run(tmp_path) -> RunDir:
    return studio_helpers.killed_fake_run(tmp_path / "runs")


def failed_events(run: RunDir) -> list[dict]:
    return [e for e in run.read_jsonl("events.jsonl") if e.get("event") == "failed"]


def test_a_killed_run_is_recorded_as_failed_in_its_run_directory(tmp_path):
    run = killed_fake_run(tmp_path)
    status = effective_status(run)
    assert status["state"] == "failed" and status["cause"] == "killed" and status["lost"] is True
    on_disk = run.read_status()
    assert on_disk["state"] == "failed" and on_disk["cause"] == "killed" and on_disk.get("ended")
    (event,) = failed_events(run)
    assert event["cause"] == "killed" and "gone without a final status" in event["message"]


def test_a_killed_run_ends_at_its_last_sign_of_life_not_when_it_is_noticed(tmp_path):
    """Issue 42 item 3: a run noticed dead minutes after it died showed those minutes as its elapsed time (2:33 for
    an 11 s run): its end is its last heartbeat (written at every step), not the reader's clock."""
    run = killed_fake_run(tmp_path)
    beat = run.read_status()["heartbeat"]
    time.sleep(1.5)
    noticed = time.time()
    status = effective_status(run)
    assert status["state"] == "failed" and status["ended"] == beat and beat < noticed - 1


def test_racing_readers_record_it_once(tmp_path):
    run = killed_fake_run(tmp_path)
    barrier = threading.Barrier(6)
    states = []

    def reader():
        barrier.wait()
        states.append(effective_status(RunDir(run.path))["state"])

    threads = [threading.Thread(target=reader) for _ in range(6)]
    for t in threads:
        t.start()
    code = (
        "import sys; from engines.runs.lifecycle import effective_status; from engines.runs.rundir import RunDir; "
        "print(effective_status(RunDir(sys.argv[1]))['state'])"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(run.path)], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    for t in threads:
        t.join()
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert states == ["failed"] * 6 and outs == ["failed"] * 3
    assert len(failed_events(run)) == 1


def test_the_cli_listing_records_it_too(tmp_path):
    run = killed_fake_run(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "engines", "runs", "--runs-dir", str(run.path.parent)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert out.returncode == 0 and "failed (killed)" in out.stdout
    assert run.read_status()["state"] == "failed" and len(failed_events(run)) == 1


def test_a_run_killed_after_a_stop_request_is_stopped_not_failed(tmp_path):
    run, pid = start_fake_run(tmp_path / "runs", "--steps", "100000", "--rate", "50", "--ignore-stop")
    try:
        run.request_stop("test")
        status = record_killed(run, "killed after the stop timeout")
        assert status["state"] == "stopped" and status["cause"] == "killed"
        assert record_killed(run, "again")["state"] == "stopped"  # recorded once
        assert [e["event"] for e in run.read_jsonl("events.jsonl")].count("stopped") == 1
    finally:
        end_process_group(pid)


def test_the_studio_records_a_killed_run_whichever_view_is_open(tmp_path):
    """Issue 42 item 3: with the Monitor on another run, a killed run read "running" in Runs for minutes and turned
    failed only once it was selected. The studio's watchdog looks at every run's liveness every few seconds: the
    run's own status.json says failed without any view reading it."""
    from aworld_gui.core.run_cache import RunCache
    from aworld_gui.core.run_watch import LIVENESS_S
    from aworld_gui.core.studio import Studio

    class NoChecks:  # the check worker is not what this test is about (nor started: the studio's own start)
        def start(self):
            pass

        def close(self):
            pass

    studio = Studio(tmp_path / "runs", worker=NoChecks(), cache=RunCache())
    other, other_pid = start_fake_run(tmp_path / "runs", "--steps", "100000", "--rate", "5")
    run = killed_fake_run(tmp_path)  # under the same runs folder
    assert studio.note_lost_runs() == [run.run_id]  # the other run lives on
    assert run.read_status()["state"] == "failed" and other.read_status()["state"] == "running"
    end_process_group(other_pid)
    studio_helpers.process_gone(other_pid)
    studio.start()  # the watchdog: nobody asks, the run directory is recorded
    try:
        wait_for(lambda: other.read_status()["state"] == "failed", 3 * LIVENESS_S, "the watchdog to record it")
    finally:
        studio.close()


def test_an_ended_run_never_has_its_pid_signalled(tmp_path):
    """A run trained in the caller's process (a notebook, a test, AgentTrainer.resume) ends naming that process, which
    lives on: Kill must not signal it (a test's teardown killed its own pytest worker so)."""
    import psutil

    from engines.runs.lifecycle import kill_run

    stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        run = RunDir.create(tmp_path / "runs", "trl")
        created = psutil.Process(stand_in.pid).create_time()
        for state in ("finished", "failed", "stopped"):
            run.write_status(state=state, pid=stand_in.pid, pid_create_time=created)
            assert kill_run(run.path, grace_s=1) is False and stand_in.poll() is None, state
        run.write_status(state="running")  # while it runs, Kill is what it says
        assert kill_run(run.path, grace_s=1) is True
        wait_for(lambda: stand_in.poll() is not None, 10, "the running run's process killed")
    finally:
        stand_in.kill()
        stand_in.wait()
