"""MCP in the studio, in headless Chromium: an uploaded AWorld agent YAML with an MCP server is checked by the
check worker (the server started, listed, closed) and its Agent card lists the MCP tool with its parameters and
its server; a run trained through MCP shows its tool calls and results in the Monitor labelled with the server.
Screenshots go to ``artifacts/screenshots/``."""

from __future__ import annotations

from engines.core.modules import Modules

import os
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from aworld_gui.core import inputs as inp
from testing import waiting
from testing.studio import CHROMIUM, launch_chromium

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "artifacts" / "screenshots"
MCP_AGENT = ROOT / "assets/agents/calc_mcp_agent.yaml"


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def wait_for(fn, timeout_s: float, what: str):
    return waiting.wait_for(fn, timeout_s, what, retry_errors=True)


def agent_chip(page) -> str | None:
    return page.get_attribute('#checks-strip .aw-chip[data-module="agent"]', "data-status")


@pytest.fixture(scope="module")
def app(shared_studio):
    return shared_studio


@pytest.fixture(scope="module")
def page(app):
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium"
    with sync_playwright() as p:
        browser = launch_chromium(p)
        pg = browser.new_page(viewport={"width": 1440, "height": 1000})
        pg.goto(app.url)
        yield pg
        browser.close()


def test_the_agent_card_lists_mcp_tools_with_their_server(page):
    wait_for(lambda: agent_chip(page) in ("ok", "warning"), 120, "the demo's first check")
    with page.expect_file_chooser() as fc:
        page.click("#agent-upload")
    fc.value.set_files(str(MCP_AGENT))  # an upload loses its folder: its relative paths are resolved again
    wait_for(
        lambda: "calc-mcp-agent" in page.inner_text("#agent-spec") and agent_chip(page) == "ok",
        90,
        "the MCP agent checked green",
    )
    tool = page.locator('#agent-spec .aw-tool[data-tool="add"]')
    assert tool.get_attribute("data-server") == "calculator"
    text = tool.inner_text()
    assert "add(a: integer, b: integer)" in text and "MCP · calculator" in text and "Add two integers." in text
    assert page.locator("#agent-spec .aw-param").first.get_attribute("title") == "The first number."
    servers = page.inner_text('#agent-spec .aw-mcp-server[data-server="calculator"]')
    assert "stdio" in servers and "calculator_server.py" in servers and "1 tool(s) used" in servers
    assert "add (calculator)" in page.inner_text("#status-agent")
    page.locator("#agent-spec").scroll_into_view_if_needed()
    shot(page, "mcp-01-agent-card")


def test_the_monitor_labels_mcp_tool_calls_with_their_server(page, app):
    from engines.core.prepare import prepare_run
    from engines.runs.lifecycle import spawn_run

    run = prepare_run(
        Modules(
            str(MCP_AGENT),
            str(inp.DATASETS_DIR / "calc_train.jsonl"),
            None,
            str(inp.REWARDS_DIR / "calc_reward.py") + ":calc_reward",
            {"max_steps": 3, "prompts_per_step": 2, "num_generations": 4, "save_steps": 3, "samples_per_step": 2},
            "trl",
        ),
        runs_dir=str(app.runs_dir),
    )
    spawn_run(run.path)
    waiting.wait_for(lambda: run.read_status().get("state") in ("finished", "failed"), 300, "the run to end")
    assert run.read_status()["state"] == "finished", run.log_path.read_text()[-2000:]
    page.get_by_role("tab", name="Monitor").click()
    page.fill("#monitor-run input", run.run_id)
    page.keyboard.press("Enter")
    wait_for(
        lambda: page.locator('#samples [data-testid="call-server"]').count() >= 2,
        60,
        "trajectories with MCP tool calls in the Monitor",
    )
    sample = page.locator("#samples .aw-sample").first
    text = sample.inner_text()
    assert "⚙ add(" in text and "MCP · calculator" in text
    assert sample.locator(".aw-role-tool").inner_text().lower().startswith("tool")
    assert "MCP · calculator" in sample.locator(".aw-role-tool").inner_text()
    page.locator("#samples").scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    shot(page, "mcp-02-monitor-trajectory")
