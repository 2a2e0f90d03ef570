"""The ``trl`` engine's config: its own keys (short, friendly, with defaults tuned for agents) plus
every TRL setting under TRL's own name (see :mod:`engines.trl.settings`).

Friendly keys that are *aliases* of TRL settings (docs/TRL.md says the same):

* ``prompts_per_step`` → ``per_device_train_batch_size``, which TRL counts in *completions*: in GRPO
  ``per_device_train_batch_size = prompts_per_step × num_generations``; in SFT they are equal.
  Give either; both given must agree.
* ``device`` → ``use_cpu`` (``cpu`` ⇔ ``use_cpu: true``); ``precision`` → ``bf16`` / ``fp16``.
* ``eval_steps`` / ``eval_samples`` drive the engine's own evaluation (greedy answers on the test
  set scored with the reward), not TRL's eval loop; ``resume_from_checkpoint`` is passed to
  ``trainer.train()``.

Every other friendly key has TRL's name and meaning (``learning_rate``, ``beta``, ...) but may have a
different default (``FIELDS`` lists them). ``model`` overrides the agent's model (AWorld's form:
GRPOConfig keyword arguments plus ``model``).
"""

from __future__ import annotations

from typing import Any

from ..results.check_result import CheckError
from ..inputs.config import ConfigField, all_problems, load_config_input, validate_config

PRESETS = ("ddp", "zero1", "zero2", "zero3", "fsdp1", "fsdp2")
TRACKER_MODES = ("online", "offline")

FIELDS: list[ConfigField] = [
    ConfigField(
        "mode",
        str,
        "grpo",
        "grpo (reinforcement learning) or sft (supervised fine-tuning)",
        choices=("grpo", "sft"),
        main=True,
    ),
    ConfigField(
        "model",
        str,
        None,
        "a local model folder or a Hugging Face hub id found in the local cache; "
        "overrides the agent's model (AWorld's form)",
        nullable=True,
    ),
    ConfigField("max_steps", int, 100, "optimizer steps to train", min=1, max=10_000_000, main=True),
    ConfigField("learning_rate", float, 1e-5, "peak learning rate", min=0.0, max=1.0, main=True),
    ConfigField(
        "prompts_per_step",
        int,
        4,
        "prompts per device per micro-batch; TRL's per_device_train_batch_size "
        "= prompts_per_step × num_generations in GRPO (TRL counts completions)",
        min=1,
        max=100_000,
        nullable=True,
        main=True,
    ),
    ConfigField(
        "num_generations", int, 8, "GRPO: completions sampled per prompt (the group)", min=2, max=1024, main=True
    ),
    ConfigField("beta", float, 0.0, "GRPO: KL coefficient (0 = no reference model)", min=0.0, max=100.0, main=True),
    ConfigField(
        "max_completion_length",
        int,
        256,
        "tokens per completion (defaults to the agent's max_tokens)",
        min=1,
        max=1_000_000,
        main=True,
    ),
    ConfigField(
        "use_peft",
        bool,
        False,
        "train LoRA adapters instead of every weight (lora_r, lora_alpha, ...: TRL's ModelConfig)",
        main=True,
    ),
    ConfigField(
        "num_processes",
        (int, str),
        1,
        "training processes on this machine, started through `accelerate launch`; auto = one per visible GPU",
        main=True,
    ),
    ConfigField("temperature", float, 1.0, "sampling temperature (defaults to the agent's)", min=0.0, max=5.0),
    ConfigField("top_p", float, 1.0, "nucleus sampling (defaults to the agent's)", min=0.0, max=1.0),
    ConfigField(
        "lr_scheduler_type",
        str,
        "constant",
        "learning-rate schedule",
        choices=(
            "constant",
            "linear",
            "cosine",
            "constant_with_warmup",
            "cosine_with_min_lr",
            "warmup_stable_decay",
            "polynomial",
            "inverse_sqrt",
            "cosine_with_restarts",
        ),
    ),
    ConfigField("warmup_steps", int, 0, "learning-rate warmup steps", min=0, max=10_000_000),
    ConfigField("gradient_accumulation_steps", int, 1, "micro-batches per optimizer step", min=1, max=4096),
    ConfigField("weight_decay", float, 0.0, "AdamW weight decay", min=0.0, max=1.0),
    ConfigField("max_grad_norm", float, 1.0, "gradient clipping", min=0.0, max=1e6),
    ConfigField("seed", int, 42, "random seed", min=0, max=2**31 - 1),
    ConfigField(
        "device", str, "auto", "auto (CUDA if present), cpu or cuda (TRL: use_cpu)", choices=("auto", "cpu", "cuda")
    ),
    ConfigField(
        "precision",
        str,
        "auto",
        "auto (bf16 on a GPU that has it, else fp32), fp32, bf16 or fp16 (TRL: bf16 / fp16)",
        choices=("auto", "fp32", "bf16", "fp16"),
    ),
    ConfigField("gradient_checkpointing", bool, False, "trade compute for memory on large models"),
    ConfigField("logging_steps", int, 1, "log metrics every N steps", min=1, max=1_000_000),
    ConfigField(
        "save_steps", int, 50, "checkpoint every N steps (and always at the end or on stop)", min=1, max=10_000_000
    ),
    ConfigField("save_total_limit", int, 2, "checkpoints kept", min=1, max=1000),
    ConfigField(
        "samples_per_step",
        int,
        2,
        "prompt groups written whole to samples.jsonl per step (each: num_generations rows, with advantages)",
        min=0,
        max=1000,
    ),
    ConfigField(
        "eval_steps",
        int,
        0,
        "score the test set with the reward at step 0, every N steps and at the "
        "end (0 = at step 0 and the end only); the engine's evaluation, not TRL's eval loop",
        min=0,
        max=10_000_000,
    ),
    ConfigField("eval_samples", int, 32, "test prompts scored per evaluation", min=1, max=100_000),
    ConfigField(
        "resume_from_checkpoint", str, None, "a checkpoint folder (of this or another run) to resume", nullable=True
    ),
    ConfigField("disable_dropout", bool, True, "GRPO: turn dropout off (recommended for RL)"),
    ConfigField("mask_truncated_completions", bool, False, "GRPO: no loss on completions cut at the length limit"),
    ConfigField(
        "distributed",
        str,
        "ddp",
        "how several processes share the work: ddp (each holds the model), or "
        "TRL's accelerate presets zero1/zero2/zero3 (DeepSpeed) and fsdp1/fsdp2 (GPUs only)",
        choices=PRESETS,
    ),
    ConfigField(
        "report_to",
        (str, list),
        "tensorboard",
        "trackers: tensorboard (always written to the run directory), wandb, mlflow, swanlab — a name or a list",
    ),
    ConfigField(
        "tracker_project",
        str,
        None,
        "project (wandb, swanlab) or experiment (mlflow) name; default aworld-trainer",
        nullable=True,
    ),
    ConfigField(
        "tracker_mode",
        str,
        "online",
        "online, or offline (wandb/swanlab write locally to sync later; mlflow writes to the run directory)",
        choices=TRACKER_MODES,
    ),
]
ENGINE_KEYS = {f.name for f in FIELDS}

#: friendly key → the TRL setting it stands for (the studio shows this; docs/TRL.md explains each)
ALIASES = {"prompts_per_step": "per_device_train_batch_size", "device": "use_cpu", "precision": "bf16 / fp16"}


def cross_check(cfg: dict[str, Any]) -> list[str]:
    """Rules across the engine's own keys (TRL's dataclasses check their settings later)."""
    warnings: list[str] = []
    if cfg["mode"] == "grpo" and cfg["num_generations"] < 2:
        raise CheckError(
            "config", "`num_generations` must be at least 2 for GRPO", "GRPO compares completions within a group"
        )
    if cfg["mode"] == "grpo" and cfg["num_generations"] < 8:
        warnings.append("fewer than 8 generations per prompt: groups often have zero reward spread (no gradient)")
    if cfg["lr_scheduler_type"] != "constant" and cfg["max_steps"] < 20:
        warnings.append("a decaying schedule over few steps drops the learning rate fast")
    if cfg["device"] == "cuda":
        from ..fit import gpus

        if not gpus.cuda_available():
            raise CheckError("config", "`device: cuda` but no CUDA GPU is visible", "use device: auto or cpu")
    if cfg["precision"] in ("bf16", "fp16") and cfg["device"] == "cpu":
        raise CheckError("config", f"`precision: {cfg['precision']}` needs a GPU here", "use precision: auto or fp32")
    n = cfg.get("num_processes", 1)
    if isinstance(n, str):
        text = n.strip().lower()
        if text == "auto":
            n = "auto"
        elif text.isdigit():
            n = int(text)
        else:
            raise CheckError(
                "config",
                f"`num_processes` = {n!r} is neither a number nor auto",
                "e.g. num_processes: 2, or num_processes: auto (one per visible GPU)",
            )
    if isinstance(n, int) and not 1 <= n <= 1024:
        raise CheckError("config", f"`num_processes` = {n} is out of range", "use a value between 1 and 1024, or auto")
    cfg["num_processes"] = n
    return warnings


def _mode_of(user: dict[str, Any]) -> str:
    mode_field = FIELDS[0]
    mode, _ = validate_config({"mode": user.get("mode", mode_field.default)}, [mode_field])
    return mode["mode"]


def validate(config: Any, base: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """(effective config, warnings). The effective config holds every engine key (defaults filled,
    ``base`` — defaults derived from the agent — under the user's values) and every TRL / ModelConfig
    key the user set, converted to its field's type; validating it again gives it back unchanged."""
    from .settings import classify_key, coerce, trl_fields

    user = load_config_input(config)
    mode = _mode_of(user)
    fields = trl_fields(mode)
    own, theirs = {}, {}
    problems: list[CheckError] = []  # every problem at once (engines/inputs/config.py all_problems)
    for key, value in user.items():
        try:
            if classify_key(str(key), mode, ENGINE_KEYS) == "engine":
                own[key] = value
            else:
                theirs[key] = coerce(fields[key], value)
        except CheckError as e:
            problems.append(e)
    try:
        effective, warnings = validate_config(own, FIELDS, cross_check if not problems else None, base=base)
    except CheckError as e:
        problems.append(e)
    if problems:
        raise all_problems(problems)
    warnings += _half_precision_without_gpu(theirs, effective)
    effective.update(theirs)
    resolve_aliases(effective, set(user))
    return effective, warnings


def _half_precision_without_gpu(theirs: dict[str, Any], own: dict[str, Any]) -> list[str]:
    """TRL's ``fp16: true`` / ``bf16: true`` where no GPU will train (AWorld's TRL engine defaults to
    ``fp16: True``): turned off, with a note, instead of a run that fails at its first step."""
    flags = [f for f in ("fp16", "bf16") if theirs.get(f)]
    if not flags:
        return []
    if own.get("device") != "cpu" and not theirs.get("use_cpu"):
        from ..fit import gpus

        if gpus.cuda_available():
            return []
    for flag in flags:
        theirs[flag] = False
    return [
        f"`{flags[0]}: true` (AWorld form: its TRL engine's default) needs a GPU, and none trains here: "
        f"training in fp32 instead"
    ]


def _disagree(alias: str, alias_value: Any, name: str, value: Any, rule: str) -> CheckError:
    return CheckError(
        "config",
        f"`{alias}: {alias_value}` and `{name}: {value}` disagree ({rule})",
        f"set only one of them (`{alias}` is the engine's alias of TRL's `{name}`)",
    )


def resolve_aliases(cfg: dict[str, Any], given: set[str]) -> None:
    """Make each friendly alias and its TRL setting agree (in place); both given and different → error."""
    group = cfg["num_generations"] if cfg["mode"] == "grpo" else 1
    rule = (
        "per_device_train_batch_size = prompts_per_step × num_generations: TRL counts completions"
        if group > 1
        else "per_device_train_batch_size = prompts_per_step in SFT"
    )
    if "per_device_train_batch_size" in cfg:
        batch = cfg["per_device_train_batch_size"]
        if (
            "prompts_per_step" in given
            and cfg["prompts_per_step"] is not None
            and cfg["prompts_per_step"] * group != batch
        ):
            raise _disagree("prompts_per_step", cfg["prompts_per_step"], "per_device_train_batch_size", batch, rule)
        cfg["prompts_per_step"] = batch // group if batch % group == 0 else None
    elif cfg["prompts_per_step"] is None:
        raise CheckError(
            "config",
            "`prompts_per_step` is empty and `per_device_train_batch_size` is not set",
            "set prompts_per_step (prompts per device per micro-batch) or per_device_train_batch_size",
        )
    if "use_cpu" in cfg:
        if "device" in given and (cfg["device"] == "cpu") != bool(cfg["use_cpu"]) and cfg["device"] != "auto":
            raise _disagree("device", cfg["device"], "use_cpu", cfg["use_cpu"], "device: cpu ⇔ use_cpu: true")
        if cfg["use_cpu"]:
            cfg["device"] = "cpu"
    for flag in ("bf16", "fp16"):
        if cfg.get(flag) is False and "precision" in given and cfg["precision"] == flag:
            raise _disagree("precision", flag, flag, False, f"precision: {flag} ⇔ {flag}: true")
        if cfg.get(flag):
            if "precision" in given and cfg["precision"] not in ("auto", flag):
                raise _disagree("precision", cfg["precision"], flag, True, f"precision: {flag} ⇔ {flag}: true")
            cfg["precision"] = flag
            if cfg["device"] == "cpu":
                raise CheckError("config", f"`{flag}: true` needs a GPU here", f"remove {flag}, or train on a GPU")
    if cfg.get("bf16") and cfg.get("fp16"):
        raise CheckError("config", "`bf16` and `fp16` are both true", "pick one precision")
