"""The effective config → TRL's own dataclasses: ``GRPOConfig`` / ``SFTConfig`` keyword arguments
(the engine's keys mapped to TRL's names, then every TRL key the user set, under its own name) and
``ModelConfig`` (model and PEFT settings). Constructing them is the validation: TRL's
``__post_init__`` errors come back as a CheckError naming the key they are about.
"""

from __future__ import annotations

import re
from typing import Any

from ..results.check_result import CheckError
from .config import ENGINE_KEYS
from .settings import GRPO, MODEL_CONFIG, TRAINER_CONFIG, trl_fields

#: ModelConfig settings that become ``from_pretrained`` keyword arguments (TRL's scripts do the same)
MODEL_INIT_KEYS = {"dtype": "dtype", "attn_implementation": "attn_implementation", "model_revision": "revision"}


def device_flags(cfg: dict[str, Any]) -> tuple[bool, bool, bool]:
    """(use_cpu, bf16, fp16) from ``device`` and ``precision`` (and TRL's own flags when set)."""
    from ..fit import gpus

    cuda = gpus.cuda_available() and cfg["device"] != "cpu"  # never CUDA itself here: checks run in forks
    precision = cfg["precision"]
    bf16 = precision == "bf16" or (precision == "auto" and cuda and gpus.bf16_supported())
    return not cuda, bf16, precision == "fp16"


def user_settings(cfg: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(TRL trainer-config keys, ModelConfig keys) the user set under TRL's names."""
    fields = trl_fields(cfg["mode"])
    trl, model = {}, {}
    for key, value in cfg.items():
        if key in ENGINE_KEYS or key not in fields:
            continue
        (model if fields[key].source == MODEL_CONFIG else trl)[key] = value
    return trl, model


def trainer_kwargs(
    cfg: dict[str, Any],
    output_dir: str,
    *,
    reward_weights: list[float] | None = None,
    tool_iterations: int | None = None,
    report_to: Any = "none",
    run_name: str | None = None,
) -> dict[str, Any]:
    """Keyword arguments of the mode's TRL config: the engine's keys under TRL's names, then the
    user's TRL keys (which win: they are what the user wrote)."""
    use_cpu, bf16, fp16 = device_flags(cfg)
    kw: dict[str, Any] = dict(
        output_dir=output_dir,
        max_steps=cfg["max_steps"],
        learning_rate=cfg["learning_rate"],
        lr_scheduler_type=cfg["lr_scheduler_type"],
        warmup_steps=cfg["warmup_steps"],
        gradient_accumulation_steps=cfg["gradient_accumulation_steps"],
        weight_decay=cfg["weight_decay"],
        max_grad_norm=cfg["max_grad_norm"],
        seed=cfg["seed"],
        use_cpu=use_cpu,
        bf16=bf16,
        fp16=fp16,
        gradient_checkpointing=cfg["gradient_checkpointing"],
        logging_steps=cfg["logging_steps"],
        save_strategy="steps",
        save_steps=cfg["save_steps"],
        save_total_limit=cfg["save_total_limit"],
        report_to=report_to,
        disable_tqdm=True,
        dataloader_num_workers=0,
        ddp_find_unused_parameters=False,  # every weight (or adapter) gets a gradient: skip DDP's extra graph walk
    )
    if run_name:
        kw["run_name"] = run_name
    trl, model = user_settings(cfg)
    if cfg["mode"] == GRPO:
        kw.update(
            per_device_train_batch_size=(cfg["prompts_per_step"] or 1) * cfg["num_generations"],
            num_generations=cfg["num_generations"],
            max_completion_length=cfg["max_completion_length"],
            temperature=cfg["temperature"],
            top_p=cfg["top_p"],
            beta=cfg["beta"],
            disable_dropout=cfg["disable_dropout"],
            mask_truncated_completions=cfg["mask_truncated_completions"],
        )
        if reward_weights is not None:
            kw["reward_weights"] = reward_weights
        if tool_iterations is not None:
            kw["max_tool_calling_iterations"] = tool_iterations
    else:
        kw.update(per_device_train_batch_size=cfg["prompts_per_step"] or 1, completion_only_loss=True)
    kw.update(trl)
    init = dict(kw.get("model_init_kwargs") or {}) if isinstance(kw.get("model_init_kwargs"), dict) else None
    extra = {MODEL_INIT_KEYS[k]: v for k, v in model.items() if k in MODEL_INIT_KEYS and v is not None}
    if extra:
        if init is None and kw.get("model_init_kwargs") is not None:
            raise CheckError(
                "config",
                "`model_init_kwargs` must be a mapping when dtype / attn_implementation / model_revision are set",
                "write model_init_kwargs as a mapping, or drop it",
            )
        kw["model_init_kwargs"] = {**extra, **(init or {})}
    return kw


def _keys_named(message: str, keys: list[str]) -> list[str]:
    return [
        k
        for k in sorted(keys, key=len, reverse=True)
        if re.search(rf"(?<![A-Za-z_]){re.escape(k)}(?![A-Za-z_])", message)
    ]


def _rejected(cls_name: str, e: Exception, user_keys: set[str], all_keys: list[str]) -> CheckError:
    text = " ".join(str(e).split())
    if isinstance(e, ImportError):
        return CheckError(
            "config",
            f"{cls_name} needs a package that is not installed: {text[:400]}",
            "install it (pip install ...) or drop the setting that needs it",
        )
    named = _keys_named(text, all_keys)
    mine = [k for k in named if k in user_keys]
    key = (mine or named or [None])[0]
    hint = f"fix `{key}`" if key else "fix the settings it names"
    if key in ("per_device_train_batch_size", "num_generations", "generation_batch_size", "steps_per_generation"):
        hint += (
            " — per_device_train_batch_size (= prompts_per_step × num_generations) × num_processes × "
            "steps_per_generation must be a multiple of num_generations"
        )
    return CheckError("config", f"TRL's {cls_name} rejected the settings: {text[:600]}", hint, key=key)


def trainer_config(cfg: dict[str, Any], output_dir: str, world_size: int = 1, **kw: Any):
    """TRL's ``GRPOConfig`` / ``SFTConfig`` for ``cfg`` (the validation is its construction).

    ``world_size``: the processes the run will have. A check runs in one process, where TRL would
    size GRPO's generation batch for one; the batch the run will have is then passed explicitly."""
    import trl

    cls_name = TRAINER_CONFIG[cfg["mode"]]
    kwargs = trainer_kwargs(cfg, output_dir, **kw)
    if (
        cfg["mode"] == GRPO
        and world_size > 1
        and kwargs.get("generation_batch_size") is None
        and kwargs.get("steps_per_generation") is None
    ):
        kwargs["generation_batch_size"] = (
            kwargs["per_device_train_batch_size"] * world_size * kwargs.get("gradient_accumulation_steps", 1)
        )
    try:
        return getattr(trl, cls_name)(**kwargs)
    except (ValueError, TypeError, ImportError, AssertionError) as e:
        raise _rejected(cls_name, e, set(cfg) - ENGINE_KEYS | {"prompts_per_step"}, list(kwargs)) from None


def model_config(cfg: dict[str, Any], model_path: str):
    """TRL's ``ModelConfig`` (model, LoRA, quantization settings) for ``cfg``."""
    from trl import ModelConfig

    _, model = user_settings(cfg)
    kwargs = {"model_name_or_path": model_path, "use_peft": cfg["use_peft"], **model}
    try:
        return ModelConfig(**kwargs)
    except (ValueError, TypeError, AssertionError) as e:
        raise _rejected(MODEL_CONFIG, e, set(model) | {"use_peft"}, list(kwargs)) from None
