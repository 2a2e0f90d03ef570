"""Issue 29, items 6 and 14: the reward text (the studio's field, the API's ``rewards``) is split in one
linear pass and capped in size; weights are bounded; an inline ``{judge: {...}}`` keeps its commas; a NUL
in a config is named as one."""

from __future__ import annotations

import pytest

from aworld_gui.core.inputs import parse_reward_text
from engines.results.check_result import CheckError
from engines.module_args import parse_reward
from engines.rewards.reward_text import MAX_REWARD_TEXT, RewardTextError, split_items
from engines.rewards.spec import entry_weight
from engines.files.yaml_input import load_yaml_text


def test_a_flood_of_commas_is_refused_not_split_for_seconds():
    # the old split looked ahead to the end at every comma: this text took ~30 s in the studio process
    with pytest.raises(RewardTextError, match=r"70,000 characters; at most 65,536"):
        parse_reward_text("," * 70_000)
    with pytest.raises(RewardTextError, match="more than 64 rewards"):
        parse_reward_text("," * 60_000)  # under the size cap: a flood of separators
    with pytest.raises(RewardTextError, match="at most"):
        parse_reward_text("exact_match@1," * 80_000)  # 1.1 MB: refused, not checked for 500 s


def test_items_are_split_outside_brackets_only():
    assert split_items("exact_match@1, r.py:fn(a=1, b=[2, 3])@0.5\nlength_penalty") == [
        "exact_match@1",
        "r.py:fn(a=1, b=[2, 3])@0.5",
        "length_penalty",
    ]
    assert split_items("{judge: {url: 'http://h/v1', model: m,\n prompt: 'a, b'}}@0.5, exact_match") == [
        "{judge: {url: 'http://h/v1', model: m,\n prompt: 'a, b'}}@0.5",
        "exact_match",
    ]
    assert split_items("a)), b") == ["a))", "b"]  # a stray closing bracket changes nothing
    assert split_items("x" * MAX_REWARD_TEXT) == ["x" * MAX_REWARD_TEXT]


def test_an_inline_judge_in_the_api_rewards_field():
    entries = parse_reward_text(
        "exact_match@1, {judge: {url: 'http://h:8000/v1', model: m, prompt: 'Score {completion}'}}@0.5"
    )
    assert entries[0] == {"name": "exact_match", "weight": 1.0}
    assert entries[1] == {
        "judge": {"url": "http://h:8000/v1", "model": "m", "prompt": "Score {completion}"},
        "weight": 0.5,
    }


@pytest.mark.parametrize(
    "text",
    [
        "exact_match@-1e308",
        "exact_match@1e7",
        "exact_match@nan",
        "exact_match@inf",
        "{judge: {url: u, model: m}}@1e300",
    ],
)
def test_a_weight_out_of_range_is_refused_everywhere(text):
    with pytest.raises(ValueError, match="out of range|not a number|must be finite"):
        parse_reward_text(text)
    with pytest.raises(SystemExit, match="out of range|not a number|must be finite"):
        parse_reward([text])


def test_a_weight_out_of_range_in_a_spec_is_refused():
    with pytest.raises(CheckError, match="out of range"):
        entry_weight({"name": "exact_match", "weight": -1e308})
    assert entry_weight({"name": "exact_match", "weight": -2.5}) == -2.5


def test_a_nul_in_a_config_is_named_as_a_nul():
    with pytest.raises(CheckError) as e:
        load_yaml_text("max_steps: 10\nlearning_rate: 0.1\x00\n", module="config", where="config.yaml")
    assert "NUL character (U+0000) at line 2, column 19" in str(e.value) and "tab" not in str(e.value)
    with pytest.raises(CheckError, match="a tab character at line 2"):  # a real tab is still a tab
        load_yaml_text("a:\n\tb: 1\n", module="config", where="config.yaml")


def test_every_text_field_of_the_api_has_a_cap():
    from aworld_gui.web.client_api import TEXT_CAPS, ApiError, _check_text_sizes

    for name, cap in TEXT_CAPS.items():
        _check_text_sizes(**{name: "x" * cap})  # at the cap: taken
        with pytest.raises(ApiError, match=f"`{name}` is {cap + 1:,} characters; at most {cap:,}") as e:
            _check_text_sizes(**{name: "x" * (cap + 1)})
        assert e.value.module == {"rewards": "reward"}.get(name, name)
    with pytest.raises(ApiError, match="must be text"):
        _check_text_sizes(config=["not", "text"])
