"""The spec's modules as one value: what ``AgentTrainer(agent, train_dataset, test_dataset, reward_func, config,
train_engine_name=...)`` is given. Every entry point below the public API takes a :class:`Modules` — the checks,
a run prepared, a sweep checked or prepared, the CLI's arguments, the studio's Setup — so no other signature spells
the five out again. It holds what the user gave, as given (a path, a dict, a callable, an AWorld object): it is
checked by the engine's ``check_*`` and written to ``run.yaml`` by the prepared run, never parsed here."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .registry import DEFAULT_ENGINE


@dataclass(frozen=True)
class Modules:
    """The agent, the training and test data, the reward, the config, and the engine that checks and trains them."""

    agent: Any
    train_dataset: Any = None
    test_dataset: Any = None
    reward_func: Any = None
    config: Any = None
    train_engine_name: str = DEFAULT_ENGINE

    def __post_init__(self) -> None:
        if not self.train_engine_name:
            object.__setattr__(self, "train_engine_name", DEFAULT_ENGINE)

    def with_columns(self, columns: dict | None) -> Modules:
        """The training data with a column mapping (``{"prompt": "question", ...}``); itself without one."""
        if not columns:
            return self
        return dataclasses.replace(self, train_dataset={"path": self.train_dataset, "columns": columns})

    def replace(self, **changes: Any) -> Modules:
        return dataclasses.replace(self, **changes)

    def as_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``AgentTrainer`` (the values themselves, not copies)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
