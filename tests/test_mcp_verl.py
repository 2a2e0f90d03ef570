"""verl and MCP: the composed config of an MCP agent passes verl's own validation and its tool file names the MCP
tools, which verl's own loader registers as function tools that call the real server; a dead server that cannot
be restarted escapes verl's tool loop (which hands every Exception back to the model) and so ends the run."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from engines.verl import VerlProcessor
from testing import mcp_servers

ROOT = Path(__file__).resolve().parent.parent
CALC_SERVER = str(ROOT / "assets/mcp/calculator_server.py")

# verl's loader registers tools in a process-wide registry: each scenario runs in a process of its own
LOAD_AND_CALL = r"""
import asyncio, json, sys
from verl.tools.tool_registry import load_all_tools
tools = {t.name: t for t in load_all_tools(tool_config_path=None, function_tool_path=sys.argv[1])}
out = {"names": sorted(tools),
       "schemas": {n: t.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for n, t in tools.items()},
       "calls": []}
for name, args in json.loads(sys.argv[2]):
    try:
        out["calls"].append(["ok", asyncio.run(tools[name].call(args))])
    except BaseException as e:
        out["calls"].append([type(e).__name__, str(e), isinstance(e, Exception)])
print("RESULT " + json.dumps(out, default=str))
"""


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    rows = [{"prompt": f"What is {a} + {b}?", "answer": str(a + b)} for a in range(4) for b in range(4)]
    pd.DataFrame(rows).to_json(folder / "calc.jsonl", orient="records", lines=True)
    return str(folder / "calc.jsonl")


def composed(tmp_path, data_file, agent) -> VerlProcessor:
    p = VerlProcessor(str(tmp_path / "runs"))
    p.check_agent(agent)
    p.check_dataset(data_file)
    p.check_reward("exact_match")
    p.check_config({"batch_size": 4, "num_generations": 2})
    return p


def in_verl_process(tool_file: str, calls: list) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", LOAD_AND_CALL, tool_file, json.dumps(calls)], capture_output=True, text=True, timeout=300
    )
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, out.stderr[-3000:]
    return json.loads(line[len("RESULT ") :])


def test_verl_config_of_an_mcp_agent_passes_verls_validation_and_names_the_mcp_tools(tmp_path, data_file):
    agent = {
        "name": "calc",
        "model": str(ROOT / "assets/models/tiny-calc"),
        "system_prompt": "Calculate.",
        "max_tokens": 48,
        "max_steps": 3,
        "tools": [f"{ROOT}/assets/tools/calculator.py:multiply"],
        "mcp_config": {"mcpServers": {"calculator": {"command": "python", "args": [CALC_SERVER]}}},
        "mcp_servers": ["calculator"],
        "black_tool_actions": {"calculator": ["multiply"]},
    }
    p = composed(tmp_path, data_file, agent)
    cfg = OmegaConf.load(p.config_path)
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    mt = cfg.actor_rollout_ref.rollout.multi_turn
    assert mt.enable is True and mt.max_assistant_turns == 3
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "tool_agent"
    assert cfg.data.max_response_length == 48 * 3
    verl_dir = p.run.path / "verl"
    assert mt.function_tool_path == str(verl_dir / "mcp_tools.py")
    assert json.loads((verl_dir / "mcp_servers.json").read_text()) == {
        "mcpServers": {"calculator": {"command": "python", "args": [CALC_SERVER]}}
    }
    assert json.loads((verl_dir / "mcp_tools.json").read_text())["mcp_tools"] == ["add (calculator)"]

    got = in_verl_process(
        mt.function_tool_path,
        [["add", {"a": 3, "b": 4}], ["multiply", {"a": 3, "b": 4}], ["add", {"a": "three", "b": 4}]],
    )
    assert got["names"] == ["add", "multiply"]  # the MCP tool beside the Python tool, by verl's own loader
    add = got["schemas"]["add"]["function"]
    assert add["description"] == "Add two integers."
    assert add["parameters"]["properties"]["a"] == {"type": "integer", "description": "The first number."}
    assert got["calls"][0] == ["ok", 7]  # computed by the MCP server, in verl's process
    assert got["calls"][1] == ["ok", 12]  # the Python tool
    kind, message, is_exception = got["calls"][2]
    assert kind == "McpToolError" and "valid integer" in message and is_exception  # verl hands it to the model


def test_a_dead_server_that_cannot_restart_ends_verls_rollout(tmp_path, data_file):
    marker = tmp_path / "crashed"
    agent = {
        "name": "flaky",
        "model": str(ROOT / "assets/models/tiny-calc"),
        "system_prompt": "Calculate.",
        "max_tokens": 48,  # 3 turns of the default 256 tokens and the prompt would not fit tiny-calc's 1,024
        "mcp_config": {
            "mcpServers": {
                "flaky": {**mcp_servers.command("flaky"), "env": {"FLAKY_CALLS": "1", "FLAKY_MARKER": str(marker)}}
            }
        },
        "mcp_servers": ["flaky"],
    }
    p = composed(tmp_path, data_file, agent)
    tool_file = OmegaConf.load(p.config_path).actor_rollout_ref.rollout.multi_turn.function_tool_path
    got = in_verl_process(tool_file, [["add", {"a": 1, "b": 1}], ["add", {"a": 2, "b": 2}]])
    assert got["calls"][0] == ["ok", 2]
    kind, message, is_exception = got["calls"][1]
    assert kind == "FatalToolServerError" and not is_exception  # not caught by verl's `except Exception`
    assert message.startswith("tool server error: MCP server 'flaky'") and "refusing to start" in message
    from engines.runs.causes import classify_failure

    assert classify_failure(f"verl exited with code 1: {kind}: {message}") == "tool server error"
