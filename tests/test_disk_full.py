"""Issue 41 item 4: a run on a disk that fills up. On a 4 MB filesystem a run died saving a checkpoint (torch:
"unexpected pos"), status.json stayed ``running`` and the studio said ``failed · killed``. Here a tmpfs of 3 MB,
mounted by the test and removed after, holds the runs folder: the check warns before launch that the run's
checkpoints do not fit; the run fails with ``disk full: <path>`` and the free space, its unfinished checkpoint
removed and its last good one kept; a run whose process died there without a word is said to have died on a full
disk, not "killed"."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from engines.core.modules import Modules
from engines import AgentTrainer
from engines.core.checks import check_all
from engines.runs.causes import Cause
from engines.fit.disk_full import COMPLETE_MARK
from engines.runs.lifecycle import effective_status
from engines.runs.rundir import FAILED
from testing.studio import killed_fake_run

ROOT = Path(__file__).resolve().parent.parent
DEMO = dict(
    agent=str(ROOT / "assets/agents/letters_agent.yaml"),
    train_dataset=str(ROOT / "assets/datasets/letters_train.jsonl"),
    reward_func=f"{ROOT / 'assets/rewards/letter_reward.py'}:letter_reward",
)
#: 8 steps, a checkpoint every 2 (≈ 1.07 MB each, save_total_limit 2): the third does not fit in 3 MB
CONFIG = {"max_steps": 8, "save_steps": 2, "eval_steps": 0, "prompts_per_step": 2, "num_generations": 4}


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MB tmpfs at ``tmp_path/disk`` (the suite runs as root, as its README's machines do), unmounted after."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True)
    assert done.returncode == 0, f"mounting a 3 MB tmpfs needs root: {done.stderr.decode()}"
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_the_check_warns_when_the_checkpoints_do_not_fit_and_not_when_they_do(small_disk, tmp_path):
    def disk_warnings(run_path):
        config = [r for r in check_all(Modules(**DEMO, config=CONFIG, train_engine_name="trl"), run_path=str(run_path))]
        result = next(r for r in config if r.module == "config")
        return [w for w in result.warnings if w.startswith("disk:")], result

    warned, result = disk_warnings(small_disk / "runs")
    assert result.status == "warning" and len(warned) == 1, result.warnings  # not an error: space may be freed first
    assert "3.0 MB free" in warned[0] and "3 at once" in warned[0] and "save_total_limit" in warned[0], warned
    assert disk_warnings(tmp_path / "runs")[0] == []  # the machine's own disk has room


def test_a_run_that_fills_its_disk_says_so_and_keeps_its_last_good_checkpoint(small_disk):
    trainer = AgentTrainer(**DEMO, run_path=str(small_disk / "runs"), train_engine_name="trl", config=CONFIG)
    with pytest.raises(Exception):  # noqa: B017 - what torch raises on a short write (its errno is lost in C++)
        trainer.train()
    run = trainer.train_processor.run
    status = run.read_status()
    assert status["state"] == FAILED and status["cause"] == Cause.DISK_FULL, status
    assert status["error"].startswith(f"disk full: {run.path} (") and "free of 3.0 MB" in status["error"], status
    kept = Path(status["last_checkpoint"])
    assert (kept / COMPLETE_MARK).is_file() and (kept / "model.safetensors").is_file()
    assert f"the last good checkpoint is kept: {kept.name}" in status["error"]
    checkpoints = sorted(p.name for p in (run.path / "checkpoints").iterdir() if p.is_dir())
    assert all((run.path / "checkpoints" / c / COMPLETE_MARK).is_file() for c in checkpoints), checkpoints
    assert "was removed" in status["error"]  # the unfinished one: it made the room the status needed
    (failed,) = [e for e in run.read_jsonl("events.jsonl") if e.get("event") == "failed"]
    assert failed["cause"] == Cause.DISK_FULL
    # the estimate the check's warning uses, against what Transformers wrote
    written = sum(p.stat().st_size for p in kept.iterdir())
    estimate = trainer.train_processor.check_resources(trainer.train_processor.effective_config)[0]
    assert abs(estimate["memory"]["checkpoint_bytes"] - written) < 0.1 * written, (estimate, written)


def test_a_run_that_died_without_a_word_on_a_full_disk_is_said_to_have(small_disk):
    run = killed_fake_run(small_disk / "runs")
    with open(small_disk / "filler", "wb") as f:  # what filled the disk
        try:
            while True:
                f.write(b"\0" * (1 << 16))
                f.flush()
        except OSError:
            pass
    status = effective_status(run)  # it cannot be recorded (the disk is full): it is said all the same
    assert status["state"] == FAILED and status["cause"] == Cause.DISK_FULL and status["lost"] is True, status
    assert f"disk full: {run.path} (" in status["error"] and "free of 3.0 MB" in status["error"], status
    assert json.loads((run.path / "status.json").read_text())["state"] == "running"  # the disk took nothing
