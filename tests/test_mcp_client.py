"""The MCP client of a training process: one session per server reused across calls, a dead server started
again once, a server that cannot be started again becomes a ToolServerError for every later call."""

from __future__ import annotations

import os
import signal

import psutil
import pytest

from engines.tools.mcp_client import McpPool, McpToolError, ToolServerError
from engines.tools.mcp_servers import parse_mcp
from engines.tools.mcp_tools import McpTool, make_callable, result_value
from testing import mcp_servers
from testing.waiting import wait_for


def flaky_server(tmp_path, calls: int = 1_000_000, marker: bool = False, **extra):
    env = {"FLAKY_CALLS": str(calls)}
    if marker:
        env["FLAKY_MARKER"] = str(tmp_path / "crashed")
    warnings: list[str] = []
    selection = parse_mcp(
        {"mcp_config": {"mcpServers": {"flaky": {**mcp_servers.command("flaky"), "env": env, **extra}}}},
        None,
        warnings,
        [],
    )
    return selection.servers[0]


@pytest.fixture
def pool():
    events: list[tuple[str, dict]] = []
    p = McpPool(on_event=lambda kind, **f: events.append((kind, f)))
    p.events = events
    yield p
    p.close()


def pid_of(pool, server) -> int:
    return int(result_value(pool.call(server, "pid", {}), McpTool("flaky", "pid", "pid", "", {}, {})))


def test_one_session_is_reused_across_calls(tmp_path, pool):
    server = flaky_server(tmp_path)
    first = pid_of(pool, server)
    assert [pid_of(pool, server) for _ in range(5)] == [first] * 5
    assert [k for k, _ in pool.events] == ["tool_server_started"]
    pool.close()
    wait_for(lambda: not psutil.pid_exists(first), 20, "the server to stop when the pool closes")


def test_a_killed_server_is_started_again(tmp_path, pool):
    server = flaky_server(tmp_path)
    first = pid_of(pool, server)
    os.kill(first, signal.SIGKILL)
    second = pid_of(pool, server)  # the call that found it dead restarts it and succeeds
    assert second != first
    assert [k for k, _ in pool.events] == ["tool_server_started", "tool_server_died", "tool_server_restarted"]
    assert pool.fatal is None


def test_a_server_that_cannot_be_restarted_is_a_tool_server_error(tmp_path, pool):
    server = flaky_server(tmp_path, calls=2, marker=True)
    add = make_callable(
        McpTool(
            "flaky",
            "add",
            "add",
            "Add.",
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        ),
        server,
        lambda: pool,
    )
    assert add(a=1, b=2) == "3" and add(a=2, b=2) == "4"
    with pytest.raises(ToolServerError) as err:
        add(a=3, b=3)  # the third call kills it; starting it again fails (it refuses while its marker exists)
    msg = str(err.value)
    assert msg.startswith("tool server error: MCP server 'flaky' exited before answering")
    assert "refusing to start" in msg  # the restarted process's stderr
    assert pool.fatal is err.value
    with pytest.raises(ToolServerError):  # later calls fail at once, without starting it again
        add(a=1, b=1)
    assert [k for k, _ in pool.events] == ["tool_server_started", "tool_server_died", "tool_server_failed"]


def test_tool_errors_are_not_server_errors(tmp_path, pool):
    server = flaky_server(tmp_path)
    with pytest.raises(McpToolError, match="Unknown tool: nope"):
        result_value(pool.call(server, "nope", {}), McpTool("flaky", "nope", "nope", "", {}))
    assert pool.fatal is None and pid_of(pool, server) > 0


def test_a_call_that_outlives_its_timeout_is_a_tool_error(tmp_path, pool):
    server = flaky_server(tmp_path, timeout=0.5)
    # `pid` answers at once; a call to a server that stopped answering times out as a tool error
    pid = pid_of(pool, server)
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(McpToolError, match="did not answer within 0.5 s"):
            pool.call(server, "pid", {})
    finally:
        os.kill(pid, signal.SIGCONT)
    assert pool.fatal is None


def test_concurrent_calls_to_a_dead_server_restart_it_once(tmp_path, pool):
    from concurrent.futures import ThreadPoolExecutor

    server = flaky_server(tmp_path)
    first = pid_of(pool, server)
    os.kill(first, signal.SIGKILL)
    with ThreadPoolExecutor(4) as ex:  # as verl's worker threads call tools
        pids = list(ex.map(lambda _: pid_of(pool, server), range(8)))
    assert len(set(pids)) == 1 and pids[0] != first
    kinds = [k for k, _ in pool.events]
    assert kinds.count("tool_server_restarted") == 1 and kinds.count("tool_server_started") == 1


def test_an_http_server_that_comes_back_is_reconnected(pool):
    from engines.tools.mcp_servers import parse_mcp
    from testing import free_port

    port = free_port()
    with mcp_servers.calculator_over_http("streamable-http", port=port) as url:
        server = parse_mcp(
            {"mcp_config": {"mcpServers": {"web": {"type": "streamable-http", "url": url, "startup_timeout": 60}}}},
            None,
            [],
            [],
        ).servers[0]
        tool = McpTool("web", "add", "add", "", {}, {"properties": {"result": {"type": "integer"}}})
        assert result_value(pool.call(server, "add", {"a": 1, "b": 2}), tool) == 3
    with mcp_servers.calculator_over_http("streamable-http", port=port):  # the same server, restarted
        assert result_value(pool.call(server, "add", {"a": 2, "b": 3}), tool) == 5
    kinds = [k for k, _ in pool.events]
    assert kinds[:2] == ["tool_server_started", "tool_server_died"] and "tool_server_restarted" in kinds
    assert pool.fatal is None
