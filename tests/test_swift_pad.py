"""ms-swift 4.6 drops generated pad ids from completions, and a completion made only of them fails its GRPO
step ("Size does not match at dimension 1"): the letters demo on swift died that way at step 161. The run's
plugin keeps the pad token out of rollouts. A copy of the demo model whose generation config all but forces
the pad token (sequence_bias) fails at step 1 without that, and trains with it. Needs ms-swift's environment."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from engines import AgentTrainer
from engines.swift.environment import availability

ROOT = Path(__file__).resolve().parent.parent
TRAIN = str(ROOT / "assets/datasets/letters_train.jsonl")
REWARD = str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward"
CONFIG = {"tuner_type": "full", "max_steps": 2, "learning_rate": 1e-3, "prompts_per_step": 1, "num_generations": 4,
          "save_steps": 2, "max_completion_length": 2}


@pytest.fixture(scope="module", autouse=True)
def swift_environment():
    ok, reason = availability()
    assert ok, f"ms-swift's environment is needed: {reason}"


def pad_loving_agent(tmp_path: Path) -> str:
    """The letters agent on a copy of the demo model that samples its pad token (id 0) almost surely."""
    model = tmp_path / "pad-loving"
    shutil.copytree(ROOT / "assets/models/tiny-letters", model)
    gen = json.loads((model / "generation_config.json").read_text())
    assert gen["pad_token_id"] != gen["eos_token_id"]
    gen["sequence_bias"] = [[[gen["pad_token_id"]], 100.0]]
    (model / "generation_config.json").write_text(json.dumps(gen))
    agent = yaml.safe_load((ROOT / "assets/agents/letters_agent.yaml").read_text())
    agent["model"] = str(model)
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump(agent))
    return str(path)


def test_rollouts_never_sample_the_pad_token(tmp_path):
    trainer = AgentTrainer(agent=pad_loving_agent(tmp_path), train_dataset=TRAIN, test_dataset=None,
                           reward_func=REWARD, config=dict(CONFIG), run_path=str(tmp_path / "runs"),
                           train_engine_name="swift")
    outcome = trainer.train()
    run = trainer.train_processor.run
    assert outcome == "finished", run.read_status()
    assert run.read_status()["step"] == 2
    assert "rollouts never sample the pad token (id 0)" in run.log_path.read_text()
    completions = [s["completion"][0]["content"] for s in run.read_jsonl("samples.jsonl")]
    assert completions and all(completions), completions   # no empty (pad-only) completion
