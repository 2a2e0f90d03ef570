"""Runs forked from the preloaded fork server (engines/runs/launcher.py, engines/fork_server.py) are the same
processes a fresh interpreter would have been: the same environment (credentials only by ``${NAME}``, the MCP
servers' variables only in their table: engines/isolation/server_env.py), their own session, no inherited descriptor, the same ``sys.argv``; they
outlive the launcher; what the fork server cannot take identically is started fresh, and says why."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psutil
import pytest

from engines.core.modules import Modules
from engines.isolation.read_only_files import temp_root
from engines.runs.launcher import Launcher
from engines.runs.lifecycle import Slot, spawn_run
from engines.core.prepare import prepare_run
from engines.runs.rundir import RunDir
from testing.studio import end_process_group
from testing.waiting import wait_for

CONFIG = {"max_steps": 1, "prompts_per_step": 2, "num_generations": 4, "save_steps": 1, "eval_steps": 0}
#: a reward that writes what its process sees, once per process (the check's dry run is another process)
SPY = """
import json, os, sys
from engines.isolation import server_env

def spy(completion, answer, **kw):
    path = os.path.join(os.environ["SPY_DIR"], f"{os.getpid()}.json")
    if not os.path.exists(path):
        with open(path, "w") as f:
            json.dump({"env": dict(os.environ), "sid": os.getsid(0), "pid": os.getpid(), "argv": sys.argv,
                       "fds": sorted(int(n) for n in os.listdir("/proc/self/fd")), "servers": server_env.values(),
                       "cwd": os.getcwd()}, f)
    return 1.0
"""


@pytest.fixture(scope="module")
def launcher():
    # the run's environment must not differ from the fork server's in a variable read at import time: this test
    # process runs torch (which sets TORCHINDUCTOR_CACHE_DIR); the studio, which starts runs, never imports it
    os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
    la = Launcher().start()
    assert la._settled.wait(300) and la.ready(), la._failed
    yield la
    la.close()


def spied_run(tmp_path: Path, demo: dict, name: str, monkeypatch) -> tuple[RunDir, Path]:
    spy_dir = tmp_path / f"spy-{name}"
    spy_dir.mkdir()
    monkeypatch.setenv("SPY_DIR", str(spy_dir))  # a plain variable, handed to every run by the operator's allowlist
    monkeypatch.setenv("AWORLD_USER_ENV_ALLOW", "SPY_DIR")
    reward = tmp_path / "spy_reward.py"
    reward.write_text(SPY)
    agent = tmp_path / "agent.yaml"
    agent.write_text(Path(demo["agent"]).read_text().replace("../models/tiny-letters", demo["model"]))
    run = prepare_run(
        Modules(str(agent), demo["train"], demo["test"], f"{reward}:spy", CONFIG, "trl"), str(tmp_path / name)
    )
    return run, spy_dir


def trained(run: RunDir) -> dict:
    return wait_for(
        lambda: (s := run.read_status()).get("state") in ("finished", "failed") and s, 240, f"{run.run_id} to end"
    )


def seen_by_run(spy_dir: Path, pid: int) -> dict:
    return json.loads((spy_dir / f"{pid}.json").read_text())


def test_a_forked_run_sees_what_a_fresh_interpreter_would(tmp_path, demo, launcher, monkeypatch):
    monkeypatch.setenv("HIDDEN_API_KEY", "never-given")
    seen = {}
    for how in ("forked", "exec"):
        run, spy_dir = spied_run(tmp_path, demo, how, monkeypatch)
        os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)  # set by torch in this process's checks (see launcher())
        pid = spawn_run(run.path, launcher=launcher if how == "forked" else None)
        status = trained(run)
        assert status["state"] == "finished", run.log_path.read_text()[-3000:]
        assert status["spawned"] == how, status
        seen[how] = seen_by_run(spy_dir, pid)
        assert seen[how]["argv"][1:] == ["run", str(run.path)], seen[how]["argv"]
        assert seen[how]["sid"] == pid  # a session of its own: it outlives whoever started it
        assert "step 1/1" in run.log_path.read_text()  # its output in its log
        assert "Exception ignored" not in run.log_path.read_text()  # (the server's temporary folders are its own)
    fork, fresh = seen["forked"], seen["exec"]
    drop = {"SPY_DIR", "_"}  # the folder differs by design; `_` is the shell's

    def same_place(env: dict) -> dict:  # each run has a private temporary folder of its own
        temp = env["TMPDIR"]
        assert temp.startswith(temp_root() + "/"), temp
        return {k: v.replace(temp, "<the run's temporary folder>") for k, v in env.items() if k not in drop}

    assert same_place(fork["env"]) == same_place(fresh["env"])
    assert "HIDDEN_API_KEY" not in fork["env"]
    assert fork["servers"] == fresh["servers"] == {}
    assert fork["argv"][0] == fresh["argv"][0] and fork["argv"][0].endswith("engines/__main__.py")
    assert fork["fds"] == fresh["fds"] and fork["cwd"] == fresh["cwd"]


def test_a_forked_run_outlives_the_launcher(tmp_path, demo):
    os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
    la = Launcher().start()
    assert la._settled.wait(300) and la.ready(), la._failed
    run = prepare_run(
        Modules(
            demo["agent"],
            demo["train"],
            demo["test"],
            demo["reward"],
            {**CONFIG, "max_steps": 5000, "save_steps": 5000},
            "trl",
        ),
        str(tmp_path / "runs"),
    )
    pid = spawn_run(run.path, launcher=la)
    try:
        assert run.read_status()["spawned"] == "forked"
        wait_for(lambda: run.read_jsonl("metrics.jsonl"), 120, "the first step")
        server = la._proc.pid
        la.close()
        assert not psutil.pid_exists(server) or psutil.Process(server).status() == psutil.STATUS_ZOMBIE
        steps = len(run.read_jsonl("metrics.jsonl"))
        wait_for(lambda: len(run.read_jsonl("metrics.jsonl")) > steps + 2, 60, "the run to go on training")
        assert run.read_status()["state"] == "running"
    finally:
        end_process_group(pid)


def test_what_the_fork_server_cannot_take_alike_is_started_fresh_and_says_why(tmp_path, demo, launcher):
    runs = tmp_path / "runs"
    run = prepare_run(Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], CONFIG, "trl"), str(runs))
    # a thread setting read when torch is imported: a fork would keep the server's
    spawn_run(run.path, env={"OMP_NUM_THREADS": "3"}, launcher=launcher)
    status = run.read_status()
    assert status["spawned"] == "exec" and "OMP_NUM_THREADS" in status["spawned_why"], status
    assert trained(run)["state"] == "finished"
    # a run that waits for the machine's slot waits as a small process (tests/test_run_queue.py), never a fork
    queued = prepare_run(Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], CONFIG, "trl"), str(runs))
    slot = Slot(runs)
    assert slot.try_acquire()
    try:
        spawn_run(queued.path, launcher=launcher)
        status = queued.read_status()
        assert status["spawned"] == "exec" and "slot" in status["spawned_why"], status
    finally:
        slot.release()
    assert trained(queued)["state"] == "finished"


def test_the_fork_server_says_how_a_command_it_forked_ended(tmp_path, launcher):
    """It reaps what it forks, so it is the one that can tell the exit code (the chat model's restart note says it:
    tests/test_chat.py kills one forked by the studio's fork server and reads "killed by SIGKILL")."""
    spawned = launcher.spawn(["no-such-command"], tmp_path / "cli.log", env=launcher._env)
    assert spawned.how == "forked" and spawned.popen is None, spawned
    code = wait_for(lambda: launcher.returncode(spawned.pid), 60, "the command's exit code", retry_errors=False)
    assert code == 2 and "invalid choice: 'no-such-command'" in (tmp_path / "cli.log").read_text()
    assert launcher.returncode(os.getpid()) is None  # not one of its children
