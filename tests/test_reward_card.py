"""The Reward card's pure helpers: the registry built from the worker's reward catalog, the block that
shows what each reward received and returned, and factory arguments in the API's reward text."""

from __future__ import annotations

import re

from aworld_gui.rendering.i18n import localize
from aworld_gui.core import inputs as inp
from aworld_gui.tabs import reward_card


def test_the_registry_lists_the_catalog_with_factories_and_missing_packages():
    catalog = {
        "rewards": {"exact_match": "1.0 when equal"},
        "reward_catalog": [
            {
                "key": "exact_match",
                "label": "exact_match",
                "source": "aworld",
                "description": "1.0 when equal",
                "requires": [],
                "missing": [],
                "factory": False,
                "args": {},
                "data_sources": [],
            },
            {
                "key": "trl.rewards:accuracy_reward",
                "label": "TRL · accuracy_reward",
                "source": "trl 1.16.0",
                "description": "math check",
                "requires": ["math-verify"],
                "missing": ["math-verify"],
                "factory": False,
                "args": {},
                "data_sources": [],
            },
            {
                "key": "trl.rewards:get_soft_overlong_punishment",
                "label": "TRL · get_soft_overlong_punishment",
                "source": "trl 1.16.0",
                "description": "penalizes long",
                "requires": [],
                "missing": [],
                "factory": True,
                "args": {"max_completion_len": 512, "soft_punish_cache": 64},
                "data_sources": [],
            },
            {
                "key": "verl.utils.reward_score.gsm8k:compute_score",
                "label": "verl · gsm8k",
                "source": "verl 0.9.1",
                "description": "gsm8k",
                "requires": [],
                "missing": [],
                "factory": False,
                "args": {},
                "data_sources": ["openai/gsm8k"],
            },
            {"key": "error:x", "label": "x unavailable", "error": True},
        ],
    }
    docs = reward_card.registry(catalog)
    assert list(docs) == [
        "exact_match",
        "trl.rewards:accuracy_reward",
        "trl.rewards:get_soft_overlong_punishment(max_completion_len=512, soft_punish_cache=64)",
        "verl.utils.reward_score.gsm8k:compute_score",
    ]
    assert docs["trl.rewards:accuracy_reward"][0] == "TRL · accuracy_reward (not installed: math-verify)"
    assert "needs: pip install math-verify" in docs["trl.rewards:accuracy_reward"][1]
    assert "[verl 0.9.1]" in docs["verl.utils.reward_score.gsm8k:compute_score"][1]
    assert "data_source: openai/gsm8k" in docs["verl.utils.reward_score.gsm8k:compute_score"][1]
    assert reward_card.registry({"rewards": {"exact_match": "d"}}) == {"exact_match": ("exact_match", "d")}


def test_the_calls_block_shows_arguments_and_returns_escaped():
    result = {
        "status": "ok",
        "details": {
            "completion_template": "<think>\nr\n</think>\n{answer}",
            "calls": {
                "think_format_reward": {
                    "style": "TRL",
                    "args": {"completions": "list[6] of list[1] of {role, content}"},
                    "returned": ["[1.0, 0.0]"],
                    "logged": {"log_metric x": "1.0"},
                },
                "_logged": {"x": "1.0"},
            },
        },
    }
    html = localize(reward_card.calls_html(result), "en")  # as the English page reads it
    assert 'data-term="think_format_reward"' in html and "TRL convention" in html
    shapes = re.sub(r"</?code>", "", html)  # a shape's types and keys as code, its "of" in the page's language
    assert "list[6] of list[1] of {role, content}" in shapes and "[1.0, 0.0]" in html
    assert "&lt;think&gt;" in html and "<think>" not in html  # user-visible text is escaped
    assert "log_metric x" in html
    assert "appears here after the check" in localize(reward_card.calls_html(None), "en")


def test_reward_text_keeps_a_factorys_arguments_together():
    text = "trl.rewards:get_soft_overlong_punishment(max_completion_len=8, soft_punish_cache=4)@0.5, exact_match"
    assert inp.parse_reward_text(text) == [
        {"ref": "trl.rewards:get_soft_overlong_punishment(max_completion_len=8, soft_punish_cache=4)", "weight": 0.5},
        {"name": "exact_match", "weight": 1.0},
    ]
    assert inp.with_args("m:f", {"a": 1, "b": "x"}) == "m:f(a=1, b='x')"
