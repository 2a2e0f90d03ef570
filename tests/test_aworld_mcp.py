"""AWorld's MCP servers as they are: an mcp-1.x FastMCP server started as ``python -m <module>`` from the project
root its config lives in, ``client_session_timeout_seconds``, ``${VAR}`` in ``env``, an ``npx`` server without
Node.js; and a server written for mcp 2.x answering this client (on AWorld's mcp 1.x) when started by an
interpreter that has mcp 2.x."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from engines.agents.agent_spec import agent_result, load_agent
from engines.results.check_result import CheckError
from engines.tools.mcp_client import McpPool, McpToolError
from engines.tools.mcp_tools import result_value
from testing import mcp2_calculator

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "testing" / "aworld_project"
MODEL = str(ROOT / "assets/models/tiny-calc")


@pytest.fixture
def project(tmp_path) -> Path:
    """A copy of the AWorld-style project, with an agent YAML two folders below its root."""
    root = tmp_path / "my-aworld"
    shutil.copytree(PROJECT, root)
    agent = {
        "name": "calc",
        "model": MODEL,
        "system_prompt": "Use the add tool.",
        "mcp_config": "../mcp.json",
        "mcp_servers": ["calculator"],
    }
    (root / "examples/calc/agents").mkdir()  # git keeps no empty folder: a fresh clone has none
    (root / "examples/calc/agents/calc.yaml").write_text(yaml.safe_dump(agent))
    return root


def test_a_module_server_runs_from_the_project_root_found_walking_up_and_the_check_says_so(project, monkeypatch):
    monkeypatch.chdir(ROOT)  # not the project: only walking up from the agent's config finds it
    spec = load_agent(str(project / "examples/calc/agents/calc.yaml"))
    server = spec.mcp.servers[0]
    assert server.cwd == str(project.resolve())
    assert spec.tool_servers == {"add": "calculator"}
    assert server.session_timeout == 9999.0 and server.timeout == 9999.0  # client_session_timeout_seconds
    shown = agent_result(spec).details["mcp_servers"][0]
    assert shown["cwd"] == str(project.resolve()) and "examples.calc.mcp_collections.calculator" in shown["cwd_note"]
    from aworld_gui.rendering import render

    card = render.agent_spec(
        spec.to_dict(), spec.tool_schemas, spec.tool_servers, agent_result(spec).details["mcp_servers"]
    )
    assert str(project.resolve()) in card and 'data-testid="mcp-cwd"' in card
    # the second time, from the spec a run writes (no agent file there): the folder travels with it
    again = load_agent(spec.to_dict())
    assert again.mcp.servers[0].cwd == str(project.resolve()) and again.tool_servers == {"add": "calculator"}


def test_without_the_project_root_the_module_is_not_found_and_the_error_says_what_ran(project, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = json.loads((project / "examples/calc/mcp.json").read_text())
    config["mcpServers"]["calculator"]["cwd"] = str(tmp_path)  # a cwd set by the user wins: and is wrong here
    with pytest.raises(CheckError) as e:
        load_agent({"model": MODEL, "mcp_config": config, "mcp_servers": ["calculator"]})
    assert "No module named 'examples.calc'" in str(e.value) and "calculator" in str(e.value)


def _server(project: Path, **changes):
    spec = load_agent(
        {"model": MODEL, "mcp_config": str(project / "examples/calc/mcp.json"), "mcp_servers": ["calculator"]},
        load_tools=False,
    )
    server = spec.mcp.servers[0]
    for k, v in changes.items():
        setattr(server, k, v)
    return server


def test_env_vars_reach_the_server_substituted(project, monkeypatch):
    monkeypatch.setenv("CALC_OFFSET", "100")
    server = _server(project)
    assert server.env == {"CALC_OFFSET": "100"} and server.raw["env"] == {"CALC_OFFSET": "${CALC_OFFSET}"}
    pool = McpPool()
    try:
        assert str(result_value(pool.call(server, "add", {"a": 2, "b": 3}), _tool())) == "105"
    finally:
        pool.close()


def _tool():
    from engines.tools.mcp_tools import McpTool

    return McpTool("calculator", "add", "add", "", {}, None)


def test_client_session_timeout_seconds_bounds_a_call(project, monkeypatch):
    monkeypatch.setenv("CALC_DELAY_S", "5")
    config = json.loads((project / "examples/calc/mcp.json").read_text())
    config["mcpServers"]["calculator"].update(client_session_timeout_seconds=1, env={"CALC_DELAY_S": "${CALC_DELAY_S}"})
    spec = load_agent({"model": MODEL, "mcp_config": config, "mcp_servers": ["calculator"]}, load_tools=False)
    spec.mcp.servers[0].cwd = str(project)
    pool = McpPool()
    try:
        with pytest.raises(McpToolError, match="did not answer within 1 s"):
            pool.call(spec.mcp.servers[0], "add", {"a": 1, "b": 2})
    finally:
        pool.close()


def test_an_npx_server_without_node_is_a_clear_error(project, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no node, no npx here
    with pytest.raises(CheckError) as e:
        load_agent({"model": MODEL, "mcp_config": str(project / "examples/calc/mcp.json"), "mcp_servers": ["code"]})
    assert "Node.js is not installed" in str(e.value) and "'code'" in str(e.value) and "npx" in str(e.value)


@pytest.fixture(scope="session")
def mcp2_site(tmp_path_factory) -> Path:
    return mcp2_calculator.mcp2_site(tmp_path_factory.mktemp("mcp2"))


def test_a_server_written_for_mcp_2_answers_when_started_by_an_interpreter_that_has_it(mcp2_site):
    from importlib.metadata import version

    assert version("mcp").startswith("1.")  # this process: AWorld's SDK
    server = {"command": sys.executable, "args": [mcp2_calculator.__file__], "env": {"PYTHONPATH": str(mcp2_site)}}
    spec = load_agent({"model": MODEL, "mcp_config": {"mcpServers": {"calc2": server}}})
    assert spec.tool_servers == {"add": "calc2"}
    pool = McpPool()
    try:
        assert str(result_value(pool.call(spec.mcp.servers[0], "add", {"a": 20, "b": 22}), _tool())) == "42"
    finally:
        pool.close()


def test_a_server_written_for_mcp_2_started_by_this_python_says_how_to_start_it():
    server = {"command": "python", "args": [mcp2_calculator.__file__]}
    with pytest.raises(CheckError) as e:
        load_agent({"model": MODEL, "mcp_config": {"mcpServers": {"calc2": server}}})
    assert "written for mcp 2.x" in str(e.value) and "set `command` to that interpreter" in str(e.value)
