"""A path a user writes (an agent's ``mcp_config``, an agent file) that is no plain file — a FIFO, ``/proc/kmsg``, a link
to either — is refused at once with a message that says so (issue 41, fifth probe, finding 6: the studio, as root,
read ``mcp_config: /proc/kmsg`` to find the ``${NAME}`` its servers ask for, and the thread blocked for ever).

Each read runs in a thread with a deadline, so a regression fails here instead of hanging the suite."""

from __future__ import annotations

import os

import pytest

from engines.agents.agent_spec import load_agent
from engines.files.user_files import read_user_text
from engines.isolation.user_env import referenced_names, server_names
from engines.results.check_result import CheckError
from testing.letters_demo import MODEL
from testing.waiting import promptly

KMSG = "/proc/kmsg"


def _targets() -> list[str]:
    out = ["fifo", "link-to-fifo"]
    if os.access(KMSG, os.R_OK):  # root here: reading it blocks until the kernel logs something
        out += [KMSG, "link-to-kmsg"]
    return out


@pytest.fixture(params=_targets())
def no_file(request, tmp_path):
    fifo = tmp_path / "servers.json"
    os.mkfifo(fifo)  # nobody ever writes into it: a read waits for ever
    link = tmp_path / "link.json"
    if request.param == KMSG:
        return KMSG
    if request.param.startswith("link-"):
        link.symlink_to(fifo if request.param == "link-to-fifo" else KMSG)
        return str(link)
    return str(fifo)


def test_the_names_an_mcp_config_asks_for_are_read_from_plain_files_only(no_file):
    agent = {"model": MODEL, "api_key": "${ASKED_KEY}", "mcp_config": no_file}
    assert promptly(lambda: referenced_names(agent)) == {"ASKED_KEY"}
    assert promptly(lambda: server_names(agent)) == set()


def test_the_check_says_an_mcp_config_is_no_file(no_file):
    agent = {"name": "a", "model": MODEL, "system_prompt": "Reply.", "mcp_config": no_file}
    with pytest.raises(CheckError, match=r"mcp_config file .* is (a named pipe \(FIFO\)|in /proc)") as e:
        promptly(lambda: load_agent(agent, load_tools=False))
    assert "not read" in str(e.value)


def test_an_agent_file_that_is_no_file_is_refused(no_file):
    with pytest.raises(CheckError, match=r"agent file 'x' is (a named pipe \(FIFO\)|in /proc)"):
        promptly(lambda: read_user_text(no_file, "agent", "agent file 'x'", 1 << 20))


def test_a_plain_mcp_config_is_still_read_through_a_link(tmp_path):
    servers = tmp_path / "servers.json"
    servers.write_text('{"mcpServers": {"calc": {"command": "python", "env": {"T": "${SERVER_KEY}"}}}}')
    link = tmp_path / "link.json"
    link.symlink_to(servers)
    agent = {"model": MODEL, "mcp_config": str(link)}
    assert promptly(lambda: server_names(agent)) == {"SERVER_KEY"}
