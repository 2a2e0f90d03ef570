"""The trl engine takes every TRL setting under TRL's own names (GRPOConfig / SFTConfig / ModelConfig),
validated by TRL's own dataclasses; AWorld's form (GRPOConfig keyword arguments plus ``model``) trains
unchanged and its values reach TRL's trainer."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from engines import AgentTrainer, CheckError
from engines.core.prepare import trainer_from_run_dir
from engines.trl.catalog import describe
from engines.trl.config import validate
from engines.trl.settings import GRPO, LATE_CHOICES, OWNED, SFT, trl_fields

ROOT = Path(__file__).resolve().parent.parent
AGENT = str(ROOT / "assets/agents/letters_agent.yaml")
TRAIN = str(ROOT / "assets/datasets/letters_train.jsonl")
REWARD = str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward"

# AWorld's TRL trainer config: GRPOConfig keyword arguments plus `model`
AWORLD_FORM = {
    "model": str(ROOT / "assets/models/tiny-letters"),
    "per_device_train_batch_size": 4,
    "num_generations": 4,
    "loss_type": "dr_grpo",
    "epsilon_high": 0.28,
    "max_steps": 3,
    "learning_rate": 1e-3,
    "save_steps": 3,
    "scale_rewards": "batch",
    "lr_scheduler_type": "constant",
}


def test_aworld_form_trains_and_its_values_reach_trls_trainer(tmp_path):
    # the agent names another model (tiny-calc: 3 layers, 332 tokens); the config's `model` must win
    agent = tmp_path / "agent_on_tiny_calc.yaml"
    agent.write_text(Path(AGENT).read_text().replace("../models/tiny-letters", str(ROOT / "assets/models/tiny-calc")))
    trainer = AgentTrainer(
        str(agent), TRAIN, None, REWARD, dict(AWORLD_FORM), run_path=str(tmp_path / "runs"), train_engine_name="trl"
    )
    assert trainer.train() == "finished"
    processor = trainer.train_processor
    model = processor.trainer.model
    assert model.config.name_or_path == AWORLD_FORM["model"]
    assert (model.config.num_hidden_layers, model.config.vocab_size) == (2, 153)  # tiny-letters', not the agent's
    assert processor.trainer.processing_class.name_or_path == AWORLD_FORM["model"]
    args = processor.trainer.args
    assert type(args).__name__ == "GRPOConfig"
    assert (
        args.per_device_train_batch_size,
        args.num_generations,
        args.loss_type,
        args.epsilon_high,
        args.scale_rewards,
        args.max_steps,
    ) == (4, 4, "dr_grpo", 0.28, "batch", 3)
    assert args.output_dir == str(processor.run.checkpoints_dir)  # the engine's, not TRL's default
    rows = [r for r in processor.run.read_jsonl("metrics.jsonl") if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2, 3]
    # the effective config says how the alias relates: 4 completions per device = 1 prompt × 4 generations
    assert trainer.config["prompts_per_step"] == 1 and trainer.config["per_device_train_batch_size"] == 4
    spec = yaml.safe_load((processor.run.path / "run.yaml").read_text())
    assert spec["config"]["loss_type"] == "dr_grpo" and spec["config"]["model"] == AWORLD_FORM["model"]
    again = trainer_from_run_dir(processor.run.path)  # what the run process rebuilds from run.yaml
    assert again.config == trainer.config


def test_a_misspelled_trl_key_gets_did_you_mean(tmp_path):
    with pytest.raises(CheckError) as err:
        AgentTrainer(
            AGENT,
            TRAIN,
            None,
            REWARD,
            {**AWORLD_FORM, "epsilon_hihg": 0.28, "epsilon_high": None},
            run_path=str(tmp_path),
            train_engine_name="trl",
        )
    assert "unknown config key 'epsilon_hihg' (did you mean \"epsilon_high\"?)" in str(err.value)
    with pytest.raises(
        CheckError,
        match="unknown config key 'per_device_train_batch_sise' \\(did you mean \"per_device_train_batch_size\"\\?\\)",
    ):
        validate({"per_device_train_batch_sise": 4})
    with pytest.raises(CheckError, match='did you mean "prompts_per_step"'):  # our own names too
        validate({"prompts_per_stp": 4})


@pytest.mark.parametrize(
    "key", ["output_dir", "logging_dir", "callbacks", "hub_token", "eval_strategy", "model_name_or_path"]
)
def test_keys_the_engine_owns_are_refused_with_the_reason(key):
    with pytest.raises(CheckError) as err:
        validate({key: "x"})
    assert f"`{key}` is set by the engine: {OWNED[key]}" in str(err.value)
    assert f"remove `{key}` from the config" in str(err.value)


def test_a_key_of_the_other_mode_says_so():
    with pytest.raises(
        CheckError, match="`packing` is a SFTConfig setting, but mode is grpo — remove it, or set mode: sft"
    ):
        validate({"packing": True})
    with pytest.raises(CheckError, match="`epsilon_high` is a GRPOConfig setting, but mode is sft"):
        validate({"mode": "sft", "epsilon_high": 0.2})
    cfg, _ = validate({"mode": "sft", "packing": True, "max_length": 64})
    assert cfg["packing"] is True and cfg["max_length"] == 64


@pytest.mark.parametrize(
    "cfg, what",
    [
        ({"per_device_train_batch_size": "four"}, "`per_device_train_batch_size` must be int (GRPOConfig), got 'four'"),
        ({"loss_type": "drgrpo"}, "`loss_type` = 'drgrpo' is not one of grpo, dr_grpo, dapo"),
        ({"optim": "adamw_8bt"}, 'did you mean "adamw_8bit"?'),
        ({"epsilon_high": True}, "`epsilon_high` must be float | null (GRPOConfig), got True"),
        ({"lora_r": 2.5}, "`lora_r` must be int (ModelConfig), got 2.5"),
    ],
)
def test_values_are_checked_against_trls_field_types(cfg, what):
    with pytest.raises(CheckError) as err:
        validate(cfg)
    assert what in str(err.value)


def test_yaml_text_numbers_and_lists_are_converted():
    cfg, _ = validate({"epsilon_high": "2.8e-1", "lora_target_modules": "q_proj", "per_device_train_batch_size": 16.0})
    assert cfg["epsilon_high"] == 0.28 and cfg["lora_target_modules"] == ["q_proj"]
    assert cfg["per_device_train_batch_size"] == 16 and isinstance(cfg["per_device_train_batch_size"], int)


def test_prompts_per_step_is_an_alias_of_per_device_train_batch_size():
    cfg, _ = validate({"prompts_per_step": 3, "num_generations": 8})
    assert "per_device_train_batch_size" not in cfg and cfg["prompts_per_step"] == 3
    cfg, _ = validate({"per_device_train_batch_size": 16, "num_generations": 8})
    assert cfg["prompts_per_step"] == 2
    cfg, _ = validate({"per_device_train_batch_size": 12, "num_generations": 8})  # not whole prompts per device
    assert cfg["prompts_per_step"] is None
    assert (
        validate({"prompts_per_step": 2, "per_device_train_batch_size": 16, "num_generations": 8})[0][
            "prompts_per_step"
        ]
        == 2
    )
    with pytest.raises(CheckError) as err:
        validate({"prompts_per_step": 2, "per_device_train_batch_size": 4, "num_generations": 4})
    assert (
        "`prompts_per_step: 2` and `per_device_train_batch_size: 4` disagree (per_device_train_batch_size = "
        "prompts_per_step × num_generations: TRL counts completions)" in str(err.value)
    )
    cfg, _ = validate({"mode": "sft", "per_device_train_batch_size": 5})
    assert cfg["prompts_per_step"] == 5
    with pytest.raises(CheckError, match="`device: cpu` and `use_cpu: False` disagree"):
        validate({"device": "cpu", "use_cpu": False})


def test_the_effective_config_validates_to_itself():
    cfg, _ = validate(dict(AWORLD_FORM))
    assert validate(dict(cfg))[0] == cfg


def test_trls_own_dataclass_errors_come_back_with_the_key(tmp_path):
    with pytest.raises(CheckError) as err:
        AgentTrainer(
            AGENT,
            TRAIN,
            None,
            REWARD,
            {**AWORLD_FORM, "per_device_train_batch_size": 6},
            run_path=str(tmp_path),
            train_engine_name="trl",
        )
    msg = str(err.value)
    assert (
        "TRL's GRPOConfig rejected the settings: generation_batch_size (6) must be divisible by "
        "num_generations (4)" in msg
    )
    assert "fix `num_generations`" in msg and "must be a multiple of num_generations" in msg
    assert err.value.result.details["key"] == "num_generations"


def test_late_checked_choices_are_the_ones_trl_documents():
    """TRL checks these values only once training starts; the engine checks them before. If TRL drops
    one, its help text no longer names it and this fails."""
    for (mode, name), values in LATE_CHOICES.items():
        help_text = trl_fields(mode)[name].help
        for v in values:
            assert f"'{v}'" in help_text or f"`{v}`" in help_text, (name, v)


def test_the_catalog_lists_every_trl_field_with_trls_help():
    from trl import GRPOConfig, ModelConfig, SFTConfig

    listed = {d["name"]: d for d in describe()}
    for cls in (GRPOConfig, SFTConfig, ModelConfig):
        for f in dataclasses.fields(cls):
            if f.name in OWNED or not f.init:
                continue
            assert f.name in listed, f.name
            help_text = " ".join(str(f.metadata.get("help", "")).split())
            entry = listed[f.name]
            assert help_text in entry["help"] or help_text == entry.get("trl_help"), f.name
    assert listed["epsilon_high"]["modes"] == [GRPO] and listed["packing"]["modes"] == [SFT]
    assert listed["lora_r"]["group"] == "model" and listed["loss_type"]["modes"] == [GRPO, SFT]
    assert listed["prompts_per_step"]["alias_of"] == "per_device_train_batch_size" and listed["mode"]["main"]
    assert not (set(listed) & set(OWNED))


@pytest.mark.parametrize("recipe", sorted((ROOT / "assets/configs/recipes").glob("*.yaml")), ids=lambda p: p.stem)
def test_the_gpu_recipes_in_the_docs_are_valid_trl_settings(recipe, tmp_path):
    """docs/TRL.md's recipes (a real GPU model; they cannot run here): every key is a TRL or engine setting
    of the right type, and TRL's own GRPOConfig / ModelConfig accept them for a 4-GPU run."""
    from engines.trl import arguments
    from engines.trl.peft_setup import peft_and_quantization

    cfg, _ = validate(str(recipe))
    args = arguments.trainer_config(cfg, str(tmp_path), world_size=4)
    assert args.model_init_kwargs == {"dtype": "bfloat16"} and args.loss_type == "dr_grpo"
    peft_config, _ = peft_and_quantization(arguments.model_config(cfg, cfg["model"]))
    assert (peft_config is not None) == cfg["use_peft"]
