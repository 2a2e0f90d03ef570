"""The diagnoses on a recorded healthy run: the letters demo (assets/configs/letters_grpo.yaml, 300-step
form of tests/conftest.py's trained_letters) as it trained on this machine — its metrics.jsonl reduced to the
keys the rules read, and its samples to their rewards — replayed row by row through the watcher's Diagnoser
with the demo's own config: no diagnosis. (tests/test_diagnostics_runs.py checks the same on the live
fixture run.)"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from engines.diagnostics.watcher import Diagnoser
from engines.runs.rundir import RunDir

ROOT = Path(__file__).resolve().parent.parent
RECORDED = Path(__file__).resolve().parent / "recorded"


def replay(run: RunDir, rows: list[dict], samples: list[dict]) -> list[dict]:
    diagnoser, events = Diagnoser(run, log=lambda line: None), []
    for row in rows:
        for s in (s for s in samples if s["step"] == row["step"]):
            run.append_sample(s)
        run.append_metrics(row["step"], row, when=row["time"])
        events += diagnoser.poll()
    return events


def test_the_recorded_healthy_demo_run_has_no_diagnosis(tmp_path):
    config = yaml.safe_load((ROOT / "assets/configs/letters_grpo.yaml").read_text())
    run = RunDir.create(tmp_path, "trl")
    run.write_spec({"engine": "trl", "config": config})
    run.write_status(total_steps=300)
    rows = [json.loads(x) for x in (RECORDED / "letters_demo_metrics.jsonl").read_text().splitlines()]
    samples = [json.loads(x) for x in (RECORDED / "letters_demo_samples.jsonl").read_text().splitlines()]
    train = [r["reward"] for r in rows if "reward" in r]
    assert len(train) == 300 and train[-1] > train[0] + 0.8  # it learns: 0.05 → 0.97
    assert replay(run, rows, samples) == []


def test_the_same_replay_without_the_demos_kl_bound_says_kl_high(tmp_path):
    """What the demo config's kl_bound is for: its KL to a random-init reference passes 1 by design."""
    config = yaml.safe_load((ROOT / "assets/configs/letters_grpo.yaml").read_text())
    config.pop("diagnostics")
    run = RunDir.create(tmp_path, "trl")
    run.write_spec({"engine": "trl", "config": config})
    rows = [json.loads(x) for x in (RECORDED / "letters_demo_metrics.jsonl").read_text().splitlines()]
    samples = [json.loads(x) for x in (RECORDED / "letters_demo_samples.jsonl").read_text().splitlines()]
    assert {e["code"] for e in replay(run, rows, samples)} == {"kl_high"}
