"""Agents: YAML path (AWorld multi-agent form and flat form), dict or object; ${ENV}; tools; masked secrets."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from engines.core.modules import Modules
from engines import AgentSpec, CheckError, load_agent
from engines.agents.agent_spec import agent_result
from engines.results.check_result import format_table
from engines.core.checks import check_all
from engines.core.prepare import prepare_run

SECRET = "sk-test-4f9c2a7e1b"

TOOLS = '''
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def no_hints(a, b):
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def no_doc(a: int) -> int:
    return a


def undocumented_args(a: int) -> int:
    """Return a."""
    return a
'''


@pytest.fixture
def model_dir(tmp_path) -> Path:
    d = tmp_path / "models" / "tiny"
    d.mkdir(parents=True)
    return d


def write(path: Path, text: str) -> str:
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_aworld_multi_agent_yaml_with_env_substitution(tmp_path, monkeypatch):
    monkeypatch.setenv("AW_MODEL", "Qwen/Qwen2.5-0.5B-Instruct")
    monkeypatch.setenv("AW_KEY", SECRET)
    monkeypatch.delenv("AW_UNSET", raising=False)
    path = write(
        tmp_path / "team.yaml",
        """
        agents:
          solver:
            system_prompt: Solve it. ${AW_UNSET}
            llm_config:
              llm_model_name: ${AW_MODEL}
              llm_temperature: 0.3
              llm_top_p: ${AW_TOP_P:-0.9}
              llm_max_tokens: 64
              llm_base_url: http://localhost:8000/v1
              llm_api_key: ${AW_KEY}
          critic:
            system_prompt: Criticise.
            llm_config: {llm_model_name: other}
    """,
    )
    spec = load_agent(path)
    assert (spec.name, spec.model, spec.system_prompt) == ("solver", "Qwen/Qwen2.5-0.5B-Instruct", "Solve it. ")
    assert (spec.temperature, spec.top_p, spec.max_tokens) == (0.3, 0.9, 64)
    assert spec.llm_base_url == "http://localhost:8000/v1"
    assert spec.api_key == SECRET  # usable in memory...
    assert spec.to_dict()["api_key"] == "${AW_KEY}"  # ...but written as its reference
    assert any("2 agents defined; training 'solver'" in w and "critic" in w for w in spec.warnings)
    assert any("environment variable(s) not set: AW_UNSET" in w for w in spec.warnings)
    assert spec.source == str(Path(path).resolve())


def test_flat_yaml_resolves_paths_against_its_folder(tmp_path, model_dir):
    (tmp_path / "agents").mkdir()
    (tmp_path / "tools").mkdir()
    write(tmp_path / "tools" / "calc.py", TOOLS)
    path = write(
        tmp_path / "agents" / "agent.yaml",
        """
        name: calc
        model: ../models/tiny
        system_prompt: Use the tool.
        temperature: 0.7
        max_tokens: 32
        tools: [../tools/calc.py:add]
    """,
    )
    spec = load_agent(path)
    assert spec.name == "calc" and spec.model == str(model_dir)
    assert spec.tools == [f"{tmp_path / 'tools' / 'calc.py'}:add"]
    assert spec.max_steps == 3  # tools default to a multi-step agent
    assert spec.tool_schemas[0]["function"]["name"] == "add"
    assert spec.tool_schemas[0]["function"]["parameters"]["properties"]["a"]["type"] == "integer"
    assert spec.tool_callables()[0](2, 3) == 5
    result = agent_result(spec)
    assert result.status == "ok" and "tools: add" in result.message


def test_module_function_tools_and_callables(tmp_path, monkeypatch, model_dir):
    write(tmp_path / "aw_tools_mod.py", TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = load_agent({"model": str(model_dir), "tools": ["aw_tools_mod:add"]})
    assert spec.tools == ["aw_tools_mod:add"]
    import aw_tools_mod

    spec = load_agent({"model": str(model_dir), "tools": [aw_tools_mod.add]})
    assert spec.tools == ["aw_tools_mod:add"]


def test_dict_and_object_agents(model_dir):
    spec = load_agent({"name": "d", "model": str(model_dir), "system_prompt": "Hi", "top_p": 0.5})
    assert (spec.name, spec.model, spec.top_p) == ("d", str(model_dir), 0.5)
    # a single agent in AWorld's shape (llm_config) without the `agents:` wrapper
    spec = load_agent(
        {"name": "s", "llm_config": {"llm_model_name": str(model_dir), "llm_temperature": 0.1}, "system_prompt": "Hi"}
    )
    assert (spec.name, spec.model, spec.temperature) == ("s", str(model_dir), 0.1)

    # an AWorld-style Agent object: name() method, conf.llm_config with llm_* attributes
    llm = SimpleNamespace(llm_model_name=str(model_dir), llm_temperature=0.2, llm_api_key=SECRET)
    obj = SimpleNamespace(name=lambda: "aworld_agent", system_prompt="Be brief.", conf=SimpleNamespace(llm_config=llm))
    spec = load_agent(obj)
    assert (spec.name, spec.model, spec.temperature, spec.system_prompt) == (
        "aworld_agent",
        str(model_dir),
        0.2,
        "Be brief.",
    )
    assert spec.to_dict()["api_key"] == "****"

    again = load_agent(spec)  # an AgentSpec is accepted too
    assert again.to_dict() == spec.to_dict()

    with pytest.raises(CheckError, match="cannot read an agent from a int object") as err:
        load_agent(5)
    assert "pass a YAML path, a dict, or an object" in str(err.value)


def test_an_agent_spec_keeps_its_env_reference(monkeypatch, model_dir):
    monkeypatch.setenv("AW_KEY", SECRET)
    spec = load_agent({"model": str(model_dir), "api_key": "${AW_KEY}"})
    again = load_agent(spec)
    assert again.api_key == SECRET and again.to_dict()["api_key"] == "${AW_KEY}"
    assert not any("written literally" in w for w in again.warnings)


def test_api_keys_never_appear_in_anything_shown_or_written(tmp_path, monkeypatch, demo, capsys):
    monkeypatch.setenv("AW_KEY", SECRET)
    literal = SECRET[::-1]
    env_agent = write(
        tmp_path / "env.yaml",
        f"""
        agents:
          letters:
            system_prompt: Reply with one capital letter.
            llm_config: {{llm_model_name: {demo["model"]}, llm_api_key: "${{AW_KEY}}", max_tokens: 2}}
    """,
    )
    literal_agent = write(
        tmp_path / "literal.yaml",
        f"""
        model: {demo["model"]}
        api_key: {literal}
        temperature: 9
    """,
    )
    spec = load_agent(env_agent)
    shown = [repr(spec), str(spec.to_dict()), str(agent_result(spec)), json.dumps(agent_result(spec).to_dict())]
    assert not any(SECRET in s for s in shown)

    lit = load_agent({"model": demo["model"], "api_key": literal})
    assert lit.to_dict()["api_key"] == "****" and literal not in repr(lit)
    assert any("written literally" in w and "${ENV_VAR}" in w for w in lit.warnings)
    with pytest.raises(CheckError) as err:  # an error about another field does not echo the key
        load_agent(literal_agent)
    assert "`temperature` = 9.0 is out of range" in str(err.value) and literal not in str(err.value)

    # what the checks report and what a prepared run writes
    results = check_all(
        Modules(env_agent, demo["train"], demo["test"], demo["reward"], {"max_steps": 1}, train_engine_name="trl")
    )
    assert results[0].status == "ok", results[0]
    assert SECRET not in format_table(results) and SECRET not in json.dumps([r.to_dict() for r in results])
    run = prepare_run(
        Modules(env_agent, demo["train"], demo["test"], demo["reward"], {"max_steps": 1}, train_engine_name="trl"),
        runs_dir=str(tmp_path / "runs"),
    )
    assert run.read_spec()["agent"]["api_key"] == "${AW_KEY}"
    for f in run.path.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    assert SECRET not in capsys.readouterr().err


def test_max_tokens_is_not_mistaken_for_a_secret():
    spec = AgentSpec(model="m", extra={"max_tokens": 5, "hf_token": "hf_abc", "nested": {"password": "pw"}})
    assert spec.to_dict()["extra"] == {"max_tokens": 5, "hf_token": "****", "nested": {"password": "****"}}


# -- bad agents -----------------------------------------------------------------------------------
def test_malformed_yaml(tmp_path):
    path = write(tmp_path / "bad.yaml", "name: x\nmodel: [unclosed\nsystem_prompt: y\n")
    with pytest.raises(CheckError) as err:
        load_agent(path)
    msg = str(err.value)
    assert "agent file 'bad.yaml' is not valid YAML: the '[' opened on line 2, column 8 is not closed" in msg
    assert "at line 3, column 14" in msg  # where the parser gave up
    assert "fix the YAML at the line named" in msg
    assert isinstance(err.value, ValueError) and err.value.result.status == "error"


@pytest.mark.parametrize(
    "text, what, fix",
    [
        ("", "is empty", "write at least `model:`"),
        ("- a\n- b\n", "must hold a mapping, not a list", "write keys like `name:`"),
        ("name: x\nsystem_prompt: hi\n", "the agent names no model", "set `model:`"),
        ("agents: {}\n", "`agents:` is empty", "define one agent under `agents:`"),
        ("model: ./nowhere\n", "model folder './nowhere' does not exist", "relative paths are resolved against"),
        ("model: m\ntemperature: hot\n", "`temperature` must be a number, got 'hot'", None),
        ("model: m\ntop_p: 2\n", "`top_p` = 2.0 is out of range", "use a value between 0.0 and 1.0"),
        ("model: m\ntools: add\n", "tool 'add' is not a reference", "write 'path/to/tools.py:function'"),
        ("model: m\nllm_config: gpt-4\n", "`llm_config` must be a mapping, not str", "write llm_config: {"),
    ],
)
def test_bad_agent_files(tmp_path, text, what, fix):
    with pytest.raises(CheckError) as err:
        load_agent(write(tmp_path / "agent.yaml", text))
    assert what in str(err.value)
    if fix:
        assert fix in str(err.value)


def test_missing_agent_file_and_folder(tmp_path):
    with pytest.raises(CheckError, match="agent file '.*nope.yaml' does not exist — give the path of an agent YAML"):
        load_agent(str(tmp_path / "nope.yaml"))
    with pytest.raises(CheckError, match="is a folder, not an agent YAML file"):
        load_agent(str(tmp_path))


def test_unknown_keys_are_reported_with_a_hint(model_dir):
    spec = load_agent({"model": str(model_dir), "system_promt": "x"})
    assert any("unknown agent key 'system_promt'" in w and 'did you mean "system_prompt"' in w for w in spec.warnings)


@pytest.mark.parametrize(
    "tool, what, fix",
    [
        ("no_hints", "tool 'no_hints' (", "annotate it, e.g. `a: int`"),
        ("no_doc", "has no docstring", "add a Google-style docstring"),
        ("undocumented_args", "cannot be described to the model", "document every argument under `Args:`"),
        ("missing", "has no attribute 'missing'", None),
    ],
)
def test_bad_tools(tmp_path, model_dir, tool, what, fix):
    write(tmp_path / "tools.py", TOOLS)
    with pytest.raises(CheckError) as err:
        load_agent({"model": str(model_dir), "tools": [f"{tmp_path / 'tools.py'}:{tool}"]})
    assert what in str(err.value)
    if tool == "no_hints":
        assert "has no type hint for parameter 'a'" in str(err.value)
    if fix:
        assert fix in str(err.value)


def test_tool_file_that_fails_to_import(tmp_path, model_dir):
    write(tmp_path / "broken.py", "raise RuntimeError('tool module exploded')\n")
    with pytest.raises(CheckError) as err:
        load_agent({"model": str(model_dir), "tools": [f"{tmp_path / 'broken.py'}:add"]})
    assert "cannot be loaded" in str(err.value) and "RuntimeError: tool module exploded" in str(err.value)


def test_agent_errors_surface_through_check_all_without_raising(tmp_path, demo):
    write(tmp_path / "tools.py", TOOLS)
    agent = write(tmp_path / "a.yaml", yaml.safe_dump({"model": demo["model"], "tools": ["tools.py:no_hints"]}))
    results = check_all(Modules(agent, demo["train"], None, "exact_match", None, train_engine_name="trl"))
    assert [r.module for r in results] == ["agent", "dataset", "reward", "config", "engine"]
    assert results[0].status == "error" and "no type hint for parameter 'a'" in results[0].message
    assert results[1].status in ("ok", "warning")


def test_max_turns_names_the_agents_turns_and_max_steps_is_its_alias():
    from engines.agents.agent_spec import agent_result

    base = {"model": str(Path(__file__).resolve().parent.parent / "assets/models/tiny-letters"), "system_prompt": "x"}
    assert load_agent({**base, "max_turns": 4}).max_steps == 4
    assert load_agent({**base, "max_steps": 5}).max_steps == 5  # AWorld's name for it
    assert load_agent({**base, "max_turns": 2, "max_steps": 2}).max_steps == 2
    with pytest.raises(CheckError, match="`max_turns` \\(2\\) and `max_steps` \\(3\\) disagree"):
        load_agent({**base, "max_turns": 2, "max_steps": 3})
    assert "max turns 4" in agent_result(load_agent({**base, "max_turns": 4})).message
