"""An engine's availability has one source: the studio's catalog is read again when a file the engine's
availability depends on changes, so the engine list, the engines table and the setup panel say what the check
says, right after a setup ends — with no page watching the setup, and on a page loaded afterwards."""

from __future__ import annotations

import subprocess
import sys

import pytest

from aworld_gui.worker.check_worker import CheckWorker
from aworld_gui.tabs.engine_setup import DONE, EngineSetupPanel, EngineSetups
from aworld_gui.core.studio import Studio
from engines.swift import environment as E
from testing.swift_fakes import stand_in_venv
from testing.waiting import wait_for


def swift(studio: Studio) -> dict:
    return studio.engine_info("swift")


@pytest.fixture
def studio(tmp_path, monkeypatch):
    venv = stand_in_venv(tmp_path / "venv-swift", pause_s=0.05)  # set up, but the setup has not finished
    monkeypatch.setenv(E.VENV_ENV, str(venv))
    monkeypatch.delenv(E.PYTHON_ENV, raising=False)
    studio = Studio(tmp_path / "runs", worker=CheckWorker(env={E.VENV_ENV: str(venv)}))
    studio.venv = venv
    yield studio
    studio.close()


def test_a_setup_started_from_the_studio_makes_swift_available_without_a_page_watching(studio):
    before = swift(studio)
    assert not before["available"] and "setup did not finish" in before["reason"]
    assert str(studio.venv / E.MARKER) in before["watch"]
    panel = EngineSetupPanel(studio)
    assert panel._view("swift")[0]["visible"] is True  # offered while unavailable
    setups = EngineSetups(studio.runs_dir)
    setups.start("swift")  # the button; no page ticks afterwards
    wait_for(lambda: (setups.state("swift") or {}).get("state") == DONE, 120, "the setup done")
    after = swift(studio)  # what a page loaded now is given
    assert after["available"], after
    assert after["reason"].startswith("ms-swift 4.6.0") and E.availability()[0]
    assert panel._view("swift")[0]["visible"] is False  # the panel agrees
    # the second time: the environment broken again (its marker gone) is seen as such, then set up again
    (studio.venv / E.MARKER).unlink()
    assert "setup did not finish" in swift(studio)["reason"]
    setups.start("swift")
    wait_for(
        lambda: (setups.state("swift") or {}).get("state") == DONE and swift(studio)["available"],
        120,
        "swift available after the second setup",
    )


def test_a_setup_run_in_a_terminal_is_seen_too(studio):
    assert not swift(studio)["available"]
    subprocess.run([sys.executable, "-m", "engines", "setup", "swift"], check=True, capture_output=True, timeout=120)
    assert swift(studio)["available"]
    calls = []
    real = studio.worker.call
    studio.worker.call = lambda *a, **k: calls.append(a) or real(*a, **k)
    swift(studio), swift(studio)
    assert calls == []  # unchanged files: the catalog is not read again
