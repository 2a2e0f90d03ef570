"""Engine configs: YAML/JSON path or dict; defaults; unknown keys with "did you mean"; types, ranges, cross checks."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from engines import CheckError
from engines.inputs.config import ConfigField, load_config_input, validate_config
from engines.trl.config import FIELDS as TRL_FIELDS
from engines.trl.config import cross_check as trl_cross_check

FIELDS = [
    ConfigField("batch_size", int, 8, "prompts per step", min=1, max=4096, main=True),
    ConfigField("num_generations", int, 4, "completions per prompt", min=1, max=64),
    ConfigField("learning_rate", float, 1e-5, "peak learning rate", min=0.0, max=1.0),
    ConfigField("scheduler", str, "constant", choices=("constant", "cosine")),
    ConfigField("bf16", bool, False),
    ConfigField("resume", str, None, nullable=True),
]


def batch_vs_generations(cfg):
    if cfg["batch_size"] % cfg["num_generations"]:
        raise CheckError(
            "config",
            f"batch_size {cfg['batch_size']} is not divisible by num_generations {cfg['num_generations']}",
            "make batch_size a multiple of num_generations",
        )
    return ["few generations per prompt"] if cfg["num_generations"] < 4 else []


def test_defaults_are_filled_and_the_effective_config_returned():
    cfg, warnings = validate_config({"batch_size": 16}, FIELDS, batch_vs_generations)
    assert cfg == {
        "batch_size": 16,
        "num_generations": 4,
        "learning_rate": 1e-5,
        "scheduler": "constant",
        "bf16": False,
        "resume": None,
    }
    assert warnings == []
    assert validate_config(None, FIELDS)[0]["batch_size"] == 8


def test_base_values_sit_between_defaults_and_user_values():
    cfg, _ = validate_config({"batch_size": 4}, FIELDS, base={"batch_size": 2, "learning_rate": 0.5})
    assert (cfg["batch_size"], cfg["learning_rate"]) == (4, 0.5)


def test_yaml_and_json_files(tmp_path):
    (tmp_path / "c.yaml").write_text("batch_size: 32\nlearning_rate: 1e-4  # YAML reads this as text\nbf16: true\n")
    (tmp_path / "c.json").write_text(json.dumps({"batch_size": 12.0, "scheduler": "cosine"}))
    (tmp_path / "empty.yml").write_text("")
    cfg, _ = validate_config(str(tmp_path / "c.yaml"), FIELDS)
    assert (cfg["batch_size"], cfg["learning_rate"], cfg["bf16"]) == (32, 1e-4, True)
    cfg, _ = validate_config(str(tmp_path / "c.json"), FIELDS)
    assert cfg["batch_size"] == 12 and isinstance(cfg["batch_size"], int) and cfg["scheduler"] == "cosine"
    assert validate_config(str(tmp_path / "empty.yml"), FIELDS)[0]["batch_size"] == 8


def test_objects_with_a_dict_form():
    @dataclass
    class Cfg:
        batch_size: int = 64

    assert load_config_input(Cfg()) == {"batch_size": 64}
    with pytest.raises(CheckError, match="config of type int is not supported — pass a YAML/JSON path or a dict"):
        load_config_input(3)


def test_unknown_keys_are_rejected_with_did_you_mean():
    with pytest.raises(CheckError) as err:
        validate_config({"batch_sise": 4}, FIELDS)
    msg = str(err.value)
    assert "unknown config key 'batch_sise'" in msg and 'did you mean "batch_size"?' in msg
    assert "known keys: batch_size, bf16, learning_rate, num_generations, resume, scheduler" in msg
    with pytest.raises(CheckError, match=r"unknown config key 'zzz' — known keys"):  # no close match: no hint
        validate_config({"zzz": 1}, FIELDS)


@pytest.mark.parametrize(
    "cfg, what, fix",
    [
        ({"batch_size": "many"}, "`batch_size` must be int, got 'many' (str)", "e.g. batch_size: 8"),
        ({"batch_size": 2.5}, "`batch_size` must be int, got 2.5 (float)", "e.g. batch_size: 8"),
        ({"batch_size": True}, "`batch_size` must be int, got True", "e.g. batch_size: 8"),
        ({"batch_size": 0}, "`batch_size` = 0 is below its minimum 1", "use a value between 1 and 4096"),
        ({"batch_size": 10_000}, "`batch_size` = 10000 is above its maximum 4096", "use a value between 1 and 4096"),
        ({"learning_rate": float("nan")}, "`learning_rate` = nan is not a finite number", "use a value between"),
        (
            {"scheduler": "cosin"},
            "`scheduler` = 'cosin' is not one of constant, cosine (did you mean \"cosine\"?)",
            "set scheduler to one of: constant, cosine",
        ),
        ({"bf16": "yes"}, "`bf16` must be bool, got 'yes' (str)", "e.g. bf16: false"),
        ({"batch_size": None}, "`batch_size` must not be empty", "set it, e.g. batch_size: 8"),
        (
            {"batch_size": 6},
            "batch_size 6 is not divisible by num_generations 4",
            "make batch_size a multiple of num_generations",
        ),
    ],
)
def test_types_ranges_and_cross_checks(cfg, what, fix):
    with pytest.raises(CheckError) as err:
        validate_config(cfg, FIELDS, batch_vs_generations)
    assert isinstance(err.value, ValueError)
    assert what in str(err.value) and fix in str(err.value)
    assert err.value.result.module == "config" and err.value.result.status == "error"


def test_cross_check_warnings_are_returned():
    cfg, warnings = validate_config({"batch_size": 6, "num_generations": 3}, FIELDS, batch_vs_generations)
    assert cfg["num_generations"] == 3 and warnings == ["few generations per prompt"]


@pytest.mark.parametrize(
    "name, text, what",
    [
        (
            "bad.yaml",
            "batch_size: [1, 2\n",
            "'bad.yaml' is not valid YAML: the '[' opened on line 1, column 13 is not "
            "closed where expected (did not find expected ',' or ']' at line 2",
        ),
        (
            "bad.json",
            '{"batch_size": 1,}',
            "'bad.json' is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 18",
        ),
        ("list.yaml", "- batch_size\n", "'list.yaml' must hold a mapping of settings, not a list"),
    ],
)
def test_malformed_files(tmp_path, name, text, what):
    (tmp_path / name).write_text(text)
    with pytest.raises(CheckError) as err:
        validate_config(str(tmp_path / name), FIELDS)
    assert what in str(err.value)
    assert any(
        fix in str(err.value)
        for fix in ("fix the YAML at the line named", "fix the JSON syntax", "write one `key: value` per line")
    )


def test_missing_file():
    with pytest.raises(CheckError, match="config file 'nowhere.yaml' does not exist — give a YAML or JSON file path"):
        validate_config("nowhere.yaml", FIELDS)


def test_trl_engine_schema():
    cfg, warnings = validate_config({"num_generations": 4, "max_steps": 10}, TRL_FIELDS, trl_cross_check)
    assert cfg["mode"] == "grpo" and cfg["max_steps"] == 10 and cfg["learning_rate"] == 1e-5
    assert any("fewer than 8 generations" in w for w in warnings)
    with pytest.raises(CheckError, match="`num_generations` = 1 is below its minimum 2"):
        validate_config({"num_generations": 1}, TRL_FIELDS, trl_cross_check)
    with pytest.raises(CheckError, match="`precision: bf16` needs a GPU here — use precision: auto or fp32"):
        validate_config({"device": "cpu", "precision": "bf16"}, TRL_FIELDS, trl_cross_check)
    with pytest.raises(CheckError, match="unknown config key 'num_generation' \\(did you mean \"num_generations\""):
        validate_config({"num_generation": 8}, TRL_FIELDS, trl_cross_check)


def test_describe_for_the_studio():
    d = FIELDS[0].describe()
    assert d == {
        "name": "batch_size",
        "type": "int",
        "default": 8,
        "help": "prompts per step",
        "min": 1,
        "max": 4096,
        "choices": None,
        "main": True,
    }
