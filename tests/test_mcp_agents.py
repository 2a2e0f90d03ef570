"""MCP servers in agent configs: AWorld's mcp_config/mcp_servers (multi-agent and flat, inline or a JSON file),
checked by starting each real server with a time limit and listing its tools; clear errors naming the server;
${ENV} in env and headers; secrets masked everywhere."""

from __future__ import annotations

import contextlib

import importlib.util
import json
import textwrap
import time
from pathlib import Path

import psutil
import pytest
import yaml

from engines.core.modules import Modules
from engines import CheckError, load_agent
from engines.agents.agent_spec import agent_result
from engines.results.check_result import format_table
from engines.core.checks import check_all
from engines.core.prepare import prepare_run
from testing import mcp_servers

ROOT = Path(__file__).resolve().parent.parent
MODEL = str(ROOT / "assets/models/tiny-calc")
MCP_AGENT = str(ROOT / "assets/agents/calc_mcp_agent.yaml")
CALC_SERVER = str(ROOT / "assets/mcp/calculator_server.py")
SECRET = "tok-9f8e7d6c5b4a"


def write(path: Path, text: str) -> str:
    path.write_text(textwrap.dedent(text))
    return str(path)


def python_add():
    spec = importlib.util.spec_from_file_location("calc_tools_for_test", ROOT / "assets/tools/calculator.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.add


def servers_running(marker: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in part for part in p.info["cmdline"] or []):
                out.append(p)
        except psutil.Error:
            continue
    return out


def test_aworld_agent_yaml_with_mcp_passes_check_agent_and_lists_the_servers_tools():
    results = check_all(
        Modules(
            MCP_AGENT,
            str(ROOT / "assets/datasets/calc_train.jsonl"),
            None,
            str(ROOT / "assets/rewards/calc_reward.py") + ":calc_reward",
            {"max_steps": 1},
            train_engine_name="trl",
        )
    )
    agent = results[0]
    assert agent.module == "agent" and agent.status == "ok", agent
    assert "tools: add (calculator)" in agent.message
    details = agent.details
    assert details["tool_servers"] == {"add": "calculator"}
    assert details["mcp_servers"] == [
        {"name": "calculator", "transport": "stdio", "target": f"python {CALC_SERVER}", "tools": ["add"]}
    ]
    # the MCP tool is described to the model exactly as the Python tool it serves (multiply is hidden)
    from transformers.utils import get_json_schema

    assert details["tool_schemas"] == [get_json_schema(python_add())]
    # the dataset check renders the first prompt with the MCP tool in it, through the model's chat template
    assert '"name": "add"' in results[1].details["rendered_prompt"]
    assert not servers_running(CALC_SERVER)  # the check closed the server it started


def test_mcp_tools_are_callables_like_python_tools():
    spec = load_agent(MCP_AGENT)
    (add,) = spec.tool_callables()
    assert add.__name__ == "add" and add.mcp_server == "calculator" and add.mcp_tool == "add"
    import inspect

    sig = inspect.signature(add)
    assert [(p.name, p.annotation, p.kind) for p in sig.parameters.values()] == [
        ("a", int, inspect.Parameter.KEYWORD_ONLY),
        ("b", int, inspect.Parameter.KEYWORD_ONLY),
    ]
    assert sig.return_annotation is int
    assert "Args:\n    a: The first number." in add.__doc__
    from engines.tools.mcp_client import McpToolError, close_default_pool

    try:
        assert add(a=3, b=4) == 7  # a real call to the server
        with pytest.raises(McpToolError, match="Input should be a valid integer"):
            add(a="three", b=4)  # the server's own validation error, as a tool error
        with pytest.raises(TypeError, match="missing a required argument: 'b'"):
            add(a=1)  # checked against the signature, like a Python function
    finally:
        close_default_pool()
    assert not servers_running(CALC_SERVER)


def test_flat_agent_with_a_json_mcp_config_file_and_env_substitution(tmp_path, monkeypatch):
    monkeypatch.setenv("AW_MCP_SECRET", SECRET)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "env": {**mcp_servers.command("env"), "env": {"API_TOKEN": "${AW_MCP_SECRET}", "MODE": "test"}},
                    "unused": {"command": "never-started"},
                }
            }
        )
    )
    agent = write(
        tmp_path / "agent.yaml",
        f"""
        name: env-agent
        model: {MODEL}
        system_prompt: Read variables.
        mcp_config: conf/mcp.json
        mcp_servers: [env]
    """,
    )
    spec = load_agent(agent)
    assert [s["function"]["name"] for s in spec.tool_schemas] == ["read_env"]
    assert spec.max_steps == 3  # tools make a multi-step agent, as Python tools do
    (read_env,) = spec.tool_callables()
    from engines.tools.mcp_client import close_default_pool

    try:
        assert read_env(name="API_TOKEN") == SECRET  # substituted, and it reached the server's environment
        assert read_env(name="MODE") == "test"
    finally:
        close_default_pool()
    d = spec.to_dict()
    assert d["mcp_config"] == {
        "mcpServers": {
            "env": {
                "command": mcp_servers.command("env")["command"],
                "args": mcp_servers.command("env")["args"],
                "env": {"API_TOKEN": "${AW_MCP_SECRET}", "MODE": "test"},
            }
        }
    }
    assert d["mcp_servers"] == ["env"]
    shown = [repr(spec), json.dumps(d), json.dumps(agent_result(spec).to_dict())]
    assert not any(SECRET in s for s in shown)


def test_literal_secrets_are_masked_and_a_masked_secret_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("AW_MCP_SECRET", SECRET)
    agent = {
        "model": MODEL,
        "mcp_servers": ["env"],
        "mcp_config": {
            "mcpServers": {
                "env": {
                    **mcp_servers.command("env"),
                    "env": {"API_TOKEN": SECRET, "OTHER_KEY": "${AW_MCP_SECRET}", "LEVEL": "3"},
                }
            }
        },
    }
    spec = load_agent(agent, load_tools=False)
    env = spec.to_dict()["mcp_config"]["mcpServers"]["env"]["env"]
    assert env == {"API_TOKEN": "****", "OTHER_KEY": "${AW_MCP_SECRET}", "LEVEL": "3"}
    assert any(
        "env variable 'API_TOKEN' holds a secret written literally" in w and "${ENV_VAR}" in w for w in spec.warnings
    )
    assert SECRET not in json.dumps(agent_result(spec).to_dict()) and SECRET not in repr(spec)
    again = load_agent(spec, load_tools=False)  # the same in-memory agent keeps its literal secret
    assert again.mcp.servers[0].env["API_TOKEN"] == SECRET
    with pytest.raises(CheckError) as err:  # what a run.yaml written from it holds
        load_agent(spec.to_dict(), load_tools=False)
    assert "env variable 'API_TOKEN' is masked (****)" in str(err.value)
    assert "write it as ${ENV_VAR}" in str(err.value)


def test_a_prepared_run_writes_no_mcp_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("AW_MCP_SECRET", SECRET)
    agent = write(
        tmp_path / "agent.yaml",
        yaml.safe_dump(
            {
                "agents": {
                    "reader": {
                        "system_prompt": "Read.",
                        "llm_config": {"llm_model_name": MODEL},
                        "mcp_config": {
                            "mcpServers": {
                                "env": {**mcp_servers.command("env"), "env": {"API_TOKEN": "Bearer ${AW_MCP_SECRET}"}}
                            }
                        },
                        "mcp_servers": ["env"],
                    }
                }
            }
        ),
    )
    modules = Modules(
        agent, str(ROOT / "assets/datasets/calc_train.jsonl"), None, "exact_match", {"max_steps": 1}, "trl"
    )
    results = check_all(modules)
    assert results[0].status == "ok", results[0]
    assert SECRET not in format_table(results) and SECRET not in json.dumps([r.to_dict() for r in results])
    run = prepare_run(
        modules,
        runs_dir=str(tmp_path / "runs"),
    )
    written = run.read_spec()["agent"]
    assert written["mcp_config"]["mcpServers"]["env"]["env"] == {"API_TOKEN": "Bearer ${AW_MCP_SECRET}"}
    for f in run.path.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


# -- servers that do not work: clear errors, within the time limit --------------------------------------
def _agent(servers: dict, use: list[str] | None = None, **extra) -> dict:
    return {"model": MODEL, "mcp_config": {"mcpServers": servers}, "mcp_servers": use or list(servers), **extra}


def test_a_server_that_exits_at_once_names_the_server_and_shows_its_stderr():
    t0 = time.monotonic()
    with pytest.raises(CheckError) as err:
        load_agent(_agent({"broken": mcp_servers.command("exit")}))
    msg = str(err.value)
    assert "MCP server 'broken' exited before answering" in msg
    assert "fatal: calculator config missing (CALC_CONFIG is not set)" in msg  # the tail of its stderr
    assert "run the command in a terminal" in msg
    assert time.monotonic() - t0 < 30


def test_a_server_that_hangs_is_an_error_within_its_time_limit():
    t0 = time.monotonic()
    with pytest.raises(CheckError) as err:
        load_agent(_agent({"slow": {**mcp_servers.command("hang"), "startup_timeout": 3}}))
    elapsed = time.monotonic() - t0
    msg = str(err.value)
    assert "MCP server 'slow' did not answer within 3 s" in msg and "starting up slowly..." in msg
    assert "raise its startup_timeout" in msg
    assert elapsed < 3 + 15  # the limit, plus the SDK's bounded shutdown (2 s grace, SIGTERM, 2 s, SIGKILL)
    assert not servers_running(f"{mcp_servers.PATH} hang")  # the hanging server was killed


def test_a_server_that_writes_no_mcp_says_what_it_wrote():
    """Issue 41.7: a stdio server that prints a banner on stdout, an HTTP address that serves a web page: the error
    says what came back, not only that nothing answered within the limit."""
    with pytest.raises(CheckError) as err:
        load_agent(_agent({"chatty": {**mcp_servers.command("chatty"), "startup_timeout": 3}}))
    msg = str(err.value)
    assert "MCP server 'chatty' answered something that is not MCP" in msg, msg
    assert "its stdout began 'Welcome to the calculator v2.1 — listening'" in msg and "log to stderr" in msg
    with _web_page() as url:
        for kind in ("sse", "streamable-http"):
            with pytest.raises(CheckError) as err:
                load_agent(_agent({"page": {"type": kind, "url": url, "startup_timeout": 3}}))
            msg = str(err.value)
            assert "MCP server 'page'" in msg and "a text/html page (HTTP 200)" in msg, msg


@contextlib.contextmanager
def _web_page():
    """An address that serves an HTML page to every GET and POST."""
    import http.server
    import threading

    class Page(http.server.BaseHTTPRequestHandler):
        def _page(self):
            body = b"<html><body>Welcome</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _page

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/sse"
    finally:
        server.shutdown()


def test_an_unknown_server_name_in_mcp_servers_is_an_error_naming_it():
    with pytest.raises(CheckError) as err:
        load_agent(_agent({"calculator": {"command": "python", "args": [CALC_SERVER]}}, use=["calculater"]))
    msg = str(err.value)
    assert "mcp_servers names 'calculater', which mcp_config does not define" in msg
    assert 'did you mean "calculator"' in msg and "servers defined: calculator" in msg


def test_a_missing_command_and_a_server_without_tools():
    with pytest.raises(CheckError, match=r"MCP server 'gone' cannot be started: `/no/such/server`"):
        load_agent(_agent({"gone": {"command": "/no/such/server"}}))
    with pytest.raises(CheckError, match=r"MCP server 'empty' lists no tools") as err:
        load_agent(_agent({"empty": mcp_servers.command("empty")}))
    assert "remove it from mcp_servers" in str(err.value)


def test_an_http_server_that_is_not_there(tmp_path):
    from testing import free_port

    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(CheckError) as err:
        load_agent(_agent({"web": {"type": "streamable-http", "url": url, "startup_timeout": 10}}))
    assert f"MCP server 'web' cannot be reached at {url}" in str(err.value)


def test_an_sse_server_is_listed_and_called():
    with mcp_servers.calculator_over_http("sse") as url:
        spec = load_agent(_agent({"calc": {"type": "sse", "url": url}}))
        assert [s["function"]["name"] for s in spec.tool_schemas] == ["add", "multiply"]
        assert spec.mcp.servers[0].transport == "sse"
        from engines.tools.mcp_client import close_default_pool

        try:
            assert [f(a=6, b=7) for f in spec.tool_callables()] == [13, 42]
        finally:
            close_default_pool()


@pytest.mark.parametrize(
    "mcp, what",
    [
        ({"mcp_servers": ["a"]}, "mcp_servers names ['a'] but the agent has no mcp_config"),
        ({"mcp_config": {"servers": {}}}, "mcp_config must hold an `mcpServers` mapping"),
        ({"mcp_config": {"mcpServers": {"a": {"args": ["x"]}}}}, "MCP server 'a' has neither `command`"),
        ({"mcp_config": {"mcpServers": {"a": {"type": "websocket", "url": "ws://x"}}}}, "unknown type 'websocket'"),
        (
            {"mcp_config": {"mcpServers": {"a": {"type": "sse", "url": "localhost:8080"}}}},
            "`url` must be an http(s) URL",
        ),
        ({"mcp_config": {"mcpServers": {"a": {"command": "x", "timeout": "soon"}}}}, "`timeout` must be a number"),
        ({"mcp_config": {"mcpServers": {"a": {"command": "x", "env": ["A=1"]}}}}, "`env` must be a mapping"),
        ({"mcp_config": "missing.json"}, "mcp_config file 'missing.json' does not exist"),
        (
            {"mcp_config": {"mcpServers": {"a": {"command": "x"}}}, "black_tool_actions": ["x"]},
            "black_tool_actions must map a server name",
        ),
    ],
)
def test_bad_mcp_configs(mcp, what):
    with pytest.raises(CheckError) as err:
        load_agent({"model": MODEL, **mcp}, load_tools=False)
    assert what in str(err.value)


def test_a_bad_json_file_names_the_line(tmp_path):
    (tmp_path / "mcp.json").write_text('{"mcpServers": {\n  "a": {"command": "x",}\n}}')
    with pytest.raises(CheckError, match=r"mcp_config file mcp.json is not valid JSON at line 2"):
        load_agent({"model": MODEL, "mcp_config": str(tmp_path / "mcp.json")}, load_tools=False)


def test_unknown_server_keys_and_disabled_servers_are_reported():
    spec = load_agent(
        _agent(
            {
                "calc": {"command": "python", "args": [CALC_SERVER], "enviroment": {}},
                "off": {"command": "x", "disabled": True},
            },
            use=None,
        )
        | {"mcp_servers": None},
        load_tools=False,
    )
    assert [s.name for s in spec.mcp.servers] == ["calc"]
    assert any("mcp_servers is not set" in w and "(calc)" in w for w in spec.warnings)
    assert any("MCP server 'calc': unknown key 'enviroment'" in w and "ignored" in w for w in spec.warnings)


def test_tool_names_must_be_unique_across_python_tools_and_servers():
    servers = {"calculator": {"command": "python", "args": [CALC_SERVER]}}
    with pytest.raises(CheckError) as err:
        load_agent(_agent(servers, tools=[f"{ROOT}/assets/tools/calculator.py:add"]))
    assert "two tools are named 'add': one from a Python tool, one from MCP server 'calculator'" in str(err.value)
    assert "black_tool_actions" in str(err.value) and "mcp_tool_prefix: true" in str(err.value)
    spec = load_agent(_agent(servers, tools=[f"{ROOT}/assets/tools/calculator.py:add"], mcp_tool_prefix=True))
    assert [s["function"]["name"] for s in spec.tool_schemas] == ["add", "calculator__add", "calculator__multiply"]
    assert spec.tool_servers == {"calculator__add": "calculator", "calculator__multiply": "calculator"}


def test_a_secret_in_a_server_url_is_masked_like_a_header():
    url = f"https://user:{SECRET}@search.example/mcp?api_key={SECRET}&region=eu"
    spec = load_agent(
        {
            "model": MODEL,
            "mcp_config": {"mcpServers": {"search": {"type": "sse", "url": url}}},
            "mcp_servers": ["search"],
        },
        load_tools=False,
    )
    assert spec.mcp.servers[0].url == url  # used as written
    shown = spec.to_dict()["mcp_config"]["mcpServers"]["search"]["url"]
    assert shown == "https://user:****@search.example/mcp?api_key=****&region=eu"
    assert SECRET not in json.dumps(agent_result(spec).to_dict())
    assert any("its url holds a secret written literally" in w for w in spec.warnings)
    with pytest.raises(CheckError, match=r"its url holds a masked secret"):
        load_agent(spec.to_dict(), load_tools=False)


def test_a_secret_in_a_servers_stderr_is_scrubbed_from_the_error(monkeypatch):
    monkeypatch.setenv("AW_MCP_SECRET", SECRET)
    with pytest.raises(CheckError) as err:
        load_agent(_agent({"leaky": {**mcp_servers.command("leak"), "env": {"API_TOKEN": "${AW_MCP_SECRET}"}}}))
    assert "auth failed with token ****" in str(err.value) and SECRET not in str(err.value)
