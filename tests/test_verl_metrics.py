"""verl's metric lines → the studio's metrics.jsonl (canonical names, every original key kept)."""

import json
import math

import pytest

from engines.runs.rundir import RunDir
from engines.verl.launch import MetricsWatcher, last_error
from engines.verl.metrics import CANONICAL, normalize_record, parse_console_line

# Recorded with verl 0.9.1's own FileLogger (verl.utils.tracking.Tracking, backend "file"): orjson lines
# {"step": n, "data": {...}}, numpy scalars already plain numbers, NaN written as null. Step 0 is the
# validation before training; the last step carries validation metrics too.
RECORDED = """\
{"step":0,"data":{"val-core/letters/reward/mean@1":0.2,"val-core/letters/reward_letter_reward/mean@1":0.2,"val-aux/letters/score/mean@1":0.2,"val-aux/num_turns/mean":2.0}}
{"step":1,"data":{"training/global_step":1,"training/epoch":0,"actor/entropy":10.27,"actor/pg_loss":-0.0123,"actor/pg_clipfrac":0.0,"actor/ppo_kl":0.00001,"actor/kl_loss":0.0009,"actor/grad_norm":0.81,"actor/lr":1e-6,"perf/mfu/actor":0.01,"critic/score/mean":0.3,"critic/score/max":1.0,"critic/score/min":0.0,"critic/rewards/mean":0.3,"critic/rewards/max":1.0,"critic/rewards/min":0.0,"critic/advantages/mean":0.0,"critic/advantages/max":1.8,"critic/advantages/min":-0.7,"critic/returns/mean":0.0,"response_length/mean":1.75,"response_length/max":2.0,"response_length/min":1.0,"response_length/clip_ratio":0.75,"response/aborted_ratio":0.0,"prompt_length/mean":23.0,"prompt_length/max":23.0,"prompt_length/min":23.0,"prompt_length/clip_ratio":0.0,"timing_s/gen":2.51,"timing_s/reward":0.02,"timing_s/old_log_prob":0.4,"timing_s/ref":0.35,"timing_s/adv":0.01,"timing_s/update_actor":1.2,"timing_s/step":5.61,"timing_per_token_ms/gen":9.1,"perf/total_num_tokens":792,"perf/time_per_step":5.61,"perf/throughput":171.8}}
{"step":2,"data":{"training/global_step":2,"training/epoch":0,"actor/entropy":10.17,"actor/pg_loss":-0.0246,"actor/pg_clipfrac":0.0,"actor/ppo_kl":0.00001,"actor/kl_loss":0.0018,"actor/grad_norm":0.81,"actor/lr":1e-6,"perf/mfu/actor":0.01,"critic/score/mean":0.4,"critic/score/max":1.0,"critic/score/min":0.0,"critic/rewards/mean":0.4,"critic/rewards/max":1.0,"critic/rewards/min":0.0,"critic/advantages/mean":0.0,"critic/advantages/max":1.8,"critic/advantages/min":-0.7,"critic/returns/mean":0.0,"response_length/mean":1.75,"response_length/max":2.0,"response_length/min":1.0,"response_length/clip_ratio":0.75,"response/aborted_ratio":0.0,"prompt_length/mean":23.0,"prompt_length/max":23.0,"prompt_length/min":23.0,"prompt_length/clip_ratio":0.0,"timing_s/gen":2.51,"timing_s/reward":0.02,"timing_s/old_log_prob":0.4,"timing_s/ref":0.35,"timing_s/adv":0.01,"timing_s/update_actor":1.2,"timing_s/step":6.61,"timing_per_token_ms/gen":9.1,"perf/total_num_tokens":792,"perf/time_per_step":6.61,"perf/throughput":171.8,"val-core/letters/reward/mean@1":0.4,"critic/vf_loss":null}}
"""
# verl's console logger for the same step, as Ray forwards it from the TaskRunner actor
CONSOLE = (
    "\x1b[36m(TaskRunnerV1 pid=7717)\x1b[0m step:1 - training/global_step:1 - actor/pg_loss:np.float32(-0.0123)"
    " - actor/lr:1e-06 - critic/score/mean:np.float32(0.3) - response_length/mean:np.float64(1.75)"
    " - timing_s/step:5.61 - critic/vf_loss:nan"
)


def records():
    return [json.loads(line) for line in RECORDED.splitlines()]


def test_recorded_file_logger_lines_get_canonical_names_and_keep_originals():
    rows = [normalize_record(r) for r in records()]
    assert [step for step, _ in rows] == [0, 1, 2]
    _, first = rows[1]
    assert first["reward"] == 0.3 and first["loss"] == -0.0123 and first["completion_length"] == 1.75
    assert first["lr"] == 1e-6 and first["step_time"] == 5.61 and first["kl"] == 0.0009
    assert first["grad_norm"] == 0.81 and first["entropy"] == 10.27 and first["epoch"] == 0
    for key, value in records()[1]["data"].items():  # every original key, unchanged
        assert first[key] == value
    _, val0 = rows[0]
    assert val0["eval/reward"] == 0.2 and "reward" not in val0
    _, last = rows[2]
    assert last["eval/reward"] == 0.4 and last["critic/vf_loss"] is None and "critic_loss" not in last


def test_canonical_table_covers_the_studio_curves():
    for name in ("reward", "loss", "kl", "lr", "completion_length", "step_time"):
        assert name in CANONICAL


def test_record_shapes_that_are_not_steps_are_ignored():
    assert normalize_record({"data": {}}) is None
    assert normalize_record({"step": "x", "data": {}}) is None
    assert normalize_record([1, 2]) is None
    step, flat = normalize_record({"step": 3, "critic/score/mean": 1.0})
    assert step == 3 and flat["reward"] == 1.0


def test_console_line_parses_like_the_file_line():
    rec = parse_console_line(CONSOLE)
    assert rec["step"] == 1
    assert rec["data"]["actor/pg_loss"] == pytest.approx(-0.0123)
    assert rec["data"]["critic/score/mean"] == pytest.approx(0.3)
    assert rec["data"]["training/global_step"] == 1 and isinstance(rec["data"]["training/global_step"], int)
    assert math.isnan(rec["data"]["critic/vf_loss"])
    step, values = normalize_record(rec)
    assert values["reward"] == pytest.approx(0.3) and values["loss"] == pytest.approx(-0.0123)
    assert parse_console_line("(TaskRunnerV1 pid=1) Training Progress: 10%") is None


def test_verl_file_logger_output_round_trips(tmp_path, monkeypatch):
    """Lines written by verl's own Tracking(file) right now, with numpy values, normalize the same way."""
    import numpy as np
    from verl.utils.tracking import Tracking

    path = tmp_path / "verl.jsonl"
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(path))
    tracking = Tracking("aworld", "t", default_backend=["file"])
    tracking.log(
        {
            "critic/score/mean": np.float32(0.5),
            "actor/pg_loss": np.float64(0.25),
            "actor/lr": 1e-6,
            "response_length/mean": np.int64(3),
            "timing_s/step": 1.5,
        },
        step=7,
    )
    line = json.loads(path.read_text().splitlines()[0])
    assert set(line) == {"step", "data"}
    step, values = normalize_record(line)
    assert step == 7 and values["reward"] == 0.5 and values["loss"] == 0.25 and values["completion_length"] == 3


def test_watcher_mirrors_the_jsonl_into_the_run_dir(tmp_path):
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    verl_jsonl = tmp_path / "verl_metrics.jsonl"
    watcher = MetricsWatcher(run, total_steps=2, metrics_file=verl_jsonl)
    lines = RECORDED.splitlines(keepends=True)
    with open(verl_jsonl, "w") as f:
        f.write(lines[0] + lines[1][:40])  # a torn line: verl is mid-write
    assert watcher.poll() == 1
    with open(verl_jsonl, "a") as f:
        f.write(lines[1][40:] + lines[2])
    assert watcher.poll() == 2
    rows = run.read_jsonl("metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert all("time" in r for r in rows)
    assert rows[2]["reward"] == 0.4 and rows[2]["actor/pg_loss"] == -0.0246
    status = run.read_status()
    assert status["step"] == 2 and status["total_steps"] == 2 and status["last_reward"] == 0.4
    assert status["last_loss"] == -0.0246


def test_watcher_falls_back_to_console_lines_when_the_file_is_on_another_node(tmp_path):
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    watcher = MetricsWatcher(run, decide_after_s=0.0)
    watcher.feed_log_line("(TaskRunnerV1 pid=9) Creating file logger at /nonexistent/node2/verl/verl_metrics.jsonl")
    watcher.feed_log_line(CONSOLE)
    watcher.poll()
    assert watcher.mode == "console"
    rows = run.read_jsonl("metrics.jsonl")
    assert len(rows) == 1 and rows[0]["reward"] == pytest.approx(0.3)


def test_watcher_prefers_the_file_when_this_machine_can_read_it(tmp_path):
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    verl_jsonl = tmp_path / "shared" / "verl_metrics.jsonl"
    verl_jsonl.parent.mkdir()
    verl_jsonl.write_text(RECORDED)
    watcher = MetricsWatcher(run)
    watcher.feed_log_line(f"(TaskRunnerV1 pid=9) Creating file logger at {verl_jsonl}")
    watcher.feed_log_line(CONSOLE)  # the same values: not written twice
    watcher.poll()
    assert watcher.mode == "file"
    assert [r["step"] for r in run.read_jsonl("metrics.jsonl")] == [0, 1, 2]


def test_last_error_finds_verls_own_error_line():
    log = (
        'Traceback (most recent call last):\n  File "main_ppo.py", line 137, in run\n'
        "    import transfer_queue as tq\n"
        "\x1b[36m(TaskRunnerV1 pid=3)\x1b[0m ModuleNotFoundError: No module named 'transfer_queue'\n"
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n"
    )
    assert last_error(log) == "ModuleNotFoundError: No module named 'transfer_queue'"
    assert last_error("all good\n") is None


def test_a_rollout_dump_becomes_groups_by_prompt_without_advantages(tmp_path):
    """verl's dump rows carry no group id (the batch may be reordered by balance_batch): rows of one prompt."""
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    dumps = tmp_path / "rollouts"
    dumps.mkdir()
    rows = [
        {"input": p, "output": o, "gts": "A", "score": s, "step": 1}
        for p, o, s in [("Say A", "A", 1.0), ("Say B", "B", 1.0), ("Say A", "x", 0.0), ("Say B", "B", 1.0)]
    ]
    (dumps / "1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    watcher = MetricsWatcher(run, rollouts_dir=dumps, samples_per_step=1)
    watcher.poll(final=True)
    samples = run.read_jsonl("samples.jsonl")
    assert [(s["prompt"], s["completion"], s["group"]) for s in samples] == [("Say A", "A", 0), ("Say A", "x", 0)]
    assert samples[0]["step_groups"] == {
        "groups": 2,
        "zero_spread": 1,
        "group_size": 2,
        "rewards": [1.0, 0.0, 1.0, 1.0],
    }
    assert all("advantage" not in s for s in samples)
