"""AWorld itself in the same environment: ``aworld`` and ``engines`` import together, and AWorld's own ``Agent``
objects (AgentConfig, system_prompt, mcp_servers, mcp_config) and agent YAML (through AWorld's loader) are
checked — the card says where each setting came from — and train."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engines import AgentTrainer
from engines.agents.agent_spec import agent_result, load_agent
from testing.aworld_agent import CALC_DATA, calc_agent, copy_project

ROOT = Path(__file__).resolve().parent.parent
MODEL = str(ROOT / "assets/models/tiny-calc")


def test_aworld_and_engines_import_in_one_process_on_one_mcp_sdk():
    code = (
        "import aworld, engines, mcp.server.fastmcp; from aworld.agents.llm_agent import Agent; "
        "from engines.tools.mcp_client import open_session; from importlib.metadata import version; "
        "print(version('aworld'), version('mcp'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    aworld_version, mcp_version = out.stdout.split()[-2:]
    assert aworld_version.startswith("0.3.") and mcp_version.startswith("1.10.")


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """The AWorld-style project, as the current folder (AWorld runs from its project root)."""
    root = copy_project(tmp_path)
    monkeypatch.chdir(root)
    return root


def test_an_aworld_agent_object_is_checked_and_the_card_says_where_each_setting_came_from(project):
    spec = load_agent(calc_agent(tool_names=["search_api"]))
    assert (spec.name, spec.model, spec.system_prompt) == ("calc", MODEL, "You are a calculator. Use the add tool.")
    assert spec.tool_servers == {"add": "calculator"} and spec.mcp.servers[0].cwd == str(project.resolve())
    result = agent_result(spec)
    assert "AWorld form: Agent object" in result.message
    origins = result.details["origins"]
    assert origins["model"].startswith("AgentConfig.llm_config.llm_model_name (AWorld form")
    assert origins["system_prompt"].startswith("Agent(system_prompt=...)")
    assert origins["mcp_config"].startswith("Agent(mcp_config=...)")
    assert any("search_api" in w and "not used in training" in w for w in result.warnings)
    from aworld_gui.rendering import render

    card = render.agent_spec(
        result.details["spec"], spec.tool_schemas, spec.tool_servers, result.details["mcp_servers"], origins
    )
    assert 'data-key="model"' in card and "AgentConfig.llm_config.llm_model_name" in card


def test_aworld_multi_agent_yaml_goes_through_aworlds_loader(tmp_path, monkeypatch):
    monkeypatch.setenv("AW_TEST_KEY", "sk-aworld-5c1e9d")
    path = tmp_path / "agents.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "vars": {"TEMP": 0.4},
                "agents": {
                    "solver": {
                        "system_prompt": "Solve.",
                        "llm_config": {
                            "llm_model_name": MODEL,
                            "llm_temperature": "${vars.TEMP}",
                            "llm_api_key": "${AW_TEST_KEY}",
                        },
                    },
                    "critic": {"system_prompt": "Criticise."},
                },
            },
            sort_keys=False,
        )
    )
    spec = load_agent(str(path))
    assert (spec.name, spec.model, spec.temperature) == ("solver", MODEL, 0.4)  # ${vars.KEY}: AWorld's own
    result = agent_result(spec)
    assert "read by aworld.config.agent_loader" in result.message
    assert spec.to_dict()["api_key"] == "${AW_TEST_KEY}"  # the reference, never the value
    assert "sk-aworld-5c1e9d" not in str(result.to_dict())
    assert any("training 'solver'" in w for w in result.warnings)


def test_an_aworld_agent_with_an_mcp_1x_stdio_server_trains_3_steps_on_trl_calling_its_tools(project, tmp_path):
    config = {
        "max_steps": 3,
        "prompts_per_step": 2,
        "num_generations": 4,
        "learning_rate": 1e-5,
        "save_steps": 3,
        "samples_per_step": 4,
    }
    trainer = AgentTrainer(
        agent=calc_agent(), **CALC_DATA, config=config, run_path=str(tmp_path / "runs"), train_engine_name="trl"
    )
    agent_check = next(r for r in trainer.check_results if r.module == "agent")
    assert agent_check.details["tool_servers"] == {"add": "calculator"}
    assert trainer.train() == "finished"
    run = trainer.train_processor.run
    rows = [r for r in run.read_jsonl("metrics.jsonl") if "loss" in r]
    assert len(rows) == 3
    calls = []
    for sample in run.read_jsonl("samples.jsonl"):
        turns = sample["completion"]
        for i, m in enumerate(turns):
            for call in m.get("tool_calls") or []:
                result = next(t for t in turns[i + 1 :] if t["role"] == "tool")
                assert call["server"] == "calculator" and result["name"] == "add"
                calls.append((call["function"]["arguments"], result["content"]))
    assert calls, "no tool call was recorded"
    assert all(content == str(args["a"] + args["b"]) for args, content in calls)  # the AWorld server computed it


def test_verl_answers_inference_for_an_aworld_agent_object_calling_its_tools(project, tmp_path):
    """AWorld's verl ``inference()`` returns None; ours, for an Agent object on the verl engine (checked with verl's
    own validate_config on this CPU machine), answers with the agent's base model through its generation loop —
    the AWorld project's MCP server called — and the reward's score."""
    import asyncio

    trainer = AgentTrainer(
        agent=calc_agent(), **CALC_DATA, config={}, run_path=str(tmp_path / "runs"), train_engine_name="verl"
    )
    checks = {r.module: r for r in trainer.check_results}
    assert (
        "validate_config passed" in checks["config"].message and "AWorld form: Agent object" in checks["agent"].message
    )
    result = asyncio.run(trainer.inference(checkpoint="base", max_samples=2))
    assert result is not None and result.model == "base"
    assert result.metrics["prompts"] == 2 and result.metrics["tool_calls"] > 0, result.metrics
    assert 0.0 <= result.metrics["reward"] <= 1.0 and len(result.predictions) == 2
