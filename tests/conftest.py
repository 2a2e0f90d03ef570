"""Shared fixtures. Keep this small: module-specific helpers live in their test files."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _forget_user_modules():
    """User files imported by a test (``_aworld_user_*``, see engines.loading) are dropped afterwards, so
    tests that assert user code never ran in their process (the studio's) hold in a full run."""
    yield
    for name in [n for n in sys.modules if n.startswith("_aworld_user_")]:
        del sys.modules[name]


@pytest.fixture
def clean_registry():
    """The engine registry (engines.registry._REGISTRY and the entry-point flag), restored after the test."""
    from engines import registry as api

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
