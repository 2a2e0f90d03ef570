"""status.json has several writers in a training process (the trainer's callbacks, an engine's output-tailing
thread, the queue's heartbeat) and beside it (the studio recording a killed run). Each write is a read-modify-write
of the whole file: two at once lost one's fields (issue 32: Stop showed stopping → running → stopped, a progress
update putting ``running`` back over ``stopping``). Writes hold the run directory's lock; none is lost."""

from __future__ import annotations

import multiprocessing
import threading

from engines.runs.lifecycle import record_killed
from engines.runs.rundir import RunDir

WRITES = 150


def _write_many(path: str, name: str) -> None:
    run = RunDir(path)
    for i in range(WRITES):
        run.write_status(durable=False, **{name: i})


def test_threads_writing_at_once_lose_no_field(tmp_path):
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    names = [f"writer_{k}" for k in range(4)]
    threads = [threading.Thread(target=_write_many, args=(str(run.path), n)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    status = run.read_status()
    assert {n: status.get(n) for n in names} == {n: WRITES - 1 for n in names}


def test_processes_writing_at_once_lose_no_field(tmp_path):
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    names = ["proc_a", "proc_b", "proc_c"]
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(str(run.path), n)) for n in names]
    for p in procs:
        p.start()
    _write_many(str(run.path), "parent")
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    status = run.read_status()
    assert {n: status.get(n) for n in [*names, "parent"]} == {n: WRITES - 1 for n in [*names, "parent"]}


def test_a_stop_written_while_progress_is_written_stays(tmp_path):
    """The walkthrough's flicker, as a sequence: a thread keeps writing progress while the run says stopping."""
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    run.write_status(state="running")
    done = threading.Event()

    def progress():
        step = 0
        while not done.is_set():
            step += 1
            run.write_status(durable=False, step=step)

    t = threading.Thread(target=progress)
    t.start()
    try:
        for _ in range(50):
            run.write_status(state="stopping")
            assert run.read_status()["state"] == "stopping"
            run.write_status(state="running")
    finally:
        done.set()
        t.join(timeout=60)


def test_the_lock_is_reentrant_for_a_holder_that_writes(tmp_path):
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    run.write_status(state="running", pid=1)  # pid 1 lives, but the holder decides by the state
    status = record_killed(run, "killed for the test")  # holds the lock and writes the status inside it
    assert status["state"] == "failed" and run.read_status()["state"] == "failed"
