"""A run launched while another holds the machine's training slot waits as a small process (the engine,
torch and the model are loaded only when its turn comes), shows its place in the queue and what it waits
for, then trains."""

from __future__ import annotations

import os
import time

import psutil

from engines.core.modules import Modules
from engines.core.prepare import prepare_run
from engines.runs.rundir import RUNNING, RunDir
from engines.runs.lifecycle import Slot, spawn_run
from testing.studio import end_process_group
from testing.waiting import wait_for

CONFIG = {"max_steps": 2, "prompts_per_step": 2, "num_generations": 4, "save_steps": 2}


def holder_run(runs_dir) -> RunDir:
    """A run directory owned by this test process, which holds the slot (as a training run would)."""
    run = RunDir.create(runs_dir, "holder")
    run.write_spec({"engine": "holder", "run_id": run.run_id})
    run.mark_process(RUNNING, started=time.time())
    return run


def test_a_queued_run_waits_small_then_trains(tmp_path, demo):
    runs = tmp_path / "runs"
    holder = holder_run(runs)
    slot = Slot(runs)
    assert slot.try_acquire()
    queued = prepare_run(
        Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], CONFIG, train_engine_name="trl"),
        runs_dir=str(runs),
    )
    assert queued.read_spec()["machine_slot"] is True
    pid = spawn_run(queued.path)
    try:
        st = wait_for(
            lambda: (s := queued.read_status()).get("state") == "queued" and s.get("queue_position") and s,
            120,
            "the run to queue",
        )
        assert st["queue_position"] == 1 and st["waiting_for"] == holder.run_id
        time.sleep(2.0)  # settled in its wait loop
        proc = psutil.Process(pid)
        rss_mb = proc.memory_info().rss / 2**20
        maps = open(f"/proc/{pid}/maps").read()
        assert "libtorch" not in maps, "a queued run loaded torch before its turn"
        assert rss_mb < 150, f"a queued run holds {rss_mb:.0f} MB while it waits"
        assert queued.read_status()["state"] == "queued"
        slot.release()  # the running job ends: the queued one starts
        done = wait_for(
            lambda: (s := queued.read_status()).get("state") in ("finished", "failed") and s,
            300,
            "the queued run to train",
        )
        assert done["state"] == "finished", done
        assert done.get("queue_position") is None and done.get("waiting_for") is None
        events = [e["event"] for e in queued.read_jsonl("events.jsonl")]
        assert events.index("queued") < events.index("started") < events.index("finished")
        # the log pane has a line per logged step, as trainers print them
        log = queued.log_path.read_text()
        assert "step 1/2 · reward " in log and "step 2/2 · reward " in log and " steps/s" in log
    finally:
        slot.release()
        end_process_group(pid)


def test_a_run_stopped_while_queued_never_loads_the_engine(tmp_path, demo):
    runs = tmp_path / "runs"
    holder_run(runs)
    slot = Slot(runs)
    assert slot.try_acquire()
    queued = prepare_run(
        Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], CONFIG, train_engine_name="trl"),
        runs_dir=str(runs),
    )
    pid = spawn_run(queued.path)
    try:
        wait_for(
            lambda: queued.read_status().get("state") == "queued" and queued.read_status().get("queue_position"),
            120,
            "the run to queue",
        )
        queued.request_stop("test")
        wait_for(lambda: queued.read_status().get("state") == "stopped", 60, "stopped while queued")
        assert "stopped while queued" in queued.log_path.read_text() or any(
            e.get("message") == "stopped while queued" for e in queued.read_jsonl("events.jsonl")
        )
        wait_for(
            lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
            30,
            "the run process to exit",
        )
    finally:
        slot.release()
        end_process_group(pid)
    assert os.path.exists(queued.path / "run.yaml")
