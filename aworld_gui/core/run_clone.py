"""A run cloned back into Setup: the Setup inputs that reproduce its ``run.yaml`` (its agent written back to a
YAML file, every reward term with its settings, the config's values that differ from the engine's defaults)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from . import inputs as inp


def clone_inputs(spec: dict[str, Any], agent_file: Path, engine_info: dict[str, Any]) -> inp.SetupInputs:
    """The Setup inputs of a run spec (secrets already masked); its agent is written to ``agent_file``.
    ``engine_info``: the engine's catalog entry (its ``defaults`` are left out of the overrides)."""
    agent = dict(spec.get("agent") or {})
    agent.pop("extra", None)
    agent_file.parent.mkdir(parents=True, exist_ok=True)
    agent_file.write_text(yaml.safe_dump(agent, sort_keys=False, allow_unicode=True), encoding="utf-8")
    data = spec.get("data") or {}
    rewards = [clone_reward(r) for r in spec.get("reward") or [] if isinstance(r, dict)]
    defaults = engine_info.get("defaults") or {}
    overrides = {k: v for k, v in (spec.get("config") or {}).items() if defaults.get(k, object()) != v}
    return inp.SetupInputs(
        agent=str(agent_file),
        train=data.get("train"),
        test=data.get("test"),
        rewards=rewards,
        config_text=yaml.safe_dump(overrides, sort_keys=False) if overrides else "",
        engine=spec.get("engine") or inp.DEMO_ENGINE,
        columns=dict(data.get("columns") or {}),
    )


def clone_reward(entry: dict[str, Any]) -> dict[str, Any]:
    """A run.yaml reward entry as the Setup's reward picker holds it: a built-in by name, a function by its
    reference (a factory with its arguments: ``module:factory(k=v)``), and any other term — a reward model,
    an LLM judge, a pickled callable, a reward with call kwargs — as its inline YAML (``{judge: {url: ...}}``,
    the form the CLI's ``--reward`` takes), so a clone keeps every term with its settings."""
    simple = (
        ("name" in entry or "ref" in entry)
        and not entry.get("kwargs")
        and not any(k in entry for k in ("pickle", "judge", "reward_model"))
    )
    if simple:
        out = {k: v for k, v in entry.items() if k in ("name", "ref", "weight")}
        if entry.get("args") is not None:
            out["ref"] = inp.with_args(entry["ref"], entry["args"])
        return out
    inline = {k: v for k, v in entry.items() if k != "weight"}
    return {
        "ref": yaml.safe_dump(
            inline, default_flow_style=True, sort_keys=False, allow_unicode=True, width=10**9
        ).strip(),
        "weight": entry.get("weight", 1.0),
    }
