"""A config's errors come all at once: an unknown key no longer hides a negative learning rate — through the
trl engine's own check, as the studio and the CLI run it."""

from __future__ import annotations

import pytest

from engines.results.check_result import CheckError
from engines.core.checks import engine_result


def check_config(tmp_path, config):
    cls, _ = engine_result("trl")
    return cls(str(tmp_path)).validate_settings(config)  # what check_config runs first


def test_an_unknown_key_and_a_bad_value_are_both_said(tmp_path):
    with pytest.raises(CheckError) as err:
        check_config(tmp_path, {"learnin_rate": 0.01, "learning_rate": -0.002, "max_steps": 0})
    message = err.value.result.message
    assert message.startswith("3 problems in the config: ")
    assert "unknown config key 'learnin_rate'" in message and 'did you mean "learning_rate"' in message
    assert "`learning_rate` = -0.002 is below its minimum" in message
    assert "`max_steps` = 0 is below its minimum" in message
    assert len(err.value.result.details["problems"]) == 3


def test_one_problem_is_said_as_before(tmp_path):
    with pytest.raises(CheckError) as err:
        check_config(tmp_path, {"learnin_rate": 0.01})
    assert err.value.result.message.startswith("unknown config key 'learnin_rate' (did you mean \"learning_rate\"?)")
    # fixed, the second edit: the config passes
    assert check_config(tmp_path, {"learning_rate": 0.01, "mode": "sft"})[0]["learning_rate"] == 0.01
