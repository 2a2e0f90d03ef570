"""The studio's children never stay <defunct>: the chat model that exited when idle and an engine's setup
that finished are reaped by the studio's watchdog, though nothing asks them for their exit code."""

from __future__ import annotations

import psutil

from aworld_gui.worker.check_worker import CheckWorker
from aworld_gui.tabs.engine_setup import DONE, EngineSetups
from aworld_gui.core.studio import Studio
from engines.core.modules import Modules
from engines.core.prepare import prepare_run
from engines.swift import environment as E
from testing.swift_fakes import stand_in_venv
from testing.waiting import wait_for


def gone_or_zombie(pid: int) -> str:
    try:
        return "zombie" if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE else "alive"
    except psutil.NoSuchProcess:
        return "gone"


def test_an_idle_chat_model_and_a_finished_setup_are_reaped(tmp_path, monkeypatch, demo):
    venv = stand_in_venv(tmp_path / "venv-swift", pause_s=0.05)
    monkeypatch.setenv(E.VENV_ENV, str(venv))
    monkeypatch.delenv(E.PYTHON_ENV, raising=False)
    studio = Studio(tmp_path / "runs", worker=CheckWorker())  # not started: its watchdog step is called here
    studio.chat.idle_timeout_s = 2
    try:
        setups = EngineSetups(studio.runs_dir)
        setups.start("swift")
        wait_for(lambda: (setups.state("swift") or {}).get("state") == DONE, 120, "the setup done")
        import json

        setup_pid = json.loads(setups.paths("swift")[2].read_text())["pid"]
        run = prepare_run(
            Modules(
                demo["agent"], demo["train"], demo["test"], demo["reward"], {"max_steps": 1}, train_engine_name="trl"
            ),
            runs_dir=str(studio.runs_dir),
        )
        events = list(studio.chat.stream(str(run.path), "base", [{"role": "user", "content": "Say the letter A:"}]))
        assert events[-1]["type"] == "done"
        chat_pid = studio.chat._proc.pid
        wait_for(
            lambda: gone_or_zombie(chat_pid) != "alive" and gone_or_zombie(setup_pid) != "alive",
            60,
            "the chat model exited when idle, the setup ended",
        )
        # nobody asked for their exit code: zombies, unless another studio of this process (an earlier test's
        # watchdog, the same reaper of every detached child) got there first — never alive
        assert {gone_or_zombie(chat_pid), gone_or_zombie(setup_pid)} <= {"zombie", "gone"}
        # the watchdog's step, every second in the studio (a process whose threads are still ending shows as a
        # zombie a moment before it can be reaped)
        wait_for(
            lambda: studio._reap() or (gone_or_zombie(chat_pid), gone_or_zombie(setup_pid)) == ("gone", "gone"),
            30,
            "both reaped",
        )
        events = list(studio.chat.stream(str(run.path), "base", [{"role": "user", "content": "Say the letter B:"}]))
        assert events[0]["type"] == "restarted" and "idle" in events[0]["cause"]  # the chat still says why
    finally:
        studio.chat.stop()
