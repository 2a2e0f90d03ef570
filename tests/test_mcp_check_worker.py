"""The studio's check worker and MCP servers: a stdio server an agent check starts never outlives the check,
whether the check's own time limit, the MCP time limit or a crash ends it (processes are counted)."""

from __future__ import annotations

import sys
import uuid

import psutil
import pytest
import yaml

from aworld_gui.core import inputs as inp
from aworld_gui.worker.check_worker import CheckWorker, WorkerError
from testing import mcp_servers
from testing.waiting import wait_for


@pytest.fixture(scope="module")
def worker():
    w = CheckWorker(default_timeout_s=60, task_modules=["testing.worker_tasks"])
    w.start(wait=True)
    yield w
    w.close()


def processes_with(marker: str) -> list[int]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if marker in (p.info["cmdline"] or []):
                out.append(p.pid)
        except psutil.Error:
            continue
    return out


def hanging_agent(tmp_path, startup_timeout: float) -> tuple[str, str]:
    """An agent YAML whose MCP server starts and never answers; the server's argv carries a unique marker."""
    from pathlib import Path

    marker = f"marker-{uuid.uuid4().hex[:8]}"
    root = Path(__file__).resolve().parent.parent
    entry = mcp_servers.command("hang")
    entry["args"] = entry["args"] + [marker]
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        yaml.safe_dump(
            {
                "model": str(root / "assets/models/tiny-calc"),
                "system_prompt": "x",
                "mcp_config": {"mcpServers": {"slow": {**entry, "startup_timeout": startup_timeout}}},
                "mcp_servers": ["slow"],
            }
        )
    )
    return str(agent), marker


def check_inputs(agent: str) -> dict:
    si = inp.demo_inputs()
    si.agent = agent
    return si.to_dict()


def test_a_check_killed_at_its_time_limit_takes_its_mcp_server_with_it(worker, tmp_path):
    agent, marker = hanging_agent(tmp_path, startup_timeout=300)  # the MCP limit would come much later
    with pytest.raises(WorkerError) as err:
        worker.call("check", inputs=check_inputs(agent), timeout_s=15)
    assert err.value.kind == "timeout" and err.value.stage == "agent"
    wait_for(lambda: not processes_with(marker), 30, f"no process left with {marker}")
    assert worker.call("echo", x=1) == {"x": 1}  # the warm worker still serves


def test_the_mcp_time_limit_ends_the_server_and_the_check_reports_it(worker, tmp_path):
    agent, marker = hanging_agent(tmp_path, startup_timeout=3)
    report = worker.call("check", inputs=check_inputs(agent), timeout_s=60)
    result = report["results"]["agent"]
    assert result["status"] == "error" and "MCP server 'slow' did not answer within 3 s" in result["message"]
    assert not processes_with(marker)


def test_a_process_left_by_a_crashed_check_is_ended(worker):
    marker = f"marker-{uuid.uuid4().hex[:8]}"
    argv = [sys.executable, mcp_servers.PATH, "hang", marker]
    with pytest.raises(WorkerError) as err:
        worker.call("start_then_crash", argv=argv)
    assert err.value.kind == "crash"
    wait_for(lambda: not processes_with(marker), 30, f"no process left with {marker}")
