"""AWorld's TRL engine conventions (train/integration/trl/trl_trainer.py): config `model` and GRPOConfig keyword
arguments, its `fp16: True` default on a machine without a GPU, rewards `fn(completions, prompts, **kw)`, a
dataset given as a JSON path."""

from __future__ import annotations

import json
from pathlib import Path

from engines.core.checks import check_all

ROOT = Path(__file__).resolve().parent.parent
MODEL = str(ROOT / "assets/models/tiny-calc")


def aworld_reward(completions, prompts, **kwargs):
    """AWorld's reward form: a list of completions and their prompts."""
    return [1.0 if str(a) in str(c) else 0.0 for c, a in zip(completions, kwargs["answer"])]


def test_an_aworld_trl_config_checks_on_a_cpu_machine_with_a_note_for_fp16(tmp_path):
    rows = [json.loads(line) for line in (ROOT / "assets/datasets/calc_train.jsonl").read_text().splitlines()]
    data = tmp_path / "train.json"
    data.write_text(json.dumps(rows[:16]))  # a JSON array: what AWorld's load_dataset("json") reads
    config = {
        "model": MODEL,
        "fp16": True,
        "num_generations": 2,
        "max_steps": 2,
        "max_completion_length": 128,
        "per_device_train_batch_size": 2,
        "learning_rate": 1e-6,
    }  # TRAIN_DEFAULT_CONFIG['trl'] and friends
    agent = {"name": "calc", "model": MODEL, "system_prompt": "Answer."}
    results = {
        r.module: r
        for r in check_all(
            agent, str(data), None, aworld_reward, config, train_engine_name="trl", run_path=str(tmp_path / "runs")
        )
    }
    assert all(r.status != "error" for r in results.values()), {m: r.message for m, r in results.items()}
    notes = results["config"].warnings
    assert any("`fp16: true` (AWorld form" in w and "fp32" in w for w in notes), notes
    assert "16" in results["dataset"].message, results["dataset"].message  # every row of the JSON array read
    assert results["reward"].status == "ok", results["reward"]
