"""The check worker: warm re-checks, time limits, crashes, user code kept out of the studio."""

from __future__ import annotations

import os
import sys
import time

import pytest
from testing.waiting import processes_marked, wait_for

from aworld_gui.core import inputs as inp
from aworld_gui.core.studio import Studio
from aworld_gui.worker.check_worker import CheckWorker, WorkerError


@pytest.fixture(scope="module")
def worker():
    w = CheckWorker(default_timeout_s=60, task_modules=["testing.worker_tasks"])
    w.start(wait=True)
    yield w
    w.close()


def test_demo_checks_green_and_a_recheck_is_fast(worker):
    worker.call("check", inputs=inp.demo_inputs().to_dict())  # warm caches (datasets, tokenizer files)
    t0 = time.perf_counter()
    report = worker.call("check", inputs=inp.demo_inputs().to_dict())
    elapsed = time.perf_counter() - t0
    assert {m: r["status"] for m, r in report["results"].items()} == {
        "agent": "ok",
        "dataset": "ok",
        "reward": "ok",
        "config": "ok",
        "engine": "ok",
    }
    assert "<|im_start|>user\nSay the letter A:" in report["prompt"]["text"]
    assert report["preview"]["train"]["total"] == 24
    # warm: the fork starts with the engines imported and warmed, so a re-check costs less than the preload alone,
    # which a cold check would pay first — both measured in this run (a fixed 1 s bound failed under a loaded
    # fresh-clone run: 2.66 s; the preload takes about 6.5 s here, a warm re-check about 0.3 s)
    preload_s = worker.info["preload_s"]
    assert elapsed < preload_s, f"a warm re-check took {elapsed:.2f} s, the worker's preload {preload_s:.2f} s"


def test_a_call_over_its_time_limit_is_killed_and_the_worker_keeps_serving(worker):
    pid = worker.pid
    t0 = time.perf_counter()
    with pytest.raises(WorkerError) as e:
        worker.call("sleep", timeout_s=1, seconds=30)
    assert e.value.kind == "timeout" and time.perf_counter() - t0 < 5
    assert worker.call("echo", x=1) == {"x": 1}
    assert worker.pid == pid  # the warm zygote survived; only the fork was killed


def test_a_crash_is_reported_and_the_worker_keeps_serving(worker):
    with pytest.raises(WorkerError) as e:
        worker.call("crash")
    assert e.value.kind == "crash" and "signal 9" in str(e.value)
    assert worker.call("echo", y=2) == {"y": 2}


def test_a_dead_worker_is_restarted(worker):
    import os
    import signal

    restarts = worker.restarts
    os.kill(worker.pid, signal.SIGKILL)
    # at once: the call may reach the dying worker (its pipe still open) or find it gone; either way it is
    # answered, by the restarted worker
    assert worker.call("echo", z=3) == {"z": 3}
    assert worker.restarts == restarts + 1


def test_a_worker_dead_but_not_yet_reaped_is_not_sent_the_retry(worker):
    """Its pipe closes before its exit status can be read, so ``poll()`` still says "running" for a moment: the
    retry wrote to the dead worker (BrokenPipe) and the call failed in CI ('the check worker died; it restarts
    with the next check'). Here that moment lasts: the dead worker's ``poll()`` answers None until the end."""
    import os
    import signal

    dead = worker._proc
    dead.poll = lambda: None  # the window between the pipe's end and the exit status, held open
    restarts = worker.restarts
    os.kill(dead.pid, signal.SIGKILL)
    assert worker.call("echo", v=5) == {"v": 5}
    assert worker._proc is not dead and worker.restarts == restarts + 1


def test_a_call_whose_worker_dies_twice_fails_after_one_retry(worker, tmp_path):
    """The call's worker is killed while it runs, and again when the call is retried on the restarted one (by this
    process: the call itself cannot signal its worker, engines/isolation/scoped.py)."""
    import threading

    from testing.worker_tasks import kill_named_workers

    marker = str(tmp_path / "worker-pid")
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=lambda: killed.append(kill_named_workers(marker, 2, stop)), daemon=True)
    killer.start()
    restarts = worker.restarts
    try:
        with pytest.raises(WorkerError) as e:
            worker.call("kill_worker", marker=marker, timeout_s=20)
    finally:
        stop.set()
        killer.join(10)
    assert killed == [2] and e.value.kind == "crash" and "the check worker died" in str(e.value)
    assert worker.call("echo", w=4) == {"w": 4}
    assert worker.restarts == restarts + 2  # the call was sent twice, then the next call restarted it again


def test_a_hanging_reward_marks_the_reward_module_and_never_runs_in_this_process(worker, tmp_path):
    hang = tmp_path / "hang_reward.py"
    hang.write_text("import time\n\ndef slow(completion, answer, **kw):\n    time.sleep(60)\n    return 1.0\n")
    studio = Studio(tmp_path / "runs", worker=worker, check_timeout_s=4)  # not started: no watchdog
    si = inp.demo_inputs()
    si.rewards = [{"ref": f"{hang}:slow", "weight": 1.0}]
    t0 = time.perf_counter()
    report = studio.check(si)
    assert time.perf_counter() - t0 < 60
    res = report["results"]
    assert res["reward"]["status"] == "error" and "reward check timed out" in res["reward"]["message"]
    assert res["config"]["message"].startswith("not checked")
    assert not report["ok"]
    assert not any(name.startswith("_aworld_user_") for name in sys.modules)
    # the next check (a fine reward) works at once
    report = studio.check(inp.demo_inputs())
    assert report["ok"], report["results"]


def test_a_reward_that_forks_300_processes_is_stopped_blamed_and_leaves_the_worker_well(worker, tmp_path):
    """Issue 29 item 8: 300 forks that setsid() away took the worker down (72.7 s, "the check worker did not
    answer" on every module, the next check 53 s). Now: the reward gets the error, naming the count and the
    limit, the other modules their own results, nothing is left running, and the next check is quick."""
    marker = f"aworld-forkbomb-{os.getpid()}-{tmp_path.name}"
    bomb = tmp_path / "forky.py"
    bomb.write_text(
        "import os, time\n\n"
        "def forky(completion, answer, **kw):\n"
        "    for _ in range(300):\n"
        "        if os.fork() == 0:\n"
        "            os.setsid()\n"
        f"            os.execv('/bin/sleep', [{marker!r}, '600'])\n"
        "    time.sleep(1)\n"
        "    return 1.0\n"
    )
    studio = Studio(tmp_path / "runs", worker=worker, check_timeout_s=30)  # not started: no watchdog
    si = inp.demo_inputs()
    si.rewards = [{"ref": f"{bomb}:forky", "weight": 1.0}]
    t0 = time.perf_counter()
    report = studio.check(si)
    elapsed = time.perf_counter() - t0
    res = report["results"]
    message = res["reward"]["message"]
    assert res["reward"]["status"] == "error", res
    assert "forky" in message and "started" in message and "more than the limit of 128" in message, message
    assert {m: res[m]["status"] for m in ("agent", "dataset", "engine")} == {
        m: "ok" for m in ("agent", "dataset", "engine")
    }
    assert elapsed < 20, f"the check took {elapsed:.1f} s"
    wait_for(lambda: not processes_marked(marker), 5, "every process the reward forked to be killed")
    t0 = time.perf_counter()
    report = studio.check(inp.demo_inputs())
    assert report["ok"], report["results"]
    assert time.perf_counter() - t0 < 5, "the next check was slow: the worker was left wedged"


def test_reward_file_functions_are_listed_from_the_worker(worker):
    fns = worker.call("reward_functions", path=str(inp.REWARDS_DIR / "letter_reward.py"))
    assert [f["name"] for f in fns] == ["letter_reward"]
    assert "Score one completion" in fns[0]["doc"]
    assert not any(name.startswith("_aworld_user_") for name in sys.modules)


def test_bad_dataset_is_an_error_on_the_dataset_module(worker, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "hi"\nnot json at all\n')
    si = inp.demo_inputs()
    si.train, si.test = str(bad), None
    report = worker.call("check", inputs=si.to_dict())
    assert report["results"]["dataset"]["status"] == "error"
    assert "bad.jsonl" in report["results"]["dataset"]["message"]


def test_a_worker_whose_studio_left_during_its_preload_exits_quietly():
    """Stopping the studio while its check worker still preloads closes the worker's pipe before
    it says ready: the worker ends with status 0 and no traceback."""
    import subprocess
    import sys

    from testing.studio import REPO_ROOT

    proc = subprocess.Popen(
        [sys.executable, "-m", "aworld_gui.worker.zygote"],
        cwd=str(REPO_ROOT),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # the studio is gone: nobody reads the worker's "ready"
    proc.stdin.close()
    proc.wait(timeout=120)
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err, err.decode()


def test_a_hanging_call_blocks_no_other_call_and_can_be_cancelled(worker):
    """Calls are independent: while one hangs, another is answered at once (the worker used to hold one
    lock for a whole call, so every check and launch waited up to the time limit); cancelling ends it."""
    import threading

    outcome = {}

    def slow():
        try:
            outcome["value"] = worker.call("sleep", timeout_s=50, call_id="slow-1", seconds=120)
        except WorkerError as e:
            outcome["error"] = e

    thread = threading.Thread(target=slow)
    t0 = time.perf_counter()
    thread.start()
    wait_for(lambda: worker.running >= 1, 30, "the slow call to start")
    assert worker.call("echo", a=1) == {"a": 1}
    assert time.perf_counter() - t0 < 30  # not after the slow call's 50 s limit
    assert worker.cancel("slow-1", "the test cancels it")
    thread.join(20)
    assert not thread.is_alive() and outcome["error"].kind == "cancelled"
    assert "the test cancels it" in str(outcome["error"])
    assert time.perf_counter() - t0 < 45


def test_a_newer_check_from_the_same_page_cancels_the_older(worker, tmp_path):
    import threading

    hang = tmp_path / "hang_reward.py"
    hang.write_text("import time\n\ndef slow(completion, answer, **kw):\n    time.sleep(120)\n    return 1.0\n")
    studio = Studio(tmp_path / "runs", worker=worker, check_timeout_s=90)
    stuck = inp.demo_inputs()
    stuck.rewards = [{"ref": f"{hang}:slow", "weight": 1.0}]
    first = {}
    thread = threading.Thread(target=lambda: first.update(studio.check(stuck, client="page-1")))
    t0 = time.perf_counter()
    thread.start()
    wait_for(lambda: worker.running >= 1, 30, "the first check to start")
    second = studio.check(inp.demo_inputs(), client="page-1")  # the same page asks again
    thread.join(30)
    assert second["ok"], second["results"]
    assert first["cancelled"] and not first["ok"]
    assert time.perf_counter() - t0 < 60  # not the first check's 90 s limit
    other = studio.check(inp.demo_inputs(), client="page-2")  # another page is never cancelled by it
    assert other["ok"]
