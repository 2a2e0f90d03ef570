"""Resume (issue 45): a killed run continues from its checkpoint in its own run directory, step for step as an
uninterrupted run of the same spec; a finished run trains further; what cannot resume says why and changes nothing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engines.core.resume import prepare_resume
from engines.results.check_result import CheckError
from engines.runs.lifecycle import effective_status, list_run_dirs
from engines.runs.rundir import RunDir
from testing.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
CONFIG = {
    "max_steps": 12,
    "save_steps": 7,
    "prompts_per_step": 4,
    "num_generations": 4,
    "learning_rate": 0.002,
    "eval_steps": 100,
    "samples_per_step": 2,
}
#: the letters reward, holding its run once that run has logged step 9 (after its checkpoint at step 7, in its second
#: epoch: 24 prompts, 4 a step) while a file ``hold`` beside it names the run's folder (the runs folder's runs but those
#: the file lists after it, the runs that were there before): a run to kill mid-step at a known place, on any machine
HELD_REWARD = '''
import json
import time
from pathlib import Path

HOLD = Path(__file__).with_name("hold")


def _past_step_9() -> bool:
    runs, *others = HOLD.read_text().splitlines()
    return any(
        json.loads(line).get("step", 0) >= 9
        for m in Path(runs).glob("*/metrics.jsonl")
        if m.parent.name not in others
        for line in m.read_text().splitlines()
    )


def letter_reward(completion: str, answer: str, **kwargs) -> float:
    """Score one completion of the letters task.

    Args:
        completion: The model's reply text.
        answer: The expected capital letter.
        **kwargs: Other dataset columns.

    Returns:
        1.0 for the expected letter, 0.2 for another capital letter, 0.0 otherwise.
    """
    while HOLD.exists() and _past_step_9():
        time.sleep(0.05)
    text = (completion or "").lstrip()
    if not text:
        return 0.0
    if text[0] == str(answer).strip():
        return 1.0
    return 0.2 if "A" <= text[0] <= "Z" else 0.0
'''


def cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "engines", *args], cwd=ROOT, capture_output=True, text=True, timeout=600, **kw
    )


def train_args(demo, reward: Path, config: Path, runs: Path) -> list[str]:
    return [
        "train",
        *("--agent", demo["agent"], "--train", demo["train"], "--test", demo["test"]),
        *("--reward", f"{reward}:letter_reward", "--config", str(config), "--engine", "trl", "--run-path", str(runs)),
    ]


def steps(run: RunDir, name: str = "metrics.jsonl") -> dict[int, dict]:
    return {r["step"]: r for r in run.read_jsonl(name) if "loss" in r}


def prompts(run: RunDir) -> list[tuple[int, str]]:
    return [(s["step"], json.dumps(s["prompt"])) for s in run.read_jsonl("samples.jsonl")]


def processes_of(folder: Path) -> list[str]:
    """The command lines of the processes that name ``folder`` (a run's ranks name its run directory)."""
    import psutil

    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(p.info["cmdline"] or [])
        if str(folder) in cmdline:
            found.append(cmdline)
    return found


def killed_and_uninterrupted(base: Path, demo: dict, config: dict) -> tuple[RunDir, RunDir]:
    """Run A trained 12 steps uninterrupted; run B, the same spec, SIGKILLed in step 10 (its checkpoint at 7) with
    its whole process group — and nothing of it left running (a rank of a run of several processes included)."""
    reward, config_file = base / "held_reward.py", base / "config.yaml"
    reward.write_text(HELD_REWARD)
    config_file.write_text(yaml.safe_dump(config))
    done = cli(*train_args(demo, reward, config_file, base / "a"))
    assert done.returncode == 0, done.stderr[-3000:]
    (base / "hold").write_text(str(base / "b"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "engines", *train_args(demo, reward, config_file, base / "b")],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(
            lambda: any(9 in steps(r) for r in list_run_dirs(base / "b")) or proc.poll() is not None,
            300,
            "run B held in step 10",
        )
        assert proc.poll() is None, "run B ended before it was held"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        # a rank runs in a session of its own (torch's elastic agent): it dies with its launcher (engines/trl/
        # rank_main.py), else it trained on in run B's directory beside the resume
        wait_for(lambda: not processes_of(base / "b"), 30, "every process of run B gone")
    finally:
        (base / "hold").unlink(missing_ok=True)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    [a], [b] = list_run_dirs(base / "a"), list_run_dirs(base / "b")
    return a, b


@pytest.fixture(scope="module")
def runs(tmp_path_factory, demo_paths):
    return killed_and_uninterrupted(tmp_path_factory.mktemp("resume"), demo_paths, CONFIG)


@pytest.fixture(scope="module")
def demo_paths():
    from testing import letters_demo as d

    return {"agent": d.AGENT, "train": d.TRAIN, "test": d.TEST}


def test_a_killed_two_process_lora_run_resumes_step_for_step_too(tmp_path, demo_paths):
    """The same with LoRA on two processes (3 steps an epoch: checkpoint-7 is in the third): the adapters and their
    optimizer state, each rank's RNG and its shard of every step's prompts come back from the checkpoint — bit for bit
    (CPU, gloo's sum of two ranks' gradients is the same sum each time). Before: the ranks of the killed run trained
    on beside the resume; the resume failed (Transformers loads the optimizer's state onto Accelerate's ``cpu:0``,
    which torch refuses); then it trained the resumed steps on another epoch's prompts (TRL's sampler)."""
    a, b = killed_and_uninterrupted(tmp_path, demo_paths, {**CONFIG, "use_peft": True, "num_processes": 2})
    done = cli("resume", str(b.path))
    assert done.returncode == 0, done.stderr[-3000:]
    status = b.read_status()
    assert status["state"] == "finished" and status["world_size"] == 2 and a.read_status()["peft"] is True
    assert status["resumed_from"] == "checkpoint-7" and sorted(steps(b)) == list(range(1, 13))
    for step in range(1, 13):
        assert (steps(b)[step]["loss"], steps(b)[step]["reward"]) == (steps(a)[step]["loss"], steps(a)[step]["reward"])
    assert prompts(b) == prompts(a)


def test_torch_still_refuses_the_device_transformers_loads_a_cpu_rank_s_checkpoint_onto():
    """engines/trl/build.resumable_on_cpu_ranks works around torch.load refusing ``map_location=cpu:0`` (the device
    Accelerate gives a CPU rank, which Transformers passes when several processes train): when this fails, torch
    takes it and the workaround can go."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save({"exp_avg": torch.zeros(2)}, buffer)
    buffer.seek(0)
    with pytest.raises(RuntimeError, match=r"don't know how to restore data location .*cpu:0"):
        torch.load(buffer, map_location=torch.device("cpu", 0), weights_only=True)


def test_a_killed_run_resumes_in_its_own_directory_step_for_step_as_if_never_killed(runs):
    """Run B, killed in step 10, resumes from checkpoint-7 (in its second epoch) in the same directory: its steps 8-12
    train on the same prompts and log the same loss and reward as run A's, bit for bit (CPU, one process, TRL's resume restoring the
    weights, optimizer, scheduler, RNG states and the data position); the dead attempt's steps 8-9 are kept aside,
    not mixed in; the status counts the attempt and the events say what was resumed and why."""
    a, b = runs
    assert effective_status(b)["state"] == "failed" and [p.name for p in b.checkpoints()] == ["checkpoint-7"]
    done = cli("resume", str(b.path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resuming" in done.stderr and "from checkpoint-7 (step 7 of 12), attempt 2" in done.stderr
    assert [r.run_id for r in list_run_dirs(b.path.parent)] == [b.run_id]  # the same run, no new one
    status = b.read_status()
    assert status["state"] == "finished" and status["step"] == 12
    assert status["attempt"] == 2 and status["resumed_from"] == "checkpoint-7" and not status.get("lost")
    assert sorted(steps(b)) == list(range(1, 13))
    for step in range(1, 13):
        assert (steps(b)[step]["loss"], steps(b)[step]["reward"]) == (steps(a)[step]["loss"], steps(a)[step]["reward"])
    assert prompts(b) == prompts(a)  # no prompt seen twice or skipped
    aside = RunDir(b.path / "attempts" / "1")
    assert sorted(steps(aside)) == [8, 9] and {s["step"] for s in aside.read_jsonl("samples.jsonl")} == {8, 9}
    [resumed] = [e for e in b.read_jsonl("events.jsonl") if e["event"] == "resumed"]
    assert resumed["checkpoint"] == "checkpoint-7" and resumed["step"] == 7 and resumed["attempt"] == 2
    assert resumed["after"] == "failed" and resumed["cause"] == "killed"
    spec = b.read_spec()
    assert spec["resume"] == {"checkpoint": "checkpoint-7", "attempt": 2} and spec["config"] == a.read_spec()["config"]


def test_a_finished_run_trains_further_only_when_asked_and_what_cannot_resume_says_why(runs, tmp_path):
    """A finished run has nothing left to train until max_steps is raised; then it goes on from its last checkpoint,
    in the same run (the Python API's AgentTrainer.resume). A running run, a run without a checkpoint, a checkpoint it does not have, an end
    below the checkpoint and an engine that does not resume yet are refused with what to do, and change nothing."""
    a, _b = runs
    before = (a.path / "run.yaml").read_text(), a.read_status(), (a.path / "metrics.jsonl").read_text()

    def refused(run_dir, match, **kw):
        with pytest.raises(CheckError, match=match):
            prepare_resume(run_dir, **kw)

    refused(a.path, r"checkpoint-12 is at step 12, the run's max_steps \(12\): there is nothing left to train")
    refused(a.path, r"--max-steps 12 is not past checkpoint-12's step 12", max_steps=12)
    refused(
        a.path,
        r"checkpoint-3 of run .* is not one of its checkpoints — resume from one of: checkpoint-7, checkpoint-12",
        checkpoint="checkpoint-3",
    )
    assert (a.path / "run.yaml").read_text() == before[0] and (a.path / "metrics.jsonl").read_text() == before[2]
    assert a.read_status() == before[1]
    other = RunDir.create(tmp_path / "runs", "my_engine")  # a plugin's engine (trl, swift and verl resume)
    other.write_spec({"engine": "my_engine", "config": {}})
    other.write_status(state="failed")
    refused(other.path, r"runs of the my_engine engine do not resume yet")
    bare = RunDir.create(tmp_path / "runs", "trl")
    bare.write_spec({"engine": "trl", "config": {"max_steps": 5}})
    bare.write_status(state="stopped")
    refused(bare.path, r"has no complete checkpoint to resume from — train it again from the start")
    bare.write_status(state="running", pid=os.getpid())
    refused(bare.path, r"is running: only a stopped, failed or finished run resumes — stop it first")

    from engines import AgentTrainer

    (a.path / "STOP").write_text("{}")  # a stop request left by an earlier attempt: not the resumed one's
    assert AgentTrainer.resume(a.path, max_steps=14) == "finished"  # the Python API, in this process
    assert not (a.path / "STOP").exists()
    status = a.read_status()
    assert status["state"] == "finished" and status["step"] == 14 and status["attempt"] == 2
    assert (
        sorted(steps(a)) == list(range(1, 15)) and not (a.path / "attempts").exists()
    )  # nothing after 12 to set aside
    assert a.read_spec()["resume"] == {"checkpoint": "checkpoint-12", "attempt": 2, "max_steps": 14}


def test_the_studio_shows_a_resumed_run_s_curve_joined_at_its_checkpoint(tmp_path):
    """The studio's run cache had read the dead attempt's steps 6-7; the resume sets them aside (a new metrics.jsonl):
    the curves then show steps 1-5 and go on from there, with no "replaced behind its back" warning — the resumed
    event says what happened. (A file replaced without a resume still gets that warning: tests/test_lost_run_files.py.)"""
    from aworld_gui.core.run_cache import RunState

    run = RunDir.create(tmp_path / "runs", "trl")
    run.write_spec({"engine": "trl", "config": {"max_steps": 9}})
    for step in range(1, 8):
        run.append_metrics(step, {"loss": 0.1 * step, "reward": 0.1 * step})
        run.append_sample({"step": step, "prompt": f"p{step}", "completion": "A", "reward": 1.0})
    (run.checkpoints_dir / "checkpoint-5").mkdir(parents=True)
    (run.checkpoints_dir / "checkpoint-5" / "trainer_state.json").write_text(json.dumps({"global_step": 5}))
    run.write_status(state="failed", cause="killed", step=7)
    state = RunState(run.path)
    state.refresh(force=True)
    assert state.last_step == 7 and len(state.samples) == 7
    assert prepare_resume(run.path)["step"] == 5
    state.refresh(force=True)
    xs, _ys = state.series["reward"].points()
    assert xs == [1, 2, 3, 4, 5] and state.last_step == 5 and [s["step"] for s in state.samples] == [1, 2, 3, 4, 5]
    assert not [e for e in state.events if e.get("source") == "studio"], state.events  # no replaced-file warning
    assert [e["event"] for e in state.events][-1] == "resumed"
    run.append_metrics(6, {"loss": 0.5, "reward": 0.9})
    state.refresh(force=True)
    assert state.series["reward"].points()[0] == [1, 2, 3, 4, 5, 6]


def test_a_resume_into_a_folder_that_refuses_writes_or_onto_another_model_says_why_and_changes_nothing(runs, tmp_path):
    """Issue 45's bad input: a run whose run.yaml now names a model of another shape than its checkpoints were trained
    from (Transformers failed at the load, after the run had been rearranged for the resume); a run whose folder
    refuses the resume's writes — left read-only (immutable, where ``chattr`` works: as root, chmod stops nothing), or
    failing halfway (``attempts`` a file where the rows set aside go) — was a raw PermissionError, with run.yaml and
    status.json already saying "resumed". Each is a CheckError saying what to do, the run as it was."""
    from test_unwritable_run_dir import _chattr_works
    from testing import letters_demo

    a, _b = runs
    copy = RunDir(shutil.copytree(a.path, tmp_path / "runs" / a.run_id))
    end = copy.read_status()["step"] + 2
    names = ("run.yaml", "status.json", "metrics.jsonl", "samples.jsonl", "events.jsonl")

    def files() -> dict[str, bytes]:
        return {name: (copy.path / name).read_bytes() for name in names}

    other = Path(shutil.copytree(Path(letters_demo.MODEL), tmp_path / "other-model"))
    config = json.loads((other / "config.json").read_text())
    layers = config["num_hidden_layers"]
    (other / "config.json").write_text(json.dumps({**config, "num_hidden_layers": layers + 1}))
    spec_text = (copy.path / "run.yaml").read_text()
    spec = yaml.safe_load(spec_text)
    spec["agent"]["model"] = str(other)
    (copy.path / "run.yaml").write_text(yaml.safe_dump(spec))
    before = files()
    with pytest.raises(
        CheckError, match=rf"was trained from another model than the run's .*num_hidden_layers {layers} →"
    ):
        prepare_resume(copy.path, max_steps=end)
    assert files() == before
    (copy.path / "run.yaml").write_text(spec_text)

    before = files()
    if _chattr_works(tmp_path):
        subprocess.run(["chattr", "-R", "+i", str(copy.path)], check=True)
        try:
            with pytest.raises(CheckError, match=r"its folder refuses writes .* make .* writable"):
                prepare_resume(copy.path, max_steps=end)
        finally:
            subprocess.run(["chattr", "-R", "-i", str(copy.path)], check=True)
        assert files() == before
    (copy.path / "attempts").write_text("")  # the rows after the older checkpoint go to attempts/<n>/: refused
    with pytest.raises(CheckError, match=r"its folder refuses writes \((NotADirectoryError|FileExistsError)"):
        prepare_resume(copy.path, checkpoint=copy.checkpoints()[0].name, max_steps=end)
    assert files() == before  # run.yaml and status.json put back; nothing set aside
