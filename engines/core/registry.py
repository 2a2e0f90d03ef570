"""The training-engine registry: ``register_processor``, ``unregister_processor``, lookup.

Engines are found through the Python entry-point group :data:`ENTRY_POINT_GROUP`
(``aworld_trainer.engines``): this project's own engines (``trl``, ``verl``, ``swift``) are
registered there by its ``pyproject.toml``, and any installed package can add one the same way::

    [project.entry-points."aworld_trainer.engines"]
    my_engine = "my_package.trainer:MyTrainer"

An entry point is kept as its ``module:Class`` text until the engine is asked for, so importing
:mod:`engines` never imports torch, TRL or verl. ``register_processor`` adds a class at run time.
"""

from __future__ import annotations

from importlib import metadata
from typing import Union

from ..results.check_result import did_you_mean
from ..inputs.loading import load_object
from .trainer_processor import TrainerProcessor

ENTRY_POINT_GROUP = "aworld_trainer.engines"
#: this project's distribution: its entry points are read first, so a plugin cannot shadow ``trl`` or ``verl``
OWN_DISTRIBUTION = "aworld-trainer-studio"
#: the engine used when none is named (the spec's default), by AgentTrainer, the CLI and check_all
DEFAULT_ENGINE = "verl"

_REGISTRY: dict[str, Union[type, str]] = {}
_ENTRY_POINTS_LOADED = False


def _load_entry_points() -> None:
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    _ENTRY_POINTS_LOADED = True

    def theirs(ep: metadata.EntryPoint) -> bool:
        dist = getattr(ep, "dist", None)
        return dist is None or dist.name.replace("_", "-").lower() != OWN_DISTRIBUTION

    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=theirs):
        if ep.name not in _REGISTRY:
            _REGISTRY[ep.name] = ep.value


def register_processor(train_engine_name: str, train_type: type) -> None:
    if not isinstance(train_engine_name, str) or not train_engine_name.strip():
        raise ValueError("train_engine_name must be a non-empty string")
    if not (isinstance(train_type, type) and issubclass(train_type, TrainerProcessor)):
        raise ValueError(
            f"{train_type!r} is not a TrainerProcessor subclass — subclass "
            "engines.TrainerProcessor and implement train() and the check_* methods"
        )
    _load_entry_points()
    if train_engine_name in _REGISTRY:
        raise ValueError(
            f"a training engine named '{train_engine_name}' is already registered — "
            "unregister_processor() it first or pick another name"
        )
    if train_type.engine_name == TrainerProcessor.engine_name or train_type.engine_name != train_engine_name:
        train_type.engine_name = train_engine_name
    _REGISTRY[train_engine_name] = train_type


def unregister_processor(train_engine_name: str) -> None:
    _load_entry_points()
    if train_engine_name not in _REGISTRY:
        raise ValueError(
            f"no training engine named '{train_engine_name}' is registered "
            f"(registered: {', '.join(sorted(_REGISTRY)) or 'none'})"
        )
    del _REGISTRY[train_engine_name]


def registered_engines() -> list[str]:
    _load_entry_points()
    return sorted(_REGISTRY)


def get_processor_class(train_engine_name: str) -> type:
    _load_entry_points()
    entry = _REGISTRY.get(train_engine_name)
    if entry is None:
        hint = (
            " — install this project (pip install -e .) so its engines are registered"
            if not _REGISTRY
            else f" — registered engines: {', '.join(sorted(_REGISTRY))}"
        )
        raise ValueError(
            f"unknown training engine '{train_engine_name}'{did_you_mean(train_engine_name, _REGISTRY)}" + hint
        )
    if isinstance(entry, str):
        try:
            cls = load_object(entry)
        except ValueError as e:  # a plugin that does not import: say which engine, keep the cause
            raise ValueError(
                f"training engine '{train_engine_name}' ({entry}) cannot be loaded: {e} — install "
                f"what it needs, or unregister_processor('{train_engine_name}')"
            ) from e
        if not (isinstance(cls, type) and issubclass(cls, TrainerProcessor)):
            raise ValueError(f"engine '{train_engine_name}' ({entry}) is not a TrainerProcessor subclass")
        cls.engine_name = train_engine_name
        _REGISTRY[train_engine_name] = cls
        entry = cls
    return entry
