"""An AWorld ``Agent`` object as an AWorld user builds one (AgentConfig, system_prompt, mcp_servers, mcp_config with
a ``python -m`` server of an AWorld-style project, testing/aworld_project), for the tests that train it."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = str(ROOT / "assets/models/tiny-calc")
PROJECT = ROOT / "testing/aworld_project"
#: the calc task's inputs besides the agent, as AgentTrainer's keyword arguments
CALC_DATA = {
    "train_dataset": str(ROOT / "assets/datasets/calc_train.jsonl"),
    "test_dataset": str(ROOT / "assets/datasets/calc_test.jsonl"),
    "reward_func": str(ROOT / "assets/rewards/calc_reward.py") + ":calc_reward",
}


def copy_project(tmp_path: Path) -> Path:
    """The AWorld-style project copied under ``tmp_path`` (make it the current folder: AWorld runs from there)."""
    root = tmp_path / "proj"
    shutil.copytree(PROJECT, root)
    return root


def calc_agent(**extra):
    """The calculator agent: its ``add`` tool from the project's mcp-1.x stdio server ``calculator``."""
    from aworld.agents.llm_agent import Agent
    from aworld.config.conf import AgentConfig, ModelConfig

    mcp_config = {
        "mcpServers": {
            "calculator": {
                "command": "python",
                "args": ["-m", "examples.calc.mcp_collections.calculator"],
                "client_session_timeout_seconds": 60,
            }
        }
    }
    conf = AgentConfig(
        llm_config=ModelConfig(
            llm_model_name=MODEL, llm_provider="openai", llm_temperature=1.0, params={"max_tokens": 64}
        )
    )
    return Agent(
        name="calc",
        conf=conf,
        system_prompt="You are a calculator. Use the add tool.",
        mcp_servers=["calculator"],
        mcp_config=mcp_config,
        **extra,
    )
