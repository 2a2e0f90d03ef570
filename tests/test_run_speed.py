"""The Monitor's Speed tells what was measured (issue 32 §2): a live run's rate over its recent metric rows, an ended
run's from its closing summary (the steps its process trained over the time it took), never a rate over rows
written at once (a finished 12-step run showed 10122 steps/s)."""

from __future__ import annotations

import time

import pytest

from aworld_gui.core.run_cache import RunState
from engines.runs.rundir import RunDir


def _run(tmp_path, state: str, times: list[float]) -> RunDir:
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    run.write_status(state=state, step=len(times), total_steps=len(times), started=times[0] if times else None)
    for step, t in enumerate(times, start=1):
        run.append_metrics(step, {"loss": 1.0 / step}, when=t)
    return run


def test_a_live_run_shows_its_rate_over_recent_rows(tmp_path):
    t0 = time.time() - 10
    _run(tmp_path, "running", [t0 + 0.2 * i for i in range(12)])  # 5 steps/s
    assert RunState(tmp_path / "run").refresh(force=True).progress().steps_per_s == pytest.approx(5.0)


def test_rows_written_at_once_give_no_speed(tmp_path):
    t0 = time.time()
    _run(tmp_path, "finished", [t0 + 1e-4 * i for i in range(12)])
    assert RunState(tmp_path / "run").refresh(force=True).progress().steps_per_s is None


def test_an_ended_run_shows_what_its_process_measured(tmp_path):
    t0 = time.time() - 100
    run = _run(tmp_path, "finished", [t0 + 1e-4 * i for i in range(12)])
    run.event("summary", steps=12, seconds=42.9, steps_per_second=0.2797)
    assert RunState(run.path).refresh(force=True).progress().steps_per_s == pytest.approx(0.2797)
