"""LoRA and QLoRA through TRL's own helpers: ``ModelConfig`` (``use_peft``, ``lora_r``, ``lora_alpha``,
``lora_dropout``, ``lora_target_modules``, ``lora_task_type``, ``load_in_4bit`` / ``load_in_8bit``, ...)
→ ``trl.get_peft_config`` (a ``peft.LoraConfig``) and ``trl.get_quantization_config`` (a
``BitsAndBytesConfig``), which the trainers take as ``peft_config`` / ``quantization_config``.

:func:`check` says, before anything loads, what cannot work here: PEFT without ``peft``, 4/8-bit
weights without bitsandbytes or without a CUDA GPU, quantized weights without adapters.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from ..results.check_result import CheckError

LORA_KEYS = (
    "lora_r",
    "lora_alpha",
    "lora_dropout",
    "lora_target_modules",
    "lora_target_parameters",
    "lora_modules_to_save",
    "lora_task_type",
    "use_rslora",
    "use_dora",
)
QUANT_KEYS = ("load_in_4bit", "load_in_8bit")
BNB_INSTALL = "pip install bitsandbytes"


def check(cfg: dict[str, Any], cuda: bool) -> list[str]:
    """Raise CheckError for LoRA/QLoRA settings that cannot run on this machine; return warnings."""
    warnings: list[str] = []
    quant = [k for k in QUANT_KEYS if cfg.get(k)]
    if quant:
        key = quant[0]
        bits = "4-bit" if key == "load_in_4bit" else "8-bit"
        if not cuda:
            raise CheckError(
                "config",
                f"`{key}: true` (QLoRA) needs a CUDA GPU: bitsandbytes quantizes the weights "
                f"to {bits} on NVIDIA GPUs, and this machine has none",
                f"drop {key} and train LoRA adapters on full-precision weights (use_peft: true), or "
                "train on a GPU machine",
            )
        if importlib.util.find_spec("bitsandbytes") is None:
            raise CheckError(
                "config",
                f"`{key}: true` needs the bitsandbytes package, which is not installed",
                f"{BNB_INSTALL} (in the environment that trains)",
            )
        if not cfg.get("use_peft"):
            raise CheckError(
                "config",
                f"`{key}: true` freezes the weights in {bits}: only LoRA adapters can train",
                "set use_peft: true (QLoRA)",
            )
    if cfg.get("use_peft"):
        if importlib.util.find_spec("peft") is None:
            raise CheckError(
                "config", "`use_peft: true` needs the peft package, which is not installed", "pip install peft"
            )
    else:
        unused = [k for k in LORA_KEYS if k in cfg]
        if unused:
            warnings.append(
                f"{', '.join(unused)} set but use_peft is false: every weight trains, the LoRA settings are unused"
            )
    return warnings


def peft_and_quantization(model_config) -> tuple[Any, Any]:
    """(``peft_config`` or None, ``quantization_config`` or None) for TRL's trainers."""
    from trl import get_peft_config, get_quantization_config

    return get_peft_config(model_config), get_quantization_config(model_config)


def parameter_counts(model) -> dict[str, int]:
    """Trainable and total parameters of a built model (what the Monitor shows)."""
    trainable = total = 0
    for p in model.parameters():
        n = p.numel()
        if hasattr(p, "ds_numel"):  # DeepSpeed ZeRO-3 keeps a placeholder here
            n = p.ds_numel
        total += n
        if p.requires_grad:
            trainable += n
    return {"trainable_params": trainable, "total_params": total}
