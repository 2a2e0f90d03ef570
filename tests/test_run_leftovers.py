"""Nothing a run's user code starts outlives the run (issue 41's third probe): a reward that forked twice into a
session of its own, ignoring SIGTERM and SIGHUP, kept running after its run finished — holding the run's
train.log and the machine's training-slot lock — and after the studio was stopped. The run process adopts what its
user code leaves (a child subreaper) and kills it when it ends (engines.isolation.process_tree.owning_what_it_starts)."""

from __future__ import annotations

import psutil

from engines.core.modules import Modules
from engines.core.prepare import prepare_run
from engines.runs.lifecycle import effective_status, spawn_run
from testing.waiting import wait_for

DAEMON_REWARD = """
import os, signal, sys, time

from engines.isolation.sandbox import inside

PIDS = {pids!r}
_started = False


def score(completion, answer, **kw):
    global _started
    # in the run's process (`python -m engines run <dir>`), not in a check's isolated call (killed whole by its
    # sandbox) nor in the test's own process (AgentTrainer's checks load the reward here too)
    if sys.argv[1:2] == ["run"] and not inside() and not _started:
        _started = True
        if os.fork() == 0:  # a daemon as a careless reward starts one: twice forked, its own session
            os.setsid()
            if os.fork() == 0:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                signal.signal(signal.SIGHUP, signal.SIG_IGN)
                with open(PIDS, "a") as f:
                    f.write(f"{{os.getpid()}}\\n")
                while True:
                    time.sleep(0.5)
            os._exit(0)
    return 1.0 if completion.strip()[:1] == answer else 0.0
"""


def test_a_daemon_a_reward_started_dies_with_its_run(tmp_path, demo):
    pids = tmp_path / "daemon.pids"
    reward = tmp_path / "daemon_reward.py"
    reward.write_text(DAEMON_REWARD.format(pids=str(pids)), encoding="utf-8")
    run = prepare_run(
        Modules(
            demo["agent"],
            demo["train"],
            None,
            f"{reward}:score",
            {"max_steps": 2, "prompts_per_step": 2, "num_generations": 2, "save_steps": 100},
            train_engine_name="trl",
        ),
        runs_dir=str(tmp_path / "runs"),
    )
    spawn_run(run.path)
    wait_for(lambda: effective_status(run)["state"] in ("finished", "failed"), 240, "the run to end")
    assert effective_status(run)["state"] == "finished", run.log_path.read_text()[-2000:]
    started = [int(p) for p in pids.read_text().split()]
    assert started, "the reward started no daemon: the test shows nothing"

    def alive(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    wait_for(lambda: not any(alive(p) for p in started), 15, f"the run's leftover daemons {started} to be gone")
