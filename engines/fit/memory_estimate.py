"""Peak memory of a training run, estimated before launch from the model's config alone (the model
is built on PyTorch's ``meta`` device: shapes, no weights), and compared with what this machine has.

Per training process, in bytes:

* **weights** — every parameter at its load precision (4/8-bit for quantized linear layers), plus
  LoRA adapters in fp32;
* **gradients** and **optimizer states** — for the trainable part only (all weights, or the adapters);
  AdamW keeps two states per trainable parameter, 8-bit optimizers a quarter of that; DeepSpeed keeps
  fp32 master weights too; ZeRO / FSDP split them across the processes;
* **reference model** — a second copy of the weights when GRPO's ``beta > 0`` (none with LoRA: TRL
  turns the adapters off instead);
* **generation KV cache** — the generation batch × (prompt + completion tokens) × layers × 2 × KV
  heads × head size (none when vLLM generates: its own pool counts, or it runs elsewhere);
* **logits** and **activations** of the training forward/backward pass;
* **runtime** — what the process holds before any of this: on CPU the Python process with torch,
  transformers, TRL and datasets loaded; on a GPU the CUDA context.

The constants behind the last two parts were fitted on this project's demo runs; docs/TRL.md and
``benchmarks/results/memory_estimate.json`` hold the comparison with measured peaks.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

GB = 1024**3
MB = 1024**2
#: resident memory of a training process on CPU before the model loads (Python, torch, transformers,
#: TRL, datasets, the tokenizer, the check modules); fitted on the demo runs (docs/TRL.md)
CPU_RUNTIME_BYTES = 560 * MB
#: per GPU process: CUDA context, cuBLAS workspaces, allocator slack
GPU_RUNTIME_BYTES = 700 * MB
#: activation bytes per token, per layer, per hidden unit, in units of the compute precision
#: (Korthikanti et al. 2022: 34 bytes at 16 bits → 17 units, attention without a materialized S×S matrix)
ACTIVATION_UNITS = 17
WARN_FRACTION = 0.85

DTYPE_BYTES = {"float32": 4, "fp32": 4, "float": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2}


@dataclass
class ParameterCounts:
    total: int  # every parameter of the base model (tied weights once)
    linear: int  # weights of the linear layers inside the transformer blocks (what 4/8-bit quantizes)
    trainable: int  # parameters that get gradients (all, or the LoRA adapters)
    adapters: int = 0  # LoRA parameters (part of trainable)


@dataclass
class Shape:
    """What the estimate needs to know about a run."""

    hidden: int
    layers: int
    vocab: int
    kv_heads: int
    head_dim: int
    mode: str = "grpo"  # grpo | sft
    weight_bytes: float = 4.0  # per parameter at load precision
    compute_bytes: float = 4.0  # activations: 2 under bf16/fp16 autocast, else the weights'
    quant_bits: int | None = None  # 4 / 8 when bitsandbytes quantizes the linear layers
    optimizer: str = "adamw_torch"
    beta: float = 0.0
    train_batch: int = 1  # sequences per device per micro-batch
    generation_batch: int = 1  # sequences generated per device at once (GRPO)
    prompt_tokens: int = 64
    completion_tokens: int = 256
    gradient_checkpointing: bool = False
    num_processes: int = 1
    shard: str = "ddp"  # ddp | zero1 | zero2 | zero3 | fsdp1 | fsdp2
    device: str = "cpu"  # cpu | cuda
    vllm: str | None = None  # None | colocate | server
    vllm_fraction: float = 0.0  # colocate: share of each GPU vLLM reserves
    gpu_bytes: int | None = None  # total memory of one GPU (for vLLM's share)


@dataclass
class MemoryEstimate:
    parts: dict[str, int]
    per_process: int
    processes: int
    limit: int | None = None
    limit_name: str = ""
    status: str = "ok"  # ok | warning | error
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """What the limit is compared with: one GPU's share, or every process on CPU (same RAM)."""
        return self.per_process * (self.processes if self.limit_name.endswith("RAM") else 1)

    def summary(self) -> str:
        head = f"≈ {self.per_process / GB:.2f} GB peak per process"
        if self.processes > 1 and self.limit_name.endswith("RAM"):
            head += f", {self.total / GB:.2f} GB for {self.processes} processes"
        if self.limit:
            head += f" of {self.limit / GB:.1f} GB {self.limit_name} ({100 * self.total / self.limit:.0f} %)"
        return head

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(
            total=self.total, summary=self.summary(), parts_gb={k: round(v / GB, 3) for k, v in self.parts.items()}
        )
        return d


# -- counting --------------------------------------------------------------------------------------
def count_parameters(model_config, peft_config=None) -> ParameterCounts:
    """Parameter counts of the model described by ``model_config`` (a transformers config), built
    on the meta device (no memory for weights), with ``peft_config``'s adapters when given."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):  # (accelerate's init_empty_weights would leave tied embeddings untied)
        model = AutoModelForCausalLM.from_config(model_config)
        total = sum(p.numel() for p in model.parameters())
        out_emb = model.get_output_embeddings()
        linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear) and m is not out_emb)
        trainable, adapters = total, 0
        if peft_config is not None:
            from peft import get_peft_model

            peft_model = get_peft_model(model, peft_config)
            trainable = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
            adapters = sum(p.numel() for n, p in peft_model.named_parameters() if "lora_" in n)
    return ParameterCounts(total=total, linear=linear, trainable=trainable, adapters=adapters)


def shape_of(model_config, **kw: Any) -> Shape:
    """A :class:`Shape` from a transformers config (text part of multimodal configs) and run settings."""
    cfg = model_config.get_text_config() if hasattr(model_config, "get_text_config") else model_config
    hidden = int(getattr(cfg, "hidden_size", 0) or getattr(cfg, "n_embd", 0) or getattr(cfg, "d_model", 0))
    layers = int(getattr(cfg, "num_hidden_layers", 0) or getattr(cfg, "n_layer", 0) or 1)
    heads = int(getattr(cfg, "num_attention_heads", 0) or getattr(cfg, "n_head", 0) or 1)
    kv_heads = int(getattr(cfg, "num_key_value_heads", None) or heads)
    head_dim = int(getattr(cfg, "head_dim", None) or (hidden // heads if heads else hidden))
    return Shape(
        hidden=hidden,
        layers=layers,
        vocab=int(getattr(cfg, "vocab_size", 0) or 0),
        kv_heads=kv_heads,
        head_dim=head_dim,
        **kw,
    )


def optimizer_bytes(optimizer: str, state_bytes: float) -> float:
    name = optimizer.lower()
    if "8bit" in name:
        return 2.0
    if "adafactor" in name:
        return state_bytes  # factored second moment, no first moment by default: well under Adam's
    if name.startswith("sgd"):
        return 0.0
    if "lion" in name:
        return state_bytes
    return 2 * state_bytes  # Adam/AdamW: first and second moments


# -- the estimate -----------------------------------------------------------------------------------
def estimate(counts: ParameterCounts, s: Shape) -> dict[str, int]:
    """Bytes per training process, by part."""
    n = max(1, s.num_processes)
    lora = counts.adapters > 0
    base_params = counts.total
    if s.quant_bits:
        weights = counts.linear * s.quant_bits / 8 * 1.03 + (base_params - counts.linear) * 2
    else:
        weights = base_params * s.weight_bytes
    weights += counts.adapters * 4
    deepspeed = s.shard.startswith("zero")
    if lora:
        grad_bytes = state_bytes = 4.0
    elif deepspeed:
        grad_bytes, state_bytes = 2.0, 4.0  # bf16 gradients, fp32 states and master weights
    else:
        grad_bytes = state_bytes = s.weight_bytes
    trainable = counts.trainable
    gradients = trainable * grad_bytes
    optimizer = trainable * (optimizer_bytes(s.optimizer, state_bytes) + (4.0 if deepspeed and not lora else 0.0))
    if s.shard in ("zero1", "zero2", "zero3", "fsdp1", "fsdp2"):
        optimizer /= n
    if s.shard in ("zero2", "zero3", "fsdp1", "fsdp2"):
        gradients /= n
    if s.shard in ("zero3", "fsdp1", "fsdp2"):
        weights /= n
    reference = 0.0
    if s.mode == "grpo" and s.beta > 0 and not lora:
        reference = base_params * s.weight_bytes / (n if s.shard in ("zero3", "fsdp1", "fsdp2") else 1)
    kv_bytes = s.compute_bytes if s.device == "cuda" else s.weight_bytes
    kv = 0.0
    if s.mode == "grpo" and s.vllm is None:
        kv = (
            s.generation_batch
            * (s.prompt_tokens + s.completion_tokens)
            * s.layers
            * 2
            * s.kv_heads
            * s.head_dim
            * kv_bytes
        )
    seq = s.prompt_tokens + s.completion_tokens
    scored = s.completion_tokens + 1 if s.mode == "grpo" else seq
    # logits in compute precision, their fp32 log-softmax, and the gradient flowing back through them
    logits = s.train_batch * scored * s.vocab * (2 * s.compute_bytes + 4)
    per_layer = s.train_batch * seq * s.hidden * ACTIVATION_UNITS * s.compute_bytes
    if s.gradient_checkpointing:
        activations = s.train_batch * seq * s.hidden * s.compute_bytes * s.layers + per_layer
    else:
        activations = per_layer * s.layers
    parts = {
        "weights": weights,
        "gradients": gradients,
        "optimizer": optimizer,
        "reference_model": reference,
        "kv_cache": kv,
        "logits": logits,
        "activations": activations,
    }
    if s.vllm == "colocate" and s.gpu_bytes:
        parts["vllm"] = s.vllm_fraction * s.gpu_bytes
    parts["runtime"] = GPU_RUNTIME_BYTES if s.device == "cuda" else CPU_RUNTIME_BYTES
    return {k: int(v) for k, v in parts.items()}


def machine_limit(device: str) -> tuple[int | None, str]:
    """(bytes, what they are): the smallest free memory of the visible GPUs, or the available RAM."""
    if device == "cuda":
        from .gpus import free_memory

        free = free_memory()  # nvidia-smi: never CUDA in this process (checks run in forks)
        if free:
            f, name = min(free)
            return f, f"free on each GPU ({name})"
    import psutil

    return int(psutil.virtual_memory().available), "available RAM"


def judge(
    parts: dict[str, int], processes: int, device: str, limit: tuple[int | None, str] | None = None
) -> MemoryEstimate:
    """Compare with the machine: a warning above 85 % of the limit, an error above it."""
    per_process = sum(parts.values())
    cap, name = limit if limit is not None else machine_limit(device)
    est = MemoryEstimate(parts=parts, per_process=per_process, processes=processes, limit=cap, limit_name=name)
    if cap:
        ratio = est.total / cap
        est.status = "error" if ratio > 1.0 else "warning" if ratio > WARN_FRACTION else "ok"
    biggest = sorted(((v, k) for k, v in parts.items() if k != "runtime"), reverse=True)[:2]
    if est.status != "ok" and biggest:
        est.notes.append("largest parts: " + ", ".join(f"{k} {v / GB:.2f} GB" for v, k in biggest))
    return est
