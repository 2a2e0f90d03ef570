"""Issue 29, item 2: a password inside a URL (``http://user:pw@host``) is a secret wherever a secret is
masked: uploads, the agent spec written to run.yaml, the shown and exported run spec, an MCP server's
``env``, and the messages of checks (a judge's url in a /check or CLI error)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aworld_gui.core.upload_secrets import mask_text
from engines.core.modules import Modules
from engines.agents.agent_spec import load_agent
from engines.results.check_result import CheckError, CheckResult
from engines.inference.export import public_spec
from engines.core.checks import check_all
from engines.env_values.secret_values import mask_url_passwords, public_mapping

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "assets" / "models" / "tiny-letters"
PW = "url-pass-6631"


@pytest.mark.parametrize(
    "text, shown",
    [
        (f"http://user:{PW}@host:8000/v1", "http://user:****@host:8000/v1"),
        (f"postgres://u:{PW}@db/name", "postgres://u:****@db/name"),
        (f"see redis://:{PW}@cache:6379 and http://a:{PW}@b", "see redis://:****@cache:6379 and http://a:****@b"),
        ("http://user:${DB_PASSWORD}@host/x", "http://user:${DB_PASSWORD}@host/x"),  # a reference stays
        ("http://host:8080/path@v2", "http://host:8080/path@v2"),  # a port, not a password
        ("http://user@host/x", "http://user@host/x"),  # no password
        ("no url here: a:b@c", "no url here: a:b@c"),
    ],
)
def test_url_passwords_are_masked(text, shown):
    assert mask_url_passwords(text) == shown
    assert mask_url_passwords(shown) == shown  # twice: nothing more


def test_an_upload_keeps_no_url_password_and_keeps_its_lines():
    text = (
        f"name: a\nmodel: m\nllm_base_url: http://user:{PW}@host/v1   # the gateway\n"
        f"mcp_config:\n  mcpServers:\n    db:\n      command: python\n"
        f"      env: {{DATABASE_URL: 'postgres://u:{PW}@h/db'}}\n"
    )
    masked, notes = mask_text(text)
    assert PW not in masked
    assert masked.count("\n") == text.count("\n") and "# the gateway" in masked
    assert notes == ["url password (line 3)", "url password (line 8)"]


def test_the_agent_spec_and_the_exported_run_spec_mask_a_url_password(tmp_path):
    agent = tmp_path / "agent.yaml"
    agent.write_text(f"name: a\nmodel: {MODEL}\nsystem_prompt: Reply.\nllm_base_url: http://user:{PW}@host/v1\n")
    spec = load_agent(str(agent)).to_dict()
    assert spec["llm_base_url"] == "http://user:****@host/v1"
    exported = public_spec(
        {
            "agent": {"llm_base_url": f"http://u:{PW}@h"},
            "config": {"env_vars": {"DATABASE_URL": f"postgres://u:{PW}@h/db"}},
        }
    )
    assert PW not in str(exported)
    assert public_mapping({"DATABASE_URL": f"postgres://u:{PW}@h/db"}) == {"DATABASE_URL": "postgres://u:****@h/db"}


def test_check_messages_never_quote_a_url_password():
    assert PW not in str(CheckError("reward", f"cannot reach http://u:{PW}@h", f"check http://u:{PW}@h"))
    assert (
        PW not in CheckResult("reward", "error", f"at http://u:{PW}@h", warnings=[f"x://a:{PW}@b"]).to_dict().__str__()
    )


def test_a_judge_url_password_is_not_echoed_by_the_reward_check(demo):
    results = check_all(
        Modules(
            agent=demo["agent"],
            train_dataset=demo["train"],
            config=None,
            train_engine_name="trl",
            reward_func=[
                {
                    "judge": {
                        "url": f"http://bob:{PW}@127.0.0.1:9/v1",
                        "model": "m",
                        "prompt": "Score {completion}",
                        "timeout": 2,
                    }
                }
            ],
        )
    )
    reward = next(r for r in results if r.module == "reward")
    assert reward.status == "error" and "http://bob:****@127.0.0.1:9/v1" in reward.message, reward.message
    assert PW not in str([r.to_dict() for r in results])
