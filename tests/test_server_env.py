"""A variable named by ``${NAME}`` in one MCP server's entry goes to that server alone (issue 29, item 4): not
into the environment of the reward, of another server, of a run's or a check's process, and never on a
command line. Real MCP servers (testing/mcp_servers.py's ``env`` kind, whose tool reads its environment)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from engines.results.check_result import CheckError
from engines.isolation.processes import spawn_detached, terminate_tree
from engines.isolation.sandbox import run_isolated
from engines.isolation.user_env import referenced_names, user_code_env
from engines.runs.lifecycle import spawn_run
from engines.runs.rundir import RunDir
from testing import mcp_servers
from testing.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
SECRET = "ghp_meant-for-one-server-7c1d"
KEY = "sk-the-agents-own-key-3b9a"


def agent(**extra) -> dict:
    """The calc demo's agent with two real servers: ``holder`` names ${SECRET_X} in its env, ``other`` nothing."""
    servers = {
        "holder": {**mcp_servers.command("env"), "env": {"TOKEN": "${SECRET_X}"}},
        "other": mcp_servers.command("env"),
    }
    return {
        "name": "probe",
        "model": str(ROOT / "assets/models/tiny-calc"),
        "system_prompt": "You are a calculator.",
        "api_key": "${AGENT_KEY_Y}",
        "max_steps": 2,
        "mcp_config": {"mcpServers": servers},
        "mcp_servers": list(servers),
        "mcp_tool_prefix": True,  # both have read_env: holder__read_env, other__read_env
        **extra,
    }


@pytest.fixture
def secrets(monkeypatch):
    monkeypatch.setenv("SECRET_X", SECRET)
    monkeypatch.setenv("AGENT_KEY_Y", KEY)


def env_probe_reward(folder: Path) -> tuple[Path, Path]:
    """A reward that writes whether the server's secret is in its environment (Python's and the kernel's)."""
    report = folder / "reward_saw.json"
    reward = folder / "probe_reward.py"
    reward.write_text(
        "import json, os\n\n"
        "def probe_reward(completion, answer, **kw):\n"
        "    kernel = open('/proc/self/environ', 'rb').read()\n"
        f"    json.dump({{'environ': 'SECRET_X' in os.environ, 'kernel': {SECRET!r}.encode() in kernel,\n"
        "               'key': os.environ.get('AGENT_KEY_Y')}, open(" + repr(str(report)) + ", 'w'))\n"
        "    return 0.0\n"
    )
    return reward, report


def test_the_names_an_mcp_server_asks_for_are_its_alone(tmp_path):
    from engines.isolation.user_env import server_values

    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": {"gh": {"url": "http://h/${FILE_TOKEN}"}}}))
    (tmp_path / "agent.yaml").write_text("model: m\nllm_api_key: ${AGENT_KEY_Y}\nmcp_config: servers.json\n")
    assert referenced_names(str(tmp_path / "agent.yaml")) == {"AGENT_KEY_Y"}
    assert server_values(str(tmp_path / "agent.yaml"), base={"FILE_TOKEN": "t", "AGENT_KEY_Y": "k"}) == {
        "FILE_TOKEN": "t"
    }
    spec = agent()
    assert referenced_names(spec) == {"AGENT_KEY_Y"}
    assert server_values(spec, base={"SECRET_X": "s"}) == {"SECRET_X": "s"}
    # a name the agent asks for itself too is the process's (it named it), not a server's alone
    both = agent(system_prompt="${SECRET_X}")
    assert referenced_names(both) == {"AGENT_KEY_Y", "SECRET_X"} and server_values(both, base={"SECRET_X": "s"}) == {}


def _read_both_servers(spec: dict) -> dict:
    """In an isolated call: each server's TOKEN and SECRET_X, and this process's environment."""
    from engines import load_agent
    from engines.tools.mcp_client import McpPool

    servers = load_agent(spec).mcp.by_name()
    pool = McpPool()
    try:
        read = {
            s: {n: pool.call(servers[s], "read_env", {"name": n}).content[0].text for n in ("TOKEN", "SECRET_X")}
            for s in servers
        }
    finally:
        pool.close()
    return {"servers": read, "process": "SECRET_X" in os.environ, "key": os.environ.get("AGENT_KEY_Y")}


def test_an_isolated_call_hands_the_secret_to_its_server_alone(secrets):
    from engines.isolation.user_env import server_values

    spec = agent()
    out = run_isolated(
        _read_both_servers,
        {"spec": spec},
        timeout_s=120,
        env=user_code_env(allow=referenced_names(spec)),
        server_env=server_values(spec),
    )
    assert out.ok, out.error + out.output
    read = out.value["servers"]
    assert read["holder"] == {"TOKEN": SECRET, "SECRET_X": "<unset>"}, read
    assert read["other"] == {"TOKEN": "<unset>", "SECRET_X": "<unset>"}, read
    assert out.value["process"] is False and out.value["key"] == KEY


def test_the_check_keeps_a_servers_secret_from_the_reward(tmp_path, secrets):
    from engines.core.isolated_checks import check_all_isolated
    from engines.core.modules import Modules

    reward, report = env_probe_reward(tmp_path)
    modules = Modules(agent(), str(ROOT / "assets/datasets/calc_train.jsonl"), None, f"{reward}:probe_reward")
    results = check_all_isolated(modules.replace(config={"max_steps": 1}, train_engine_name="trl"), timeout_s=180)
    by_module = {r.module: r for r in results}
    assert by_module["agent"].status == "ok", by_module["agent"]  # the holder started: its ${SECRET_X} was set
    seen = json.loads(report.read_text())
    assert seen == {"environ": False, "kernel": False, "key": KEY}, seen


def test_the_studio_check_keeps_a_servers_secret_from_the_reward(tmp_path, secrets):
    import yaml

    from aworld_gui.core.inputs import SetupInputs
    from aworld_gui.core.studio import Studio
    from aworld_gui.worker.check_worker import CheckWorker

    reward, report = env_probe_reward(tmp_path)
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(agent()))
    studio = Studio(tmp_path / "runs", worker=CheckWorker())
    try:
        res = studio.check(
            SetupInputs(
                agent=str(tmp_path / "agent.yaml"),
                train=str(ROOT / "assets/datasets/calc_train.jsonl"),
                rewards=[{"ref": f"{reward}:probe_reward", "weight": 1.0}],
                engine="trl",
            )
        )
    finally:
        studio.close()
    assert res["results"]["agent"]["status"] == "ok", res["results"]["agent"]
    seen = json.loads(report.read_text())
    assert seen == {"environ": False, "kernel": False, "key": KEY}, seen


def test_a_run_process_gets_a_servers_secret_beside_its_environment(tmp_path, secrets):
    run = RunDir.create(tmp_path / "runs", "nothing")
    run.write_spec({"engine": "no-such-engine", "run_id": run.run_id, "agent": agent(), "machine_slot": False})
    pid = spawn_run(run.path)
    try:
        env = psutil.Process(pid).environ()
    finally:
        terminate_tree(pid, grace_s=0)
    assert "SECRET_X" not in env and SECRET not in json.dumps(env)
    assert env.get("AGENT_KEY_Y") == KEY


def test_a_started_engines_process_receives_the_servers_values_once(tmp_path):
    out = tmp_path / "received.json"
    code = (
        "import json, os, sys, time\n"
        "from engines.isolation import server_env\n"
        "server_env.receive()\n"
        f"json.dump({{'values': server_env.values(), 'environ': dict(os.environ)}}, open({str(out)!r}, 'w'))\n"
        "time.sleep(30)\n"
    )
    proc = spawn_detached(
        [sys.executable, "-c", code],
        tmp_path / "log",
        env={"PATH": os.environ["PATH"]},
        server_env={"SECRET_X": SECRET},
    )
    try:
        wait_for(out.exists, 60, "the child's report")
        time.sleep(0.2)
        seen = json.loads(out.read_text())
        kernel = Path(f"/proc/{proc.pid}/environ").read_bytes()
        fds = os.listdir(f"/proc/{proc.pid}/fd")
    finally:
        terminate_tree(proc.pid, grace_s=0)
    assert seen["values"] == {"SECRET_X": SECRET}
    assert SECRET not in json.dumps(seen["environ"]) and SECRET.encode() not in kernel
    assert sorted(int(f) for f in fds) == [0, 1, 2]  # the hand-over's descriptor closed once read


@pytest.mark.parametrize("where", ["args", "command"])
def test_a_credential_on_a_servers_command_line_is_refused(where, secrets):
    from engines import load_agent

    entry = mcp_servers.command("env")
    entry = (
        {**entry, "args": [*entry["args"], "--token", "${SECRET_X}"]}
        if where == "args"
        else {**entry, "command": "${SECRET_X}"}
    )
    with pytest.raises(CheckError, match=r"command line passes \$\{SECRET_X\}.*pass it in the server's env"):
        load_agent(agent(mcp_config={"mcpServers": {"holder": entry}}, mcp_servers=["holder"]))
