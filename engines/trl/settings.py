"""TRL's own settings, under TRL's own names: every field of ``GRPOConfig`` (GRPO mode) or
``SFTConfig`` (SFT mode), plus the model/PEFT fields of TRL's ``ModelConfig``.

This module reads TRL's dataclasses — their fields, type annotations and ``metadata["help"]`` —
and answers three questions: which keys exist (:func:`trl_fields`, the catalog the studio's
full-settings editor lists), what a key is in a given mode (:func:`classify_key`: a TRL key, a
ModelConfig key, a key the engine owns, a key of the other mode, or unknown), and whether a value
has the field's type (:func:`coerce`). Building and constructing the dataclasses themselves is
:mod:`engines.trl.arguments`.

TRL is imported only when one of these functions is called (``import engines`` stays light).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import math
import types
import typing
from dataclasses import dataclass
from typing import Any

from ..results.check_result import CheckError, did_you_mean

GRPO, SFT = "grpo", "sft"
TRAINER_CONFIG = {GRPO: "GRPOConfig", SFT: "SFTConfig"}
MODEL_CONFIG = "ModelConfig"

#: keys the engine sets itself: refused, with the reason (and what to use instead)
OWNED: dict[str, str] = {
    "output_dir": "the engine writes checkpoints to the run directory's checkpoints/ folder "
    "(each run has its own; see `aworld-train runs`)",
    "overwrite_output_dir": "each run writes a fresh run directory",
    "logging_dir": "the engine writes TensorBoard event files to the run directory's tensorboard/ folder",
    "logging_strategy": "the engine logs every `logging_steps` steps to metrics.jsonl; set logging_steps",
    "disable_tqdm": "progress goes to status.json (the studio and `aworld-train train` show it)",
    "callbacks": "the engine installs its own callbacks (run directory, stop requests, samples)",
    "hub_token": "a secret never goes into run files: set HF_TOKEN in the environment instead",
    "eval_strategy": "the engine scores the test set with the reward: set eval_steps and eval_samples",
    "do_eval": "the engine scores the test set with the reward: set eval_steps and eval_samples",
    "do_train": "the engine always trains",
    "do_predict": "use the engine's inference (evaluation) instead",
    "model_name_or_path": "write `model:` (AWorld's name for the policy model)",
    "reward_model": "the config's reward_model is the reward only when no reward is given (AWorld form); beside a "
    "reward, add the model to it: reward_func=[<your reward>, {reward_model: <folder>}]",
}

#: string fields TRL accepts without checking them until training starts: their valid values
#: (each is quoted in TRL's own help text; tests/test_trl_settings.py checks that)
LATE_CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    (GRPO, "loss_type"): ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"),
    (GRPO, "vllm_mode"): ("server", "colocate"),
    (GRPO, "importance_sampling_level"): ("token", "sequence"),
}


@dataclass(frozen=True)
class TrlField:
    """One field of a TRL dataclass as the engine sees it."""

    name: str
    annotation: Any
    default: Any
    help: str
    source: str  # GRPOConfig / SFTConfig / ModelConfig
    choices: tuple | None = None

    @property
    def type_name(self) -> str:
        return type_name(self.annotation)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type_name,
            "default": plain(self.default),
            "help": self.help,
            "choices": [plain(c) for c in self.choices] if self.choices else None,
            "source": self.source,
        }


# -- the catalog --------------------------------------------------------------------------------
def _classes() -> dict[str, type]:
    from trl import GRPOConfig, ModelConfig, SFTConfig

    return {"GRPOConfig": GRPOConfig, "SFTConfig": SFTConfig, "ModelConfig": ModelConfig}


def _fields_of(cls: type, source: str, mode: str | None) -> dict[str, TrlField]:
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = f.default_factory()  # type: ignore[misc]
        else:
            default = None
        ann = hints.get(f.name, Any)
        choices = f.metadata.get("choices")
        if choices is None and mode is not None:
            choices = LATE_CHOICES.get((mode, f.name))
        if choices is None:
            enum_cls = _enum_in(ann)
            choices = tuple(e.value for e in enum_cls) if enum_cls is not None else None
        out[f.name] = TrlField(
            f.name,
            ann,
            default,
            " ".join(str(f.metadata.get("help", "")).split()),
            source,
            tuple(choices) if choices is not None else None,
        )
    return out


@functools.lru_cache(maxsize=None)
def trl_fields(mode: str) -> dict[str, TrlField]:
    """Every TRL setting of ``mode``: the trainer config's fields, then ModelConfig's (its
    ``model_name_or_path`` is the engine's ``model``)."""
    classes = _classes()
    fields = _fields_of(classes[TRAINER_CONFIG[mode]], TRAINER_CONFIG[mode], mode)
    for name, f in _fields_of(classes[MODEL_CONFIG], MODEL_CONFIG, None).items():
        if name not in fields and name not in OWNED:
            fields[name] = f
    return fields


def model_config_names() -> set[str]:
    return {n for n, f in trl_fields(GRPO).items() if f.source == MODEL_CONFIG}


def classify_key(key: str, mode: str, engine_keys: set[str]) -> str:
    """``engine`` (ours), ``trl`` (the mode's trainer config), ``model`` (ModelConfig); raises
    CheckError for a key the engine owns, a key of the other mode, or an unknown key."""
    if key in engine_keys:
        return "engine"
    if key in OWNED:
        raise CheckError("config", f"`{key}` is set by the engine: {OWNED[key]}", f"remove `{key}` from the config")
    fields = trl_fields(mode)
    if key in fields:
        return "model" if fields[key].source == MODEL_CONFIG else "trl"
    other = SFT if mode == GRPO else GRPO
    if key in trl_fields(other):
        raise CheckError(
            "config",
            f"`{key}` is a {TRAINER_CONFIG[other]} setting, but mode is {mode}",
            f"remove it, or set mode: {other}",
        )
    known = set(engine_keys) | set(fields)
    raise CheckError(
        "config",
        f"unknown config key '{key}'{did_you_mean(key, known)}",
        f"the trl engine takes TRL's {TRAINER_CONFIG[mode]} and ModelConfig settings under their own "
        "names plus its own keys (docs/TRL.md); the studio's full-settings editor lists them all",
    )


# -- types --------------------------------------------------------------------------------------
def _args(ann: Any) -> tuple:
    return typing.get_args(ann)


def _is_union(ann: Any) -> bool:
    return typing.get_origin(ann) in (typing.Union, types.UnionType)


def _enum_in(ann: Any) -> type | None:
    for a in _args(ann) if _is_union(ann) else (ann,):
        if isinstance(a, type) and issubclass(a, enum.Enum):
            return a
    return None


def type_name(ann: Any) -> str:
    if ann is type(None):
        return "null"
    if _is_union(ann):
        return " | ".join(dict.fromkeys(type_name(a) for a in _args(ann)))
    origin = typing.get_origin(ann)
    if origin is typing.Literal:
        return "choice"
    if origin in (list, tuple):
        inner = _args(ann)
        return f"list[{type_name(inner[0])}]" if inner else "list"
    if origin is dict:
        return "dict"
    if isinstance(ann, type):
        if issubclass(ann, enum.Enum):
            return "choice"
        return ann.__name__
    return str(ann).replace("typing.", "")


def plain(value: Any) -> Any:
    """A value as YAML/JSON can hold it (enums by value, other objects as text)."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return str(value)


class _Mismatch(Exception):
    pass


def _number(value: Any, kind: type) -> Any:
    if isinstance(value, bool):
        raise _Mismatch
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text) if kind is int and text.lstrip("+-").isdigit() else float(text)
        except ValueError:
            raise _Mismatch
    if kind is int:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, int):
            return value
        raise _Mismatch
    if isinstance(value, (int, float)):
        if not math.isfinite(float(value)):
            raise _Mismatch
        return float(value)
    raise _Mismatch


def _as(value: Any, ann: Any) -> Any:
    """``value`` as ``ann`` or _Mismatch."""
    if ann is Any or ann is object:
        return value
    if ann is type(None):
        if value is None:
            return None
        raise _Mismatch
    if _is_union(ann):
        members = _args(ann)
        if value is None and type(None) in members:
            return None
        # exact types first (a bool stays a bool in `str | bool`), then conversions
        for a in members:
            if isinstance(a, type) and not issubclass(a, enum.Enum) and type(value) is a:
                return value
        for a in members:
            try:
                return _as(value, a)
            except _Mismatch:
                continue
        raise _Mismatch
    origin = typing.get_origin(ann)
    if origin is typing.Literal:
        if value in _args(ann):
            return value
        raise _Mismatch
    if origin in (list, tuple) or ann in (list, tuple):
        inner = (_args(ann) or (Any,))[0]
        if isinstance(value, str) and inner is str:
            return [value]  # one item where a list is expected (TRL accepts that for report_to & co.)
        if not isinstance(value, (list, tuple)):
            raise _Mismatch
        return [_as(v, inner) for v in value]
    if origin is dict or ann is dict:
        if isinstance(value, dict):
            return value
        raise _Mismatch
    if isinstance(ann, type) and issubclass(ann, enum.Enum):
        if isinstance(value, str) and value in {e.value for e in ann}:
            return value
        raise _Mismatch
    if ann is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise _Mismatch
    if ann in (int, float):
        return _number(value, ann)
    if ann is str:
        if isinstance(value, str):
            return value
        raise _Mismatch
    if isinstance(ann, type):  # a library object (ParallelismConfig, ...): its own class, or text/dict
        if isinstance(value, (ann, str, dict)):
            return value
        raise _Mismatch
    return value


def coerce(f: TrlField, value: Any) -> Any:
    """``value`` converted to the field's type (YAML's ``1e-4`` text → float, ``5.0`` → int, ...);
    CheckError naming the key, the expected type and an example otherwise."""
    example = (
        f"e.g. {f.name}: {json.dumps(plain(f.default))}"
        if f.default is not None
        else f"see {f.source}'s help for `{f.name}`"
    )
    try:
        out = _as(value, f.annotation)
    except _Mismatch:
        got = "nothing" if value is None else f"{value!r} ({type(value).__name__})"
        raise CheckError("config", f"`{f.name}` must be {f.type_name} ({f.source}), got {got}", example)
    if f.choices is not None and out is not None and not isinstance(out, bool):
        values = out if isinstance(out, list) else [out]
        allowed = [plain(c) for c in f.choices]
        for v in values:
            if v not in allowed:
                shown = ", ".join(map(str, allowed[:12])) + (
                    f", … ({len(allowed)} in all)" if len(allowed) > 12 else ""
                )
                raise CheckError(
                    "config",
                    f"`{f.name}` = {v!r} is not one of {shown}{did_you_mean(str(v), map(str, allowed))} ({f.source})",
                    f"set {f.name} to one of: {shown}",
                )
    return out
