"""Checks of a ``trl`` config against this machine that need more than the settings themselves:
vLLM (installed? a GPU? the server reachable?) and the memory estimate of the run."""

from __future__ import annotations

import importlib.util
import socket
from typing import Any

from ..results.check_result import CheckError

VLLM_INSTALL = "pip install 'trl[vllm]'"


def vllm(cfg: dict[str, Any], cuda: bool, world: int) -> list[str]:
    """``use_vllm``: vLLM must be installed and have a GPU; a server must answer (warning)."""
    if cfg["mode"] != "grpo" or not cfg.get("use_vllm"):
        return []
    if importlib.util.find_spec("vllm") is None:
        raise CheckError(
            "config",
            "`use_vllm: true` needs vLLM, which is not installed",
            f"{VLLM_INSTALL} on a Linux machine with a CUDA GPU (vLLM does not install or run on a "
            "CPU-only machine), or drop use_vllm: generation then uses transformers' generate()",
        )
    if not cuda:
        raise CheckError(
            "config", "`use_vllm: true` needs a CUDA GPU: vLLM generates on GPUs only", "drop use_vllm on this machine"
        )
    warnings: list[str] = []
    if cfg.get("vllm_mode", "colocate") == "server" and not cfg.get("vllm_server_base_url"):
        host, port = cfg.get("vllm_server_host", "0.0.0.0"), int(cfg.get("vllm_server_port", 8000))
        try:
            with socket.create_connection(("127.0.0.1" if host == "0.0.0.0" else host, port), timeout=2):
                pass
        except OSError:
            warnings.append(
                f"no vLLM server answers at {host}:{port} yet: start it before launching "
                "(`trl vllm-serve --model <model>` on GPUs the training does not use)"
            )
    return warnings


def _weight_bytes(dtype: Any, model_config) -> float:
    from ..fit.memory_estimate import DTYPE_BYTES

    name = str(dtype or "float32").replace("torch.", "")
    if name == "auto":
        name = str(
            getattr(model_config, "dtype", None) or getattr(model_config, "torch_dtype", None) or "float32"
        ).replace("torch.", "")
    return DTYPE_BYTES.get(name, 4)


def memory(
    cfg: dict[str, Any], args, model_cfg, model_path: str | None, prompt_tokens: int, world: int, cuda: bool
) -> tuple[dict | None, list[str]]:
    """The run's memory estimate (``details["memory"]``) and its warning; a CheckError when it does
    not fit. Never fails the check for its own reasons (an unreadable config → a warning)."""
    from ..fit.disk_estimate import checkpoint_bytes
    from ..fit.memory_estimate import count_parameters, estimate, judge, shape_of
    from .peft_setup import peft_and_quantization

    if not model_path:  # the agent check failed: no model to estimate (and no hub lookup of "None")
        return None, []
    try:
        from transformers import AutoConfig

        # the model was resolved to a local folder (or the local cache) by the agent check: never the network
        mconf = AutoConfig.from_pretrained(model_path, local_files_only=True)
        peft_config, _quant = peft_and_quantization(model_cfg)
        counts = count_parameters(mconf, peft_config)
        weight_bytes = _weight_bytes((args.model_init_kwargs or {}).get("dtype"), mconf)
        compute = 2.0 if cuda and (args.bf16 or args.fp16) else weight_bytes
        grpo = cfg["mode"] == "grpo"
        generation = (getattr(args, "generation_batch_size", None) or args.per_device_train_batch_size) // max(1, world)
        gpu_total = None
        if cuda:
            from ..fit import gpus

            gpu_total = gpus.cuda_devices()[0]["total_memory"]
        shape = shape_of(
            mconf,
            mode=cfg["mode"],
            weight_bytes=weight_bytes,
            compute_bytes=compute,
            quant_bits=4 if cfg.get("load_in_4bit") else 8 if cfg.get("load_in_8bit") else None,
            optimizer=str(getattr(args.optim, "value", args.optim)),
            beta=float(getattr(args, "beta", 0.0) or 0.0),
            train_batch=args.per_device_train_batch_size,
            generation_batch=max(1, generation),
            prompt_tokens=max(1, prompt_tokens),
            completion_tokens=cfg["max_completion_length"],
            gradient_checkpointing=bool(args.gradient_checkpointing),
            num_processes=world,
            shard=cfg["distributed"],
            device="cuda" if cuda else "cpu",
            vllm=getattr(args, "vllm_mode", None) if grpo and getattr(args, "use_vllm", False) else None,
            vllm_fraction=float(getattr(args, "vllm_gpu_memory_utilization", 0.0) or 0.0),
            gpu_bytes=gpu_total,
        )
        result = judge(estimate(counts, shape), world, shape.device)
    except CheckError:
        raise
    except Exception as e:  # noqa: BLE001 - the estimate informs; it must not block a run by itself failing
        return None, [f"memory estimate unavailable: {type(e).__name__}: {str(e)[:200]}"]
    details = result.to_dict()
    details.update(total_params=counts.total, trainable_params=counts.trainable)
    details["checkpoint_bytes"] = checkpoint_bytes(
        counts.total, counts.trainable, counts.adapters, weight_bytes, shape.optimizer
    )
    if result.status == "error":
        raise CheckError(
            "config",
            f"the run would not fit in memory: {result.summary()}; " + "; ".join(result.notes),
            "use_peft: true (LoRA), gradient_checkpointing: true, fewer completions per step "
            "(per_device_train_batch_size) or shorter ones (max_completion_length), dtype: bfloat16, "
            "or share the model across processes (distributed: zero3)",
            memory=details,
        )
    warnings = [f"memory near the limit: {result.summary()}"] if result.status == "warning" else []
    return details, warnings + lora_on_a_tiny_model(counts, peft_config is not None)


#: below this many base parameters an adapter does not carry a task (benchmarks/trl_lora.py, README)
LORA_MIN_BASE_PARAMS = 1_000_000


def lora_on_a_tiny_model(counts, peft: bool) -> list[str]:
    """LoRA on a model too small for it: the letters demo (84k parameters) reached 0.8 in 0 of 3 LoRA runs and in
    3 of 3 fully fine-tuned ones (benchmarks/trl_lora.py). Said before the run, not found out after 700 steps."""
    base = counts.total  # the model's own parameters (the adapters are counted apart)
    if not peft or base >= LORA_MIN_BASE_PARAMS:
        return []
    return [
        f"use_peft: LoRA on a model of {base:,} parameters rarely learns: on the 84k-parameter letters demo, "
        "0 of 3 LoRA runs reached reward 0.8 against 3 of 3 fully fine-tuned (benchmarks/trl_lora.py). "
        "LoRA is for pretrained models of millions of parameters; set use_peft: false to train every weight"
    ]
