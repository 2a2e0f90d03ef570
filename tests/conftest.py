"""Shared fixtures. Keep this small: module-specific helpers live in their test files."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _forget_user_modules():
    """User files imported by a test (``_aworld_user_*``, see engines.inputs.loading) are dropped afterwards, so
    tests that assert user code never ran in their process (the studio's) hold in a full run."""
    yield
    for name in [n for n in sys.modules if n.startswith("_aworld_user_")]:
        del sys.modules[name]


@pytest.fixture
def clean_registry():
    """The engine registry (engines.core.registry._REGISTRY and the entry-point flag), restored after the test."""
    from engines.core import registry as api

    saved, loaded = dict(api._REGISTRY), api._ENTRY_POINTS_LOADED
    yield api
    api._REGISTRY.clear()
    api._REGISTRY.update(saved)
    api._ENTRY_POINTS_LOADED = loaded


@pytest.fixture
def demo() -> dict[str, str]:
    """Absolute paths of the shipped letters demo (agent, data, reward)."""
    return {
        "agent": str(ROOT / "assets/agents/letters_agent.yaml"),
        "train": str(ROOT / "assets/datasets/letters_train.jsonl"),
        "test": str(ROOT / "assets/datasets/letters_test.jsonl"),
        "reward": str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward",
        "model": str(ROOT / "assets/models/tiny-letters"),
    }


@pytest.fixture(scope="session")
def trained_letters(tmp_path_factory):
    """The letters demo trained once for the whole session (300 GRPO steps: held-out greedy reward from ~0
    to ≥ 0.8 on CPU), for the tests of inference, evaluation, export and chat. Returns its AgentTrainer."""
    import yaml

    from engines import AgentTrainer

    cfg = yaml.safe_load((ROOT / "assets/configs/letters_grpo.yaml").read_text())
    cfg.update(max_steps=300, save_steps=300, eval_steps=0)
    trainer = AgentTrainer(agent=str(ROOT / "assets/agents/letters_agent.yaml"),
                           train_dataset=str(ROOT / "assets/datasets/letters_train.jsonl"),
                           test_dataset=str(ROOT / "assets/datasets/letters_test.jsonl"),
                           reward_func=str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward", config=cfg,
                           run_path=str(tmp_path_factory.mktemp("trained") / "runs"), train_engine_name="trl")
    assert trainer.train() == "finished"
    return trainer
