"""Several training processes: ``num_processes: 2`` makes the run process start the training through
``accelerate launch`` (real accelerate, gloo on CPU). Rank 0 alone writes metrics and samples, the
ranks stop together on STOP, a kill reaches every rank, and a failing rank's cause reaches the run."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from engines.core.modules import Modules
from engines.core.prepare import prepare_run
from engines.runs.lifecycle import effective_status, kill_run, process_alive, spawn_run, stop_run
from testing.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
AGENT = str(ROOT / "assets/agents/letters_agent.yaml")
TRAIN = str(ROOT / "assets/datasets/letters_train.jsonl")
REWARD = str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward"
TWO = {
    "num_processes": 2,
    "max_steps": 5000,
    "prompts_per_step": 2,
    "num_generations": 4,
    "learning_rate": 1e-3,
    "save_steps": 1000,
    "eval_steps": 0,
    "samples_per_step": 2,
}
START_S = 240  # two ranks import torch/TRL and re-check the run on a shared 2-core machine


@pytest.fixture()
def runs(tmp_path):
    made = []

    def start(config, reward=REWARD):
        run = prepare_run(Modules(AGENT, TRAIN, None, reward, config, "trl"), runs_dir=str(tmp_path / "runs"))
        spawn_run(run.path)
        made.append(run)
        return run

    yield start
    for run in made:
        if process_alive(run.read_status()):
            kill_run(run.path, grace_s=2)


def tree(pid: int) -> list[psutil.Process]:
    return [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            continue
    return out


def ranks_of(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in procs:
        try:
            cmd = " ".join(p.cmdline())
            if "engines.trl.rank_main" in cmd and "accelerate.commands.launch" not in cmd:  # not the launcher
                out.append(p)
        except psutil.Error:
            continue
    return out


def test_two_processes_train_write_once_per_step_and_stop_together(runs):
    run = runs(dict(TWO))
    wait_for(lambda: (run.read_status().get("step") or 0) >= 3, START_S, "three steps with two ranks")
    status = run.read_status()
    assert status["world_size"] == 2 and status["launcher"] == "accelerate launch"
    procs = tree(int(status["pid"]))
    assert len(ranks_of(procs)) == 2
    stop_run(run.path)
    final = wait_for(lambda: (s := effective_status(run))["state"] in ("stopped", "failed") and s, 120, "stopped")
    assert final["state"] == "stopped", final
    wait_for(lambda: not alive(procs), 60, "the run process, the launcher and both ranks to exit")
    rows = [r for r in run.read_jsonl("metrics.jsonl") if "loss" in r]
    steps = [r["step"] for r in rows]
    assert steps == list(range(1, final["step"] + 1))  # one row per step: rank 0 alone writes
    assert all(0.0 <= r["reward"] <= 1.0 for r in rows)
    samples = run.read_jsonl("samples.jsonl")
    per_step = {s: sum(1 for x in samples if x["step"] == s) for s in {x["step"] for x in samples}}
    assert set(per_step.values()) == {8}  # samples_per_step whole groups of 4 (rank 0 has 2), from rank 0 only
    kinds = [e["event"] for e in run.read_jsonl("events.jsonl")]
    assert kinds.count("stop_requested") == 1 and kinds[-1] == "stopped" and "launch" in kinds
    assert run.checkpoints()[-1].name == f"checkpoint-{final['step']}"
    assert "Traceback" not in run.log_path.read_text(errors="replace")


def test_kill_reaches_every_rank(runs):
    run = runs(dict(TWO))
    wait_for(lambda: (run.read_status().get("step") or 0) >= 1, START_S, "a first step with two ranks")
    procs = tree(int(run.read_status()["pid"]))
    assert len(ranks_of(procs)) == 2
    assert kill_run(run.path, grace_s=0)
    wait_for(lambda: not alive(procs), 30, "every process of the run gone")
    assert effective_status(run)["state"] in ("failed", "stopped")


def test_a_failing_rank_fails_the_run_with_its_cause(runs, tmp_path):
    flaky = tmp_path / "flaky_reward.py"
    flaky.write_text(
        "calls = 0\n"
        "def flaky(completion, answer, **kw):\n"
        "    global calls\n"
        "    calls += 1\n"
        "    if calls > 12:\n"
        "        raise ZeroDivisionError('the judge went away')\n"
        "    return 1.0 if completion.strip()[:1] == answer else 0.0\n"
    )
    run = runs(dict(TWO), reward=f"{flaky}:flaky")
    final = wait_for(
        lambda: (s := effective_status(run))["state"] in ("failed", "finished", "stopped") and s,
        START_S,
        "the run to fail",
    )
    assert final["state"] == "failed" and final["cause"] == "reward error", final
    failed = [e for e in run.read_jsonl("events.jsonl") if e["event"] == "failed"][-1]
    assert "ZeroDivisionError: the judge went away" in failed["message"] and failed["message"].startswith("RankFailure")


def test_the_launch_command_is_accelerates_with_trls_presets():
    from engines.trl import launch
    from engines.trl.config import validate

    cfg, _ = validate({"num_processes": 2})
    cmd = launch.command("/runs/r1", cfg, 2, "no")
    assert cmd[1:3] == ["-m", "accelerate.commands.launch"] and cmd[-3:] == ["-m", "engines.trl.rank_main", "/runs/r1"]
    assert cmd[cmd.index("--num_processes") + 1] == "2" and "--multi_gpu" in cmd  # torchrun's launcher (gloo on CPU)
    cfg, _ = validate({"num_processes": 4, "distributed": "zero2"})
    cmd = launch.command("/runs/r1", cfg, 4, "bf16")
    preset = cmd[cmd.index("--config_file") + 1]
    assert preset.endswith("trl/accelerate_configs/zero2.yaml") and Path(preset).is_file()  # TRL's own file
    assert cmd[cmd.index("--num_processes") + 1] == "4" and cmd[cmd.index("--mixed_precision") + 1] == "bf16"
    assert launch.needs_launch(cfg, 1) and not launch.needs_launch(validate({})[0], 1)


@pytest.mark.parametrize(
    "settings, what",
    [
        (
            {"distributed": "zero3", "num_processes": 2},
            "`distributed: zero3` shards the model across GPUs, and this machine has no CUDA GPU",
        ),
        ({"distributed": "fsdp2"}, "use distributed: ddp (each process holds the model) on CPU"),
        ({"num_processes": 64}, "`num_processes: 64` on a CPU with"),
        ({"num_processes": "many"}, "`num_processes` = 'many' is neither a number nor auto"),
    ],
)
def test_processes_this_machine_cannot_run_are_check_errors(settings, what, tmp_path):
    from engines import AgentTrainer, CheckError

    with pytest.raises(CheckError) as err:
        AgentTrainer(AGENT, TRAIN, None, REWARD, {**TWO, **settings}, run_path=str(tmp_path), train_engine_name="trl")
    assert what in str(err.value)


def test_num_processes_auto_is_one_process_without_a_gpu():
    from engines.trl import launch
    from engines.trl.config import validate

    cfg, _ = validate({"num_processes": "auto"})
    assert cfg["num_processes"] == "auto" and launch.world_size(cfg) == 1
