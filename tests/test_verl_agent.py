"""The agent as verl sees it: a tool-using agent's chat template must render its tools, and the prompt
length verl is given (data.max_prompt_length) must hold the rendered prompt *with* the tool schemas.

Token counts here are taken the plain way (render the text, then encode it), independently of how the
processor counts them."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from engines.core.modules import Modules
from engines.results.check_result import CheckError
from engines.core.checks import check_all
from engines.verl import VerlProcessor

ROOT = Path(__file__).resolve().parent.parent
CALC_MODEL = ROOT / "assets/models/tiny-calc"
CALC_TOOLS = [f"{ROOT}/assets/tools/calculator.py:add", f"{ROOT}/assets/tools/calculator.py:multiply"]
TEMPLATE_WARNING = "the model's chat template ignores tools"
#: ChatML without a tools branch: renders the conversation, drops whatever ``tools`` it is given
TOOL_BLIND_TEMPLATE = (
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + "
    "'<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}"
)
#: a template that refuses a tool list outright
TOOL_REFUSING_TEMPLATE = (
    "{%- if tools %}{{ raise_exception('this template takes no tools') }}{%- endif %}" + TOOL_BLIND_TEMPLATE
)


@pytest.fixture(scope="module")
def calc_data(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("calc")
    rows = [{"prompt": f"What is {a} + {b}?", "answer": str(a + b)} for a in range(4) for b in range(4)]
    pd.DataFrame(rows).to_json(folder / "calc.jsonl", orient="records", lines=True)
    return str(folder / "calc.jsonl")


def model_with_template(folder: Path, template: str) -> str:
    """tiny-calc's tokenizer and config with another chat template (the weights are linked, never loaded)."""
    folder.mkdir(parents=True)
    for name in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(CALC_MODEL / name, folder / name)
    (folder / "model.safetensors").symlink_to(CALC_MODEL / "model.safetensors")
    (folder / "chat_template.jinja").write_text(template)
    return str(folder)


def calc_agent(model: str | Path = CALC_MODEL, tools: list[str] | None = None) -> dict:
    return {
        "name": "calc-agent",
        "model": str(model),
        "system_prompt": "You are a calculator. Use the tools.",
        "max_tokens": 64,
        "max_steps": 3,
        "tools": CALC_TOOLS if tools is None else tools,
    }


def agent_check(p: VerlProcessor):
    return next(r for r in p.check_results if r.module == "agent")


def config_check(p: VerlProcessor):
    return next(r for r in p.check_results if r.module == "config")


def composed(tmp_path, data, agent: dict, config: dict) -> VerlProcessor:
    p = VerlProcessor(str(tmp_path / "runs"))
    p.check_agent(agent)
    p.check_dataset(data)
    p.check_reward("exact_match")
    p.check_config(config)
    return p


def prompt_tokens(model: str | Path, messages: list[dict], tools: list[dict] | None = None) -> int:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model))
    text = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
    return len(tok(text, add_special_tokens=False)["input_ids"])


def longest_training_prompt(p: VerlProcessor, tools: list[dict] | None) -> int:
    """Tokens of the longest prompt of the verl parquet the run will train on."""
    import pyarrow.parquet as pq

    prompts = pq.read_table(str(p.parquets["train"]), columns=["prompt"]).column("prompt").to_pylist()
    return max(prompt_tokens(p.agent_spec.model, messages, tools) for messages in prompts)


# -- the chat template and the tools ------------------------------------------------------------------
def test_a_template_that_ignores_tools_warns_on_the_agent_check(tmp_path, calc_data):
    model = model_with_template(tmp_path / "tool-blind", TOOL_BLIND_TEMPLATE)
    p = VerlProcessor(str(tmp_path / "runs"))
    spec = p.check_agent(calc_agent(model))
    assert spec.tool_schemas and any(TEMPLATE_WARNING in w for w in spec.warnings)
    result = agent_check(p)
    assert result.status == "warning" and any(TEMPLATE_WARNING in w for w in result.warnings)
    # what the studio and the CLI show: check_all's agent result, as a dict
    results = {
        r.module: r.to_dict()
        for r in check_all(
            Modules(calc_agent(model), calc_data, None, "exact_match", {"batch_size": 4}, train_engine_name="verl"),
            run_path=str(tmp_path / "check"),
        )
    }
    assert results["agent"]["status"] == "warning"
    assert any(TEMPLATE_WARNING in w for w in results["agent"]["warnings"]), results["agent"]


def test_a_tool_calling_template_gets_no_template_warning(tmp_path):
    p = VerlProcessor(str(tmp_path / "runs"))
    spec = p.check_agent(calc_agent())
    assert [s["function"]["name"] for s in spec.tool_schemas] == ["add", "multiply"]
    assert not any(TEMPLATE_WARNING in w for w in agent_check(p).warnings)


def test_a_template_that_cannot_render_tools_is_an_agent_error(tmp_path):
    model = model_with_template(tmp_path / "tool-refusing", TOOL_REFUSING_TEMPLATE)
    p = VerlProcessor(str(tmp_path / "runs"))
    with pytest.raises(CheckError) as err:
        p.check_agent(calc_agent(model))
    assert err.value.module == "agent"
    assert "cannot render tools" in str(err.value) and "this template takes no tools" in str(err.value)
    assert agent_check(p).status == "error"


# -- prompt length ------------------------------------------------------------------------------------
def test_a_prompt_longer_than_max_prompt_length_is_flagged(tmp_path, calc_data):
    agent = calc_agent(tools=[])
    probe = composed(tmp_path / "probe", calc_data, agent, {"batch_size": 4})
    longest = longest_training_prompt(probe, None)
    assert longest > 10  # the tokens of a rendered chat prompt, not the keys of a BatchEncoding

    # verl's default data.truncation=error stops the run on that row: an error before launch, with the row
    with pytest.raises(CheckError) as err:
        composed(tmp_path / "error", calc_data, agent, {"batch_size": 4, "max_prompt_length": longest - 1})
    assert f"has {longest} tokens but data.max_prompt_length={longest - 1}: verl stops on it" in str(err.value)
    assert "line 1 of calc.jsonl" in str(err.value)
    # with truncation the row is cut, which the user is told
    p = composed(
        tmp_path / "left",
        calc_data,
        agent,
        {"batch_size": 4, "max_prompt_length": longest - 1, "data": {"truncation": "left"}},
    )
    assert OmegaConf.load(p.config_path).data.max_prompt_length == longest - 1  # the user's value is kept
    assert f"has {longest} tokens but data.max_prompt_length={longest - 1}: verl truncates it" in " | ".join(
        config_check(p).warnings
    )


def test_tool_schemas_count_toward_the_prompt_length(tmp_path, calc_data):
    probe = composed(tmp_path / "probe", calc_data, calc_agent(), {"batch_size": 4})
    schemas = probe.agent_spec.tool_schemas
    bare, with_tools = longest_training_prompt(probe, None), longest_training_prompt(probe, schemas)
    assert with_tools > bare + 50  # two tool signatures in the system message

    # room for the bare prompt but not for the tool list verl's tool agent loop renders with it
    with pytest.raises(CheckError) as err:
        composed(tmp_path / "bare", calc_data, calc_agent(), {"batch_size": 4, "max_prompt_length": bare})
    assert f"has {with_tools} tokens but data.max_prompt_length={bare}" in str(err.value)

    p = composed(tmp_path / "fits", calc_data, calc_agent(), {"batch_size": 4, "max_prompt_length": with_tools})
    assert not any("tokens but data.max_prompt_length" in w for w in config_check(p).warnings)


def test_the_filled_max_prompt_length_has_room_for_the_tool_schemas(tmp_path, calc_data):
    """A tool with a long description: bare prompts fit verl's default max_prompt_length, prompts with the
    tool list do not, so the studio raises it (within the model's context)."""
    tool = tmp_path / "lookup.py"
    description = " ".join(f"Entry {i} of the table is the sum of its two operands." for i in range(14))
    tool.write_text(
        f'def lookup(a: int, b: int) -> int:\n    """{description}\n\n    Args:\n'
        '        a: The first number.\n        b: The second number.\n    """\n    return a + b\n'
    )
    agent = calc_agent(tools=[f"{tool}:lookup"])
    p = composed(tmp_path, calc_data, agent, {"batch_size": 4})
    cfg = OmegaConf.load(p.config_path)
    bare = longest_training_prompt(p, None)
    with_tools = longest_training_prompt(p, p.agent_spec.tool_schemas)
    default = 512  # verl's data.max_prompt_length (ppo_trainer.yaml)
    assert (
        bare
        < default
        < with_tools
        <= json.loads((CALC_MODEL / "config.json").read_text())["max_position_embeddings"]
        - cfg.data.max_response_length
    )
    assert with_tools <= cfg.data.max_prompt_length
    assert config_check(p).details["filled"]["data.max_prompt_length"] == cfg.data.max_prompt_length
    assert not any("the longest prompt has" in w for w in config_check(p).warnings)
