"""The MCP tools of a verl run as function tools (``function_tool_path=<run>/verl/mcp_tools.py``; installed by
:func:`engines.verl.mcp_config.write_mcp_tools`): the agent's Python tools first (their own file, when there are
any), then one ``@function_tool`` per MCP tool listed at check time, calling its server (``mcp_servers.json``)
through the studio's MCP client. No server is started when verl loads the file; each is started by the first call
in each process.

Parameters (``mcp_tools.json``): ``servers_file``, ``python_tools_file`` (or null), ``tools`` (McpTool fields).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
from typing import Any, Callable

from ..tools import mcp_client, mcp_tools
from ..tools.mcp_servers import parse_mcp


class FatalToolServerError(BaseException):
    """An MCP server died and could not be started again (a BaseException: verl's tool loop hands every
    Exception back to the model as the tool's result, and this must end the run)."""


def servers(path: str) -> dict[str, Any]:
    """The servers of ``path`` (AWorld's ``{"mcpServers": ...}``), their ``${VAR}`` substituted from this process's
    environment, by name."""
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    warnings: list[str] = []
    missing: list[str] = []
    selection = parse_mcp({"mcp_config": config, "mcp_servers": list(config["mcpServers"])}, None, warnings, missing)
    if missing:
        raise RuntimeError(
            "environment variable(s) the MCP servers need are not set in the verl job: "
            + ", ".join(sorted(set(missing)))
            + " (set them, or list them under env_vars)"
        )
    return selection.by_name()


def ending_the_run_on_server_loss(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(**kwargs):
        try:
            return fn(**kwargs)
        except mcp_client.ToolServerError as e:
            raise FatalToolServerError(str(e)) from e

    return call


def start(folder: str, params: dict[str, Any]) -> dict[str, Any]:
    """Register the Python tools and each MCP tool with verl; exports nothing."""
    if importlib.util.find_spec("mcp") is None:
        raise ImportError("MCP tools need the official MCP SDK in verl's environment: pip install 'mcp>=1.10.1,<2'")
    from verl.tools.function_tool import function_tool, load_function_tools_from_path

    if params.get("python_tools_file"):
        load_function_tools_from_path(os.path.join(folder, params["python_tools_file"]))
    by_name = servers(os.path.join(folder, params["servers_file"]))
    for item in params["tools"]:
        fn = mcp_tools.make_callable(mcp_tools.McpTool(**item), by_name[item["server"]])
        function_tool(item["name"])(ending_the_run_on_server_loss(fn))
    return {}
