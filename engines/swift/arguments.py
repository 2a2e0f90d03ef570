"""The user's settings → ms-swift's command line, under ms-swift's own argument names.

A config holds ms-swift arguments by their own names (``learning_rate``, ``tuner_type``, ``lora_rank``,
``num_generations``, ... — whatever ``swift rlhf``/``swift sft`` accept) plus a few of this project's friendly
keys (:data:`FIELDS`): ``mode`` (grpo → ``swift rlhf --rlhf_type grpo``, sft → ``swift sft``),
``prompts_per_step`` (→ ``per_device_train_batch_size``, which counts completions in GRPO), ``samples_per_step``,
``epochs`` (→ ``num_train_epochs``) and ``env`` (ms-swift's environment variables: ``NPROC_PER_NODE``,
``NNODES``, ... for several GPUs or nodes). Names are checked here against ms-swift's own argument dataclass
(a misspelling gets a "did you mean"); values by ms-swift's own parser, run in its environment; an error it
raises is mapped back to the key that caused it.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..results.check_result import CheckError, did_you_mean
from ..inputs.config import ConfigField

GRPO, SFT = "grpo", "sft"
#: what the engine sets itself: the run directory's files and the plugin
FORCED = {
    "output_dir": "checkpoints go to the run directory's checkpoints/",
    "add_version": "the run directory has fixed paths",
    "dataset": "the dataset check writes it (the train set as ms-swift JSONL)",
    "val_dataset": "the dataset check writes it (the test set)",
    "external_plugins": "the reward check writes the plugin",
    "reward_funcs": "the reward check names them (one ORM per reward term; ms-swift's own as swift:<name> rewards)",
    "reward_weights": "the reward's weights",
    "model": "the agent's model",
    "rlhf_type": "set by mode (grpo)",
    "logging_dir": "TensorBoard events go to the run directory's tensorboard/",
}
#: ms-swift's environment variables for several processes (see docs/SWIFT.md)
ENV_VARS = (
    "NPROC_PER_NODE",
    "NNODES",
    "NODE_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "CUDA_VISIBLE_DEVICES",
    "ASCEND_RT_VISIBLE_DEVICES",
    "USE_HF",
    "MODELSCOPE_CACHE",
    "HF_ENDPOINT",
    "WANDB_API_KEY",
    "PYTORCH_CUDA_ALLOC_CONF",
    "OMP_NUM_THREADS",
)
INT_ENV = ("NPROC_PER_NODE", "NNODES", "NODE_RANK", "MASTER_PORT")

FIELDS: list[ConfigField] = [
    ConfigField(
        "mode", str, GRPO, "grpo (swift rlhf --rlhf_type grpo) or sft (swift sft)", choices=(GRPO, SFT), main=True
    ),
    ConfigField(
        "max_steps",
        int,
        None,
        "optimizer steps (ms-swift's max_steps; empty: num_train_epochs decides)",
        min=1,
        nullable=True,
        main=True,
    ),
    ConfigField(
        "learning_rate",
        float,
        None,
        "peak learning rate (empty: ms-swift's 1e-5 full / 1e-4 LoRA)",
        min=0.0,
        max=1.0,
        nullable=True,
        main=True,
    ),
    ConfigField(
        "prompts_per_step",
        int,
        1,
        "prompts per device and step (per_device_train_batch_size = this × num_generations in GRPO)",
        min=1,
        max=100_000,
        main=True,
    ),
    ConfigField(
        "num_generations",
        int,
        None,
        "GRPO: completions per prompt (ms-swift's default 8)",
        min=2,
        max=1024,
        nullable=True,
        main=True,
    ),
    ConfigField(
        "beta",
        float,
        None,
        "GRPO: KL coefficient (ms-swift's default 0.04)",
        min=0.0,
        max=100.0,
        nullable=True,
        main=True,
    ),
    ConfigField(
        "max_completion_length",
        int,
        None,
        "GRPO: tokens per completion (the agent's max_tokens when empty)",
        min=1,
        nullable=True,
        main=True,
    ),
    ConfigField(
        "tuner_type",
        str,
        "lora",
        "full (fine-tune every weight) or an adapter: lora, adalora, longlora, "
        "llamapro, adapter, vera, boft, fourierft, reft, bone (ms-swift checks the name)",
        main=True,
    ),
    ConfigField(
        "template",
        str,
        None,
        "a named ms-swift chat template (empty: the one that renders exactly like the model's own chat template)",
        nullable=True,
    ),
    ConfigField("epochs", float, None, "passes over the training set (num_train_epochs)", min=0.0, nullable=True),
    ConfigField(
        "samples_per_step", int, 2, "GRPO: prompt groups copied whole to samples.jsonl per step", min=0, max=1000
    ),
    ConfigField(
        "env",
        dict,
        None,
        "ms-swift's environment variables: NPROC_PER_NODE, NNODES, NODE_RANK, "
        "MASTER_ADDR, MASTER_PORT, CUDA_VISIBLE_DEVICES, ...",
        nullable=True,
    ),
]
FIELD_NAMES = {f.name for f in FIELDS}
#: our key → the ms-swift argument it sets (a user may not give both)
ALIASES = {"prompts_per_step": "per_device_train_batch_size", "epochs": "num_train_epochs", "mode": "rlhf_type"}
#: our keys that are ms-swift arguments under the same name
PASSED = ("max_steps", "learning_rate", "num_generations", "beta", "max_completion_length", "tuner_type", "template")
GRPO_ONLY = ("num_generations", "beta", "max_completion_length", "temperature", "top_p", "reward_funcs")


def command_of(mode: str) -> str:
    return "rlhf" if mode == GRPO else "sft"


def to_cli(key: str, value: Any) -> list[str]:
    """One argument as ms-swift's parser reads it (lists: several values; dicts: JSON)."""
    if value is None:
        return []
    if isinstance(value, bool):
        return [f"--{key}", "true" if value else "false"]
    if isinstance(value, (list, tuple)):
        return [f"--{key}", *[json.dumps(v) if isinstance(v, (dict, list)) else str(v) for v in value]]
    if isinstance(value, dict):
        return [f"--{key}", json.dumps(value)]
    return [f"--{key}", str(value)]


def argv_of(args: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for k, v in args.items():
        out += to_cli(k, v)
    return out


@dataclass
class SplitConfig:
    """A user config split into this project's keys (validated, defaults filled) and ms-swift's."""

    ours: dict[str, Any]
    swift: dict[str, Any]
    raw: dict[str, Any]
    where: str = "the config"
    warnings: list[str] = field(default_factory=list)

    def key_for(self, swift_key: str) -> str:
        """The key the user wrote for an ms-swift argument (an alias, or the argument itself)."""
        for ours, theirs in ALIASES.items():
            if theirs == swift_key and ours in self.raw:
                return ours
        return swift_key


def split_config(user: dict[str, Any], known: dict[str, Any], where: str = "the config") -> SplitConfig:
    """Check key names against :data:`FIELDS` and ms-swift's arguments ``known`` (name → default)."""
    from ..inputs.config import validate_config

    ours_in = {k: v for k, v in user.items() if k in FIELD_NAMES}
    theirs = {k: v for k, v in user.items() if k not in FIELD_NAMES}
    for key in theirs:
        if not isinstance(key, str) or key not in known:
            raise CheckError(
                "config",
                f"unknown setting '{key}' in {where}{did_you_mean(str(key), [*known, *FIELD_NAMES])}",
                "use ms-swift's argument names (swift rlhf --help) or this engine's keys: "
                f"{', '.join(sorted(FIELD_NAMES))}",
            )
        if key in FORCED:
            raise CheckError("config", f"`{key}` in {where} is set by the engine: {FORCED[key]}", f"remove `{key}`")
    for ours, swift_key in ALIASES.items():
        if ours in ours_in and swift_key in theirs:
            raise CheckError(
                "config",
                f"`{ours}` and `{swift_key}` in {where} set the same ms-swift argument",
                f"keep one of them ({ours} is this engine's name for {swift_key})",
            )
    effective, _ = validate_config(ours_in, FIELDS)
    env = effective.get("env") or {}
    check_env(env, where)
    return SplitConfig(ours=effective, swift=theirs, raw=dict(user), where=where)


def check_env(env: dict[str, Any], where: str) -> None:
    """ms-swift's multi-process variables: names known, integers where integers, ranks in range."""
    for k, v in env.items():
        if k not in ENV_VARS:
            raise CheckError(
                "config",
                f"`env.{k}` in {where} is not one of ms-swift's environment variables{did_you_mean(str(k), ENV_VARS)}",
                f"known: {', '.join(ENV_VARS)}",
            )
        if k in INT_ENV:
            try:
                n = int(str(v))
            except ValueError:
                raise CheckError("config", f"`env.{k}` = {v!r} in {where} must be an integer")
            if n < (0 if k == "NODE_RANK" else 1):
                raise CheckError("config", f"`env.{k}` = {n} in {where} is out of range")
    nnodes = int(str(env.get("NNODES", 1)))
    if nnodes > 1:
        if "MASTER_ADDR" not in env:
            raise CheckError(
                "config",
                f"`env.NNODES` = {nnodes} in {where} needs `env.MASTER_ADDR` (the address of node 0)",
                "set MASTER_ADDR (and MASTER_PORT) to where node rank 0 listens",
            )
        if int(str(env.get("NODE_RANK", 0))) >= nnodes:
            raise CheckError(
                "config", f"`env.NODE_RANK` = {env['NODE_RANK']} in {where} must be below NNODES ({nnodes})"
            )
    gpus = env.get("CUDA_VISIBLE_DEVICES")
    if gpus not in (None, "") and "NPROC_PER_NODE" in env:
        count = len([g for g in str(gpus).split(",") if g.strip()])
        if int(str(env["NPROC_PER_NODE"])) > count:
            raise CheckError(
                "config",
                f"`env.NPROC_PER_NODE` = {env['NPROC_PER_NODE']} in {where} is more than the "
                f"{count} device(s) CUDA_VISIBLE_DEVICES={gpus} shows",
                "one process per GPU: lower NPROC_PER_NODE or list more devices",
            )


# -- ms-swift's errors → the key ------------------------------------------------------------------------
_LIST_RE = re.compile(r"\[(?:'[^']*'(?:,\s*)?)+\]|\((?:'[^']*'(?:,\s*)?)+\)")


def blame(error: str, argv_keys: list[str], user_keys: list[str]) -> str | None:
    """The argument an ms-swift error is about: the first user key it names (``--key``, ```key```, ``key``),
    else any key of the command line it names."""

    def named(key: str) -> bool:
        return re.search(rf"(?<![\w.])-?-?{re.escape(key)}(?![\w])", error) is not None

    for key in sorted(user_keys, key=len, reverse=True):
        if named(key):
            return key
    for key in sorted(argv_keys, key=len, reverse=True):
        if named(key):
            return key
    return None


def choices_hint(error: str, value: Any) -> str:
    """When ms-swift lists the valid values, a "did you mean" for the value given."""
    found = _LIST_RE.search(error)
    if not found or value is None:
        return ""
    try:
        choices = [str(c) for c in ast.literal_eval(found.group(0))]
    except (ValueError, SyntaxError):
        return ""
    return did_you_mean(str(value), choices)
