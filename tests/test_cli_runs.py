"""`python -m engines train/run/runs/stop/engines` as a user runs them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from engines.core.modules import Modules
from engines.core.prepare import prepare_run
from engines.runs.rundir import RunDir

ROOT = Path(__file__).resolve().parent.parent
ARGS = [
    "--agent",
    "assets/agents/letters_agent.yaml",
    "--train",
    "assets/datasets/letters_train.jsonl",
    "--test",
    "assets/datasets/letters_test.jsonl",
    "--reward",
    "assets/rewards/letter_reward.py:letter_reward@1",
    "--engine",
    "trl",
]


def cli(*args, timeout=180):
    return subprocess.run(
        [sys.executable, "-m", "engines", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def test_train_runs_in_the_foreground_and_lists(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("max_steps: 3\nprompts_per_step: 2\nnum_generations: 4\nsave_steps: 3\n")
    runs = tmp_path / "runs"
    out = cli("train", *ARGS, "--config", str(cfg), "--run-path", str(runs))
    assert out.returncode == 0, out.stderr
    assert "finished:" in out.stderr
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    assert RunDir(run_dir).read_status()["state"] == "finished"
    listing = cli("runs", "--runs-dir", str(runs))
    assert run_dir.name in listing.stdout and "finished" in listing.stdout and "3/3" in listing.stdout


def test_train_with_a_bad_config_exits_2_with_the_reason(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("max_step: 3\n")
    out = cli("train", *ARGS, "--config", str(cfg), "--run-path", str(tmp_path / "runs"))
    assert out.returncode == 2
    assert "unknown config key 'max_step'" in out.stderr and 'did you mean "max_steps"' in out.stderr


def test_stop_command_stops_a_detached_run(tmp_path):
    run = prepare_run(
        Modules(
            str(ROOT / ARGS[1]),
            str(ROOT / ARGS[3]),
            None,
            str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward",
            {"max_steps": 5000, "prompts_per_step": 2, "num_generations": 4, "save_steps": 1000},
            "trl",
        ),
        runs_dir=str(tmp_path / "runs"),
    )
    from engines.runs.lifecycle import spawn_run

    spawn_run(run.path)
    deadline = time.time() + 120
    while (run.read_status().get("step") or 0) < 2 and time.time() < deadline:
        time.sleep(0.2)
    out = cli("stop", str(run.path), "--kill-after", "60")
    assert out.stdout.strip() == "stopped", out.stdout + out.stderr
    assert run.checkpoints()


def test_run_of_a_dir_with_a_broken_spec_records_the_failure(tmp_path):
    run = RunDir(tmp_path / "runs" / "r1")
    run.path.mkdir(parents=True)
    run.write_spec(
        {
            "engine": "trl",
            "agent": str(ROOT / ARGS[1]),
            "data": {"train": str(tmp_path / "gone.jsonl"), "test": None, "columns": None},
            "reward": [{"name": "exact_match"}],
            "config": {},
        }
    )
    out = cli("run", str(run.path))
    assert out.returncode == 2
    status = run.read_status()
    assert status["state"] == "failed" and status["cause"] == "bad data" and "does not exist" in status["error"]
    assert [e["event"] for e in run.read_jsonl("events.jsonl")] == ["failed"]


def test_run_of_a_folder_without_a_spec_is_refused_and_writes_nothing(tmp_path):
    """A folder that never got its run.yaml is no run: `run` on it used to queue behind a busy machine's
    slot (writing status.json, so the folder became a listed run) and then end in a traceback."""
    from engines.runs.lifecycle import Slot, list_run_dirs

    runs = tmp_path / "runs"
    folder = runs / "not-a-run"
    folder.mkdir(parents=True)
    busy = Slot(runs)  # another run holds the machine's training slot
    assert busy.try_acquire()
    try:
        out = cli("run", str(folder), timeout=30)
    finally:
        busy.release()
    assert out.returncode == 2
    assert f"error: {folder} has no run.yaml, so it is not a prepared run" in out.stderr
    assert "Traceback" not in out.stderr
    assert list(folder.iterdir()) == [] and list_run_dirs(runs) == []


def test_engines_lists_availability():
    out = cli("engines")
    lines = {line.split()[0]: line for line in out.stdout.splitlines() if line.strip()}
    assert "available" in lines["trl"]
    assert "verl" in lines
