"""A run whose directory stops taking writes mid-run (issue 29 item 12) ends ``failed`` with the cause
"cannot write <file>: [Errno N] ...", not ``killed``: the real trl engine trains the tiny demo in its own
process, the run directory is made unwritable after a few steps (immutable files where ``chattr +i`` works —
as root, chmod stops nothing —, else every file it writes replaced by a folder: a real error from the
kernel either way), and the final status, which status.json refuses, reaches the studio and ``aworld-train
runs`` through ``<runs>/.fallback/<run_id>/``, with the model at that step saved there."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engines.core.modules import Modules
from engines.runs.lifecycle import delete_run, effective_status, kill_run, process_alive, spawn_run
from engines.core.prepare import prepare_run
from engines.runs.rundir import RunDir
from testing.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
AGENT = str(ROOT / "assets/agents/letters_agent.yaml")
TRAIN = str(ROOT / "assets/datasets/letters_train.jsonl")
REWARD = str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward"
CONFIG = {
    "max_steps": 5000,
    "learning_rate": 1e-3,
    "prompts_per_step": 2,
    "num_generations": 4,
    "save_steps": 1000,
    "eval_steps": 0,
}
WRITTEN = ("metrics.jsonl", "samples.jsonl", "events.jsonl", "status.json")


def _chattr_works(tmp_path: Path) -> bool:
    probe = tmp_path / "chattr-probe"
    probe.write_text("x")
    try:
        ok = subprocess.run(["chattr", "+i", str(probe)], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False
    if not ok:
        return False
    try:
        with open(probe, "a") as f:
            f.write("y")
        refused = False
    except PermissionError:
        refused = True
    subprocess.run(["chattr", "-i", str(probe)], check=True)
    return refused


def _immutable(run: RunDir, on: bool) -> None:
    subprocess.run(["chattr", "-R", "+i" if on else "-i", str(run.path)], check=True, capture_output=True)


def _replace_with_folders(run: RunDir) -> None:
    """Each file the run writes becomes a folder of the same name (appending or renaming onto it fails)."""
    for name in WRITTEN:
        p = run.file(name)
        p.unlink(missing_ok=True)
        p.mkdir()


@pytest.fixture(params=["immutable", "folders"])
def how(request, tmp_path):
    if request.param == "immutable" and not _chattr_works(tmp_path):
        pytest.skip("chattr +i does not stop writes on this filesystem (or is not allowed)")
    return request.param


@pytest.fixture
def long_run(tmp_path, how):
    run = prepare_run(Modules(AGENT, TRAIN, None, REWARD, CONFIG, "trl"), runs_dir=str(tmp_path / "runs"))
    yield run
    if process_alive(run.read_status()):
        kill_run(run.path, grace_s=0)
    if how == "immutable":
        _immutable(run, on=False)  # pytest must be able to delete tmp_path


def test_an_unwritable_run_dir_fails_the_run_with_the_file_and_errno(long_run, how, tmp_path):
    run = long_run
    spawn_run(run.path)
    wait_for(lambda: (run.read_status().get("step") or 0) >= 3, timeout=300)
    if how == "immutable":
        _immutable(run, on=True)
        expected = "[Errno 1] Operation not permitted"
    else:
        _replace_with_folders(run)
        expected = "[Errno 21] Is a directory"
    ended = ("failed", "finished", "stopped")
    status = wait_for(lambda: (s := effective_status(run)).get("state") in ended and s, timeout=120, what="the end")

    assert status["state"] == "failed" and not status.get("lost"), status  # not "killed": the process said why
    cause = status["cause"]
    assert cause.startswith("cannot write ") and cause.endswith(expected), cause
    assert cause.split(":")[0].split()[-1] in WRITTEN, cause  # the run dir's file that refused, by name
    assert "make it writable" in status["error"] and str(run.path) in status["error"], status["error"]

    fallback = tmp_path / "runs" / ".fallback" / run.run_id
    assert (fallback / "status.json").is_file()  # status.json refused the final status: it went here
    assert "status.json" in status["fallback_reason"]
    # the steps trained since the last checkpoint are not lost: the model at the failing step is saved there
    saved = Path(status["fallback_checkpoint"])
    assert saved.parent == fallback / "checkpoints" and (saved / "model.safetensors").is_file()
    assert int(saved.name.split("-")[1]) >= 3 and f"saved to {saved}" in status["error"]

    # the studio shows the cause (it reads the runs tree only), and so does `aworld-train runs`
    from aworld_gui.core.run_cache import RunCache
    from aworld_gui.core.studio import Studio
    from aworld_gui.worker.check_worker import CheckWorker

    studio = Studio(tmp_path / "runs", worker=CheckWorker(), cache=RunCache())  # not started: no checks here
    shown = studio.status(run.run_id)
    assert shown["state"] == "failed" and shown["cause"] == cause and shown["error"] == status["error"]
    assert [r["cause"] for r in studio.list_runs()] == [cause]
    out = subprocess.run(
        [sys.executable, "-m", "engines", "runs", "--runs-dir", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        cwd=str(ROOT),
        check=True,
    ).stdout
    assert f"failed ({cause})" in out and ".fallback" not in out, out

    # once the run directory takes writes again, nothing writes over the run's own final word
    if how == "immutable":
        _immutable(run, on=False)
    else:
        for name in WRITTEN:
            shutil.rmtree(run.file(name))
    assert effective_status(run)["cause"] == cause


def test_the_final_status_goes_to_the_fallback_place_only_when_status_json_refuses_it(tmp_path):
    run = RunDir.create(tmp_path / "runs", "fake")
    run.write_status(state="running", step=7)
    assert run.end("finished", dict(step=7), state="finished")["state"] == "finished"
    assert not run.fallback_dir.exists()  # status.json took it: nothing elsewhere

    run.write_status(state="running")
    run.file("status.json").unlink()
    run.file("status.json").mkdir()  # a folder in its place: the rename onto it fails (EISDIR)
    with pytest.raises(OSError) as err:
        run.write_status(step=8)
    assert str(err.value) == "cannot write status.json: [Errno 21] Is a directory"
    assert str(run.path) in err.value.detail and "make it writable" in err.value.detail
    assert [p.name for p in run.path.iterdir() if p.name.endswith(".tmp")] == []  # no temporary file left

    status = run.end("failed", dict(cause="x"), state="failed", cause="x")
    assert status["fallback_reason"] == "cannot write status.json: [Errno 21] Is a directory"
    assert run.read_status()["state"] == "failed" and effective_status(run)["cause"] == "x"
    assert [e["event"] for e in run.read_jsonl("events.jsonl")][-1] == "failed"  # events.jsonl took the event

    shutil.rmtree(run.file("status.json"))  # writable again: a newer status.json is read over the fallback
    run.write_status(state="running", step=9)
    assert run.read_status()["state"] == "running" and run.read_status()["step"] == 9
    run.write_status(state="finished")
    delete_run(run.path)
    assert not run.fallback_dir.exists() and not run.path.exists()
