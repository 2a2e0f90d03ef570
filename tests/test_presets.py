"""Presets: the shipped ones check green as they are; a saved setup loads back the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from aworld_gui.core import inputs as inp
from aworld_gui.core import presets
from engines.core.checks import check_all


@pytest.mark.parametrize("name", ["letters-grpo", "calc-tools", "calc-mcp"])
def test_a_shipped_preset_checks_green(name, tmp_path):
    found = presets.list_presets(tmp_path)[name]
    assert found["kind"] == "shipped" and found["description"]
    si = presets.load_preset(found["path"])
    for path in (si.agent, si.train, si.test, *(r["ref"].rpartition(":")[0] for r in si.rewards)):
        assert Path(path).is_absolute() and Path(path).exists(), path
    results = check_all(si.modules())
    assert {r.module: r.status for r in results if r.status == "error"} == {}, [r.message for r in results]


def test_the_letters_preset_is_the_demo(tmp_path):
    si = presets.load_preset(presets.list_presets(tmp_path)["letters-grpo"]["path"])
    demo = inp.demo_inputs()
    assert (si.agent, si.train, si.test, si.engine) == (
        str(Path(demo.agent).resolve()),
        str(Path(demo.train).resolve()),
        str(Path(demo.test).resolve()),
        demo.engine,
    )
    assert (
        si.config_text == demo.config_text
        and si.rewards[0]["ref"] == str(Path(inp.DEMO_REWARD.rpartition(":")[0]).resolve()) + ":letter_reward"
    )


def test_a_saved_setup_loads_back_the_same(tmp_path):
    si = presets.load_preset(presets.list_presets(tmp_path)["calc-tools"]["path"])
    si.rewards.append({"name": "exact_match", "weight": 0.5})
    si.columns = {"prompt": "prompt"}
    path = presets.save_preset(tmp_path, "my calc v2", si)
    listed = presets.list_presets(tmp_path)
    assert listed["my calc v2"]["kind"] == "saved" and listed["my calc v2"]["path"] == str(path)
    again = presets.load_preset(path)
    assert again.to_dict() == si.to_dict()
    with pytest.raises(ValueError, match="shipped preset"):
        presets.save_preset(tmp_path, "letters-grpo", si)
    for bad in ("", "../escape", "a/b", "x" * 80):
        with pytest.raises(ValueError, match="preset name"):
            presets.save_preset(tmp_path, bad, si)
