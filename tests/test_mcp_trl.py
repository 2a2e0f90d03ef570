"""The calc demo trained through MCP on CPU (TRL): rollouts call the real calculator server, over stdio and over
streamable HTTP; a server that dies and cannot be started again fails the run with cause "tool server error"."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from engines.core.modules import Modules
from engines import AgentTrainer
from engines.tools.mcp_client import ToolServerError
from engines.runs.rundir import RunDir
from testing import mcp_servers
from testing.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
CALC_SERVER = str(ROOT / "assets/mcp/calculator_server.py")
DATA = {
    "train_dataset": str(ROOT / "assets/datasets/calc_train.jsonl"),
    "test_dataset": str(ROOT / "assets/datasets/calc_test.jsonl"),
    "reward_func": str(ROOT / "assets/rewards/calc_reward.py") + ":calc_reward",
}
CONFIG = {
    "max_steps": 2,
    "prompts_per_step": 2,
    "num_generations": 4,
    "learning_rate": 1e-5,
    "save_steps": 2,
    "samples_per_step": 4,
}
TOKEN = "calc-token-5e4d3c2b1a"


def calc_agent(servers: dict, **extra) -> dict:
    """calc_mcp_agent.yaml's agent with other servers (the tiny model expects exactly the `add` tool)."""
    return {
        "name": "calc",
        "model": str(ROOT / "assets/models/tiny-calc"),
        "system_prompt": "You are a calculator. Use the add tool.",
        "max_tokens": 64,
        "max_steps": 3,
        "mcp_config": {"mcpServers": servers},
        "mcp_servers": list(servers),
        **extra,
    }


def executed_calls(run: RunDir, server: str) -> list[tuple[dict, dict]]:
    """(tool call, tool result) pairs of the recorded trajectories, each checked to be from ``server``."""
    pairs = []
    for sample in run.read_jsonl("samples.jsonl"):
        turns = sample["completion"]
        for i, m in enumerate(turns):
            for call in m.get("tool_calls") or []:
                result = next(t for t in turns[i + 1 :] if t["role"] == "tool")
                assert call["server"] == server and result["server"] == server, (call, result)
                pairs.append((call["function"], result))
    return pairs


def assert_real_sums(pairs):
    assert pairs, "no tool call was recorded"
    for fn, result in pairs:
        assert fn["name"] == "add" and result["name"] == "add"
        assert result["content"] == str(fn["arguments"]["a"] + fn["arguments"]["b"])  # the server computed it


def calc_servers_running(marker: str = CALC_SERVER) -> list[int]:
    return [
        p.pid for p in psutil.process_iter(["cmdline"]) if any(marker in part for part in (p.info["cmdline"] or []))
    ]


def test_calc_demo_trained_through_mcp_records_executed_tool_calls(tmp_path):
    trainer = AgentTrainer(
        agent=str(ROOT / "assets/agents/calc_mcp_agent.yaml"),
        **DATA,
        config=CONFIG,
        run_path=str(tmp_path / "runs"),
        train_engine_name="trl",
    )
    agent_check = next(r for r in trainer.check_results if r.module == "agent")
    assert agent_check.details["tool_servers"] == {"add": "calculator"}
    assert trainer.train() == "finished"
    run = trainer.train_processor.run
    rows = [r for r in run.read_jsonl("metrics.jsonl") if "loss" in r]
    assert len(rows) == 2 and all(r["tools/call_frequency"] > 0 for r in rows)
    assert all(r["tools/failure_frequency"] == 0 for r in rows)
    assert_real_sums(executed_calls(run, "calculator"))
    events = [e["event"] for e in run.read_jsonl("events.jsonl")]
    assert events.count("tool_server_started") == 1  # one session for the whole run, reused by every rollout
    assert not calc_servers_running()  # stopped with the run


@pytest.fixture
def http_calculator():
    with mcp_servers.calculator_over_http("streamable-http", token=TOKEN) as url:
        yield url


def test_a_streamable_http_server_works_the_same(tmp_path, http_calculator, monkeypatch):
    from engines.core.checks import check_all
    from engines.core.prepare import prepare_run
    from engines.runs.lifecycle import spawn_run

    monkeypatch.setenv("CALC_TEST_TOKEN", TOKEN)
    servers = {
        "web-calc": {
            "type": "streamable-http",
            "url": http_calculator,
            "headers": {"Authorization": "Bearer ${CALC_TEST_TOKEN}"},
        }
    }
    agent = calc_agent(servers, black_tool_actions={"web-calc": ["multiply"]})
    results = check_all(
        Modules(
            agent, DATA["train_dataset"], DATA["test_dataset"], DATA["reward_func"], CONFIG, train_engine_name="trl"
        )
    )
    assert results[0].status == "ok", results[0]
    assert results[0].details["mcp_servers"][0] == {
        "name": "web-calc",
        "transport": "streamable-http",
        "target": http_calculator,
        "tools": ["add"],
    }
    with pytest.raises(Exception, match=r"MCP server 'web-calc' answered HTTP 401 .* check `headers`"):
        from engines import load_agent

        load_agent(calc_agent({"web-calc": {**servers["web-calc"], "headers": {"Authorization": "Bearer wrong"}}}))

    # the studio's path: run.yaml, then a run process of its own that reads only it
    run = prepare_run(
        Modules(
            agent, DATA["train_dataset"], DATA["test_dataset"], DATA["reward_func"], CONFIG, train_engine_name="trl"
        ),
        runs_dir=str(tmp_path / "runs"),
    )
    assert run.read_spec()["agent"]["mcp_config"]["mcpServers"]["web-calc"]["headers"] == {
        "Authorization": "Bearer ${CALC_TEST_TOKEN}"
    }
    spawn_run(run.path)
    state = wait_for(
        lambda: run.read_status().get("state") in ("finished", "failed") and run.read_status()["state"],
        300,
        "the run to end",
    )
    assert state == "finished", run.log_path.read_text()[-3000:]
    assert_real_sums(executed_calls(run, "web-calc"))
    for f in run.path.rglob("*"):
        if f.is_file():
            assert TOKEN.encode() not in f.read_bytes(), f


def test_a_server_that_dies_and_cannot_restart_fails_the_run(tmp_path):
    marker = tmp_path / "crashed"
    servers = {"flaky": {**mcp_servers.command("flaky"), "env": {"FLAKY_CALLS": "3", "FLAKY_MARKER": str(marker)}}}
    trainer = AgentTrainer(
        agent=calc_agent(servers, black_tool_actions={"flaky": ["pid"]}),
        **DATA,
        config={**CONFIG, "max_steps": 4},
        run_path=str(tmp_path / "runs"),
        train_engine_name="trl",
    )
    with pytest.raises(ToolServerError):
        trainer.train()
    run = trainer.train_processor.run
    status = run.read_status()
    assert status["state"] == "failed" and status["cause"] == "tool server error"
    assert "MCP server 'flaky' exited before answering" in status["error"]
    assert "refusing to start" in status["error"]  # why it could not be started again: its stderr
    failed = [e for e in run.read_jsonl("events.jsonl") if e["event"] == "failed"]
    assert failed and failed[0]["cause"] == "tool server error"
    kinds = [e["event"] for e in run.read_jsonl("events.jsonl")]
    assert "tool_server_died" in kinds and "tool_server_failed" in kinds
    assert status["step"] <= 1  # it failed at the first step boundary after the server was lost
    assert marker.exists()
    assert not calc_servers_running(mcp_servers.PATH)


def test_a_run_whose_server_no_longer_starts_fails_as_a_tool_server_error(tmp_path):
    """The run process checks again from run.yaml: a server that started at launch but not any more."""
    import subprocess
    import sys

    from engines.core.prepare import prepare_run

    marker = tmp_path / "crashed"
    servers = {"flaky": {**mcp_servers.command("flaky"), "env": {"FLAKY_MARKER": str(marker)}}}
    run = prepare_run(
        Modules(
            calc_agent(servers, black_tool_actions={"flaky": ["pid"]}),
            DATA["train_dataset"],
            None,
            DATA["reward_func"],
            CONFIG,
            "trl",
        ),
        runs_dir=str(tmp_path / "runs"),
    )
    marker.write_text("crashed")  # from now on it refuses to start
    out = subprocess.run(
        [sys.executable, "-m", "engines", "run", str(run.path)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 2, out.stderr[-2000:]
    status = run.read_status()
    assert status["state"] == "failed" and status["cause"] == "tool server error"
    assert "MCP server 'flaky' exited before answering" in status["error"] and "refusing to start" in status["error"]
