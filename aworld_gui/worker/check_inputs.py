"""What a check or a launch takes: :class:`SetupInputs`, the user's picks in Setup as plain data.

The check worker builds the engines' arguments from it in every call, and each call is a fork of the worker
(aworld_gui/worker/zygote.py), so this module imports nothing the worker has not imported already: no Gradio
(importing it in a call's fork cost every check 2.3 s), no user code (tests/test_check_worker_imports.py).
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field
from typing import Any

from engines.core.modules import Modules
from engines.files.yaml_input import try_load_yaml

DEMO_ENGINE = "trl"


@dataclass
class SetupInputs:
    """Everything a check or a launch needs; every path absolute."""

    agent: str | None = None
    train: str | None = None
    test: str | None = None
    rewards: list[dict[str, Any]] = field(default_factory=list)  # [{name|ref, weight}]
    config_text: str = ""
    engine: str = DEMO_ENGINE
    columns: dict[str, str] = field(default_factory=dict)  # {prompt, answer}
    #: module → why an upload for it could not be used (e.g. a reward file that does not import):
    #: the module is in error until the upload is replaced, whatever the rest of the setup says
    problems: dict[str, str] = field(default_factory=dict)
    name: str = ""  # the run's name and note (its label)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SetupInputs":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})

    def config_value(self) -> Any:
        """The config for the engines: a dict when the YAML parses, else the raw text (so the
        config check reports the syntax error with its line)."""
        text = (self.config_text or "").strip()
        if not text:
            return None
        data = try_load_yaml(text, default=text)
        return data if isinstance(data, dict) else text

    def modules(self) -> Modules:
        """What ``check_all``, ``prepare_run`` and ``AgentTrainer`` take (the column mapping applied)."""
        columns = {k: v for k, v in (self.columns or {}).items() if v}
        reward = [dict(r) for r in self.rewards] or None
        engine = self.engine or DEMO_ENGINE
        modules = Modules(self.agent or "", self.train or None, self.test or None, reward, self.config_value(), engine)
        return modules.with_columns(columns)

    def cli_command(self) -> str:
        """The ``python -m engines train`` command that checks and trains the same inputs."""
        from engines.cli import shell_command

        parts = [shell_command("train"), f"--engine {self.engine}", f"--agent {_q(self.agent or '')}"]
        if self.train:
            parts.append(f"--train {_q(self.train)}")
        if self.test:
            parts.append(f"--test {_q(self.test)}")
        for r in self.rewards:
            ref, weight = r.get("name") or r.get("ref"), float(r.get("weight", 1.0))
            parts.append("--reward " + _q(f"{ref}@{weight:g}"))
        cols = ",".join(f"{k}={v}" for k, v in (self.columns or {}).items() if v)
        if cols:
            parts.append(f"--columns {cols}")
        for flag, value in (("--name", self.name), ("--note", self.note)):
            if value:
                parts.append(f"{flag} {_q(value)}")
        return " \\\n  ".join(parts)


def _q(s: str) -> str:
    return shlex.quote(str(s))
