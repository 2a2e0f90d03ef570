"""Presets: a whole Setup (agent, data, reward, engine, config) saved under a name and loaded later.

Shipped presets live in ``assets/presets/*.yaml`` (paths relative to the preset file); a user's in
``<runs>/.presets/<name>.yaml`` (absolute paths, as Setup had them). Both are plain YAML::

    description: one line
    engine: trl
    agent: ../agents/letters_agent.yaml
    train: ../datasets/letters_train.jsonl
    test: ../datasets/letters_test.jsonl          # or omitted
    columns: {prompt: question, answer: solution}  # optional
    rewards: [{ref: ../rewards/letter_reward.py:letter_reward, weight: 1.0}, {name: exact_match, weight: 0.5}]
    config: |                                     # the config overrides YAML, or config_file: path
      max_steps: 400
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .inputs import ASSETS, SetupInputs

SHIPPED_DIR = ASSETS / "presets"
USER_DIR = ".presets"
NAME_RE = re.compile(r"^[\w][\w .+-]{0,63}$")


def _resolve(value: str | None, base: Path) -> str | None:
    if not value:
        return None
    target, sep, attr = value.rpartition(":") if ".py:" in value else (value, "", "")
    path = Path(target).expanduser()
    if not path.is_absolute():
        path = (base / path).resolve()
    return f"{path}{sep}{attr}"


def list_presets(runs_dir: str | Path) -> dict[str, dict[str, str]]:
    """``{name: {"path", "description", "kind": "shipped" | "saved"}}``, shipped first."""
    out: dict[str, dict[str, str]] = {}
    for kind, folder in (("shipped", SHIPPED_DIR), ("saved", Path(runs_dir) / USER_DIR)):
        for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            except (OSError, yaml.YAMLError):
                continue
            out[path.stem] = {"path": str(path), "description": str(data.get("description") or ""), "kind": kind}
    return out


def load_preset(path: str | Path) -> SetupInputs:
    """The Setup a preset describes (every path absolute)."""
    path = Path(path)
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"preset {path.name} is not a mapping of settings")
    base = path.parent
    rewards = []
    for r in data.get("rewards") or []:
        r = dict(r)
        if r.get("ref"):
            r["ref"] = _resolve(r["ref"], base)
        rewards.append(r)
    config = data.get("config") or ""
    if data.get("config_file"):
        config = Path(_resolve(data["config_file"], base)).read_text(encoding="utf-8")
    return SetupInputs(
        agent=_resolve(data.get("agent"), base),
        train=_resolve(data.get("train"), base),
        test=_resolve(data.get("test"), base),
        rewards=rewards,
        config_text=str(config),
        engine=str(data.get("engine") or "trl"),
        columns=dict(data.get("columns") or {}),
    )


def save_preset(runs_dir: str | Path, name: str, si: SetupInputs, description: str = "") -> Path:
    """Save Setup under ``name`` (letters, digits, spaces, ``._+-``); an existing saved preset of that
    name is replaced, a shipped one cannot be."""
    name = (name or "").strip()
    if not NAME_RE.match(name):
        raise ValueError("a preset name is 1-64 letters, digits, spaces or . _ + - (starting with a letter or digit)")
    if (SHIPPED_DIR / f"{name}.yaml").exists():
        raise ValueError(f"'{name}' is a shipped preset: save under another name")
    data: dict[str, Any] = {
        "description": description or f"saved from Setup ({si.engine})",
        "engine": si.engine,
        "agent": si.agent,
        "train": si.train,
    }
    if si.test:
        data["test"] = si.test
    if si.columns:
        data["columns"] = dict(si.columns)
    data["rewards"] = [dict(r) for r in si.rewards]
    data["config"] = si.config_text or ""
    folder = Path(runs_dir) / USER_DIR
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{name}.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return out
