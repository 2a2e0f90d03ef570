"""The shipped letters demo's inputs as absolute paths: what tests and benchmarks train on."""

from __future__ import annotations

from pathlib import Path

ASSETS = Path(__file__).resolve().parent.parent / "assets"
AGENT = str(ASSETS / "agents/letters_agent.yaml")
TRAIN = str(ASSETS / "datasets/letters_train.jsonl")
TEST = str(ASSETS / "datasets/letters_test.jsonl")
REWARD = str(ASSETS / "rewards/letter_reward.py") + ":letter_reward"
MODEL = str(ASSETS / "models/tiny-letters")
