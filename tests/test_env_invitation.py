"""${NAME} by invitation (engines/env_values/env_invitation.py, issue 41.1): in a process a studio started
(``AWORLD_ENV_INVITED`` set) only the invited names are substituted, and only where secrets and endpoints go; the
variables handed to user code and to MCP servers are the invited ones; without a studio (the CLI, the API) every
name everywhere. The studio's own path (an upload through the page) is in tests/test_secrets.py and the bad-input
corpus (agent-a-variable-in-a-shown-field, agent-an-uninvited-variable-in-the-studio)."""

from __future__ import annotations

import pytest

from engines.results.check_result import CheckError
from engines.agents.agent_spec import load_agent
from engines.env_values.env_invitation import INVITED_ENV
from engines.isolation.user_env import server_values, user_code_env
from testing.letters_demo import MODEL

SECRET = "value-of-the-held-key-0071"


@pytest.fixture
def held(monkeypatch):
    monkeypatch.setenv("HELD_KEY", SECRET)
    monkeypatch.setenv("ASKED_KEY", "asked-value")
    return monkeypatch


def agent(**extra) -> dict:
    return {"name": "a", "model": MODEL, "system_prompt": "Reply.", **extra}


def server(**entry) -> dict:
    return {"mcp_config": {"mcpServers": {"calc": {"command": "python", "args": ["-m", "calc"], **entry}}}}


def test_without_a_studio_every_name_is_substituted_everywhere(held):
    held.delenv(INVITED_ENV, raising=False)
    spec = load_agent(agent(name="${HELD_KEY}", api_key="${HELD_KEY}"), load_tools=False)
    assert spec.name == SECRET and spec.api_key == SECRET


@pytest.mark.parametrize("field", ["name", "system_prompt", "model"])
def test_in_a_studio_a_shown_field_names_no_variable_even_an_invited_one(held, field):
    held.setenv(INVITED_ENV, "HELD_KEY")
    with pytest.raises(CheckError, match=rf"\$\{{HELD_KEY\}} in the agent's `{field}`.*never in text it shows") as e:
        load_agent(agent(**{field: "x ${HELD_KEY}"}), load_tools=False)
    assert SECRET not in str(e.value)


def test_in_a_studio_only_invited_names_are_substituted_where_secrets_go(held):
    held.setenv(INVITED_ENV, "ASKED_KEY")
    assert load_agent(agent(api_key="${ASKED_KEY}"), load_tools=False).api_key == "asked-value"
    for value in ("${HELD_KEY}", "${HELD_KEY:-fallback}", "Bearer ${HELD_KEY}"):
        with pytest.raises(CheckError, match=r"\$\{HELD_KEY\} is not substituted.*--env-allow HELD_KEY") as e:
            load_agent(agent(api_key=value), load_tools=False)
        assert SECRET not in str(e.value) and "fallback" not in str(e.value)


def test_in_a_studio_an_mcp_server_names_variables_in_env_headers_and_url_only(held):
    held.setenv(INVITED_ENV, "ASKED_KEY,HELD_KEY")
    spec = load_agent(agent(**server(env={"TOKEN": "${ASKED_KEY}"})), load_tools=False)
    assert spec.mcp is not None and "calc" in spec.mcp.raw_dict()["mcp_config"]["mcpServers"]
    held.setenv("PLAIN_SETTING", "plain")  # a name that looks like no credential (those are refused on a command line)
    with pytest.raises(CheckError, match=r"\$\{PLAIN_SETTING\} in MCP server 'calc''s `args`"):
        load_agent(agent(**server(args=["--level", "${PLAIN_SETTING}"])), load_tools=False)
    held.setenv(INVITED_ENV, "")
    with pytest.raises(CheckError, match=r"\$\{ASKED_KEY\} is not substituted"):
        load_agent(agent(**server(env={"TOKEN": "${ASKED_KEY}"})), load_tools=False)


def test_in_a_studio_user_code_and_servers_get_only_invited_names(held):
    held.setenv(INVITED_ENV, "ASKED_KEY")
    env = user_code_env(allow=["ASKED_KEY", "HELD_KEY"])
    assert env["ASKED_KEY"] == "asked-value" and "HELD_KEY" not in env
    values = server_values({"mcpServers": {"s": {"env": {"A": "${ASKED_KEY}", "H": "${HELD_KEY}"}}}})
    assert values == {"ASKED_KEY": "asked-value"}
    held.delenv(INVITED_ENV)
    assert user_code_env(allow=["HELD_KEY"])["HELD_KEY"] == SECRET  # the CLI and the API: what is asked for
