"""The agent's MCP servers as tools of verl's tool agent loop.

verl 0.9.1 has no MCP tool type any more (``verl.tools.tool_registry.ToolType`` holds only ``native``:
"MCP tool is removed for now"); what it has is function tools loaded from
``actor_rollout_ref.rollout.multi_turn.function_tool_path``. So each MCP tool the check listed becomes a
verl ``@function_tool`` whose function calls its server through the studio's MCP client — the same
callable TRL gets (:mod:`engines.tools.mcp_tools`), so verl infers the same tool schema from it.

Two files land in ``<run>/verl/`` next to the engines snapshot the bridge files use:

* ``mcp_servers.json`` — the servers in AWorld's ``{"mcpServers": {...}}`` form (the format verl's older
  MCP tools read too), secrets as their ``${VAR}`` references, never their values: the verl process
  substitutes them from its own environment (on a Ray cluster: the config's ``env_vars``);
* ``mcp_tools.py`` — the function-tool file (:mod:`engines.plugins.verl_mcp_tools`, with ``mcp_tools.json``): it
  registers the agent's Python tools (``function_tools.py``) when there are any, then one function tool per MCP
  tool, listed at check time (no server is started when verl loads the file; each is started by the first call in
  each process).

verl's tool loop turns every ``Exception`` of a tool into a tool message; a server that died and cannot be
started again raises ``FatalToolServerError`` (a ``BaseException``) instead, which ends the rollout and so
the run, its message starting with "tool server error".
"""

from __future__ import annotations

import json
from pathlib import Path

from ..agents.agent_spec import AgentSpec
from ..plugins.install import install

SERVERS_FILE = "mcp_servers.json"
TOOLS_FILE = "mcp_tools.py"


def write_mcp_tools(run_dir: Path, verl_dir: Path, spec: AgentSpec, python_tool_file: Path | None) -> Path:
    """``mcp_servers.json`` and ``mcp_tools.py`` (:mod:`engines.plugins.verl_mcp_tools`) for ``spec``'s MCP tools;
    returns the function-tool file (it also registers the Python tools of ``python_tool_file``)."""
    verl_dir.mkdir(parents=True, exist_ok=True)
    servers = {"mcpServers": {s.name: s.public() for s in spec.mcp.servers}}
    (verl_dir / SERVERS_FILE).write_text(json.dumps(servers, indent=1), encoding="utf-8")
    tools = [t.to_dict() for t in spec.mcp_tools]
    params = {
        "python_tools": [r.rpartition(":")[2] for r in spec.tools],
        "mcp_tools": [f"{t['name']} ({t['server']})" for t in tools],
        "servers_file": SERVERS_FILE,
        "python_tools_file": python_tool_file.name if python_tool_file else None,
        "tools": tools,
    }
    return install(verl_dir, TOOLS_FILE, "verl_mcp_tools", params, "the verl MCP tools")
