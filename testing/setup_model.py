"""The Setup's config as a user sees it, modelled without the studio: random seeded sequences of what a user does
in Setup (type a number, tick a box, edit the YAML, switch engine and back, load a preset, clone a run, pick a
model, upload a reward) and what every view must then show. Used by tests/test_setup_model.py (the Setup's own
functions, no browser) and tests/test_browser_setup_model.py (the studio in Chromium).

The model holds each engine's overrides as a dict and whether the YAML is broken; it never sees YAML text.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from aworld_gui.core.inputs import ASSETS, DEMO_ENGINE, demo_config_text

#: what a user types into the form or the YAML (values the trl checks accept)
NUMBERS: dict[str, list[Any]] = {
    "max_steps": [3, 6, 12, 30, 400],
    "learning_rate": [0.005, 0.002, 0.0005, 0.00001],
    "beta": [0.0, 0.04, 0.1],
    "max_completion_length": [1, 2, 3, 4],
}
BOX = "use_peft"
PRESETS = ("letters-grpo", "calc-tools")
OTHER_ENGINE = "verl"
KINDS = (
    "number",
    "tick",
    "yaml_same",
    "yaml_other",
    "yaml_invalid_fixed",
    "engine_round_trip",
    "preset",
    "clone",
    "model",
    "reward_upload",
)


@dataclass(frozen=True)
class Step:
    kind: str
    key: str | None = None
    value: Any = None

    def __str__(self) -> str:
        return f"{self.kind}({self.key}={self.value!r})" if self.key else self.kind


def sequence(seed: int, length: int = 8, models: int = 2, clones: int = 2, kinds=KINDS) -> list[Step]:
    """``length`` random steps (seeded): the same seed gives the same sequence."""
    rnd = random.Random(seed)
    out = []
    for _ in range(length):
        kind = rnd.choice(kinds)
        key = rnd.choice(sorted(NUMBERS))
        value = rnd.choice(NUMBERS[key])
        if kind in ("number", "yaml_same", "yaml_other", "yaml_invalid_fixed"):
            out.append(Step(kind, key, value))
        elif kind == "preset":
            out.append(Step(kind, value=rnd.choice(PRESETS)))
        elif kind == "clone":
            out.append(Step(kind, value=rnd.randrange(clones)))
        elif kind == "model":
            out.append(Step(kind, value=rnd.choice([None, *range(models)])))  # None: back to the agent's model
        else:
            out.append(Step(kind))
    return out


def preset_overrides(name: str) -> tuple[str, dict]:
    """(engine, overrides) a shipped preset sets, read from its file."""
    path = ASSETS / "presets" / f"{name}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    text = data.get("config") or ""
    if data.get("config_file"):
        text = (path.parent / data["config_file"]).read_text(encoding="utf-8")
    return data.get("engine") or DEMO_ENGINE, yaml.safe_load(text) or {}


@dataclass
class Model:
    """What the user has set: each engine's overrides, and whether the YAML is broken right now."""

    engine: str = DEMO_ENGINE
    overrides: dict[str, dict] = field(default_factory=lambda: {DEMO_ENGINE: yaml.safe_load(demo_config_text()) or {}})
    broken: bool = False

    @property
    def current(self) -> dict:
        return self.overrides.setdefault(self.engine, {})

    def apply(self, step: Step, models: list[str], clones: list[dict]) -> None:
        """``clones``: each clonable run's overrides (its config's values that differ from the engine's defaults);
        ``models``: the model picker's model paths."""
        k = step.kind
        if k in ("number", "yaml_same", "yaml_other", "yaml_invalid_fixed"):
            self.current[step.key] = step.value
        elif k == "tick":
            self.current[BOX] = not self.current.get(BOX, False)
        elif k == "preset":
            engine, ov = preset_overrides(step.value)
            self.engine, self.overrides = engine, {engine: ov}
        elif k == "clone":
            self.engine, self.overrides = DEMO_ENGINE, {DEMO_ENGINE: dict(clones[step.value])}
        elif k == "model":
            if step.value is None:
                self.current.pop("model", None)
            else:
                self.current["model"] = models[step.value]
        # engine_round_trip, reward_upload: the config stays as it was

    def expect_form(self, fields, effective: dict | None, defaults: dict) -> list[str]:
        """What is wrong with a form (config_form.FieldView list) for this model: each field shows the YAML's value,
        else the effective value (``effective``: the last check of this engine, of this spec or, until that answers,
        of the spec before; None when there is none), else the default; a broken YAML shows no value and locks
        every field."""
        wrong = []
        for f in fields:
            if self.broken:
                if f.interactive or f.value not in (None, "", False):
                    wrong.append(f"{f.name}: shows {f.value!r} (interactive {f.interactive}) for a broken YAML")
                continue
            if f.name in self.current:
                want, set_here = self.current[f.name], True
            else:
                want, set_here = (effective or defaults).get(f.name, defaults.get(f.name)), False
            if not same(f.value, want) or f.overridden != set_here:
                wrong.append(
                    f"{f.name}: shows {f.value!r} (set in the YAML: {f.overridden}), model {want!r} (set: {set_here})"
                )
        return wrong


def same(shown: Any, want: Any) -> bool:
    """A value shown (a number field's float, a choice's string) is the value wanted."""
    if isinstance(want, bool) or isinstance(shown, bool):
        return shown is want or (isinstance(shown, str) and shown.lower() == str(want).lower())
    if isinstance(want, (int, float)) and shown not in (None, ""):
        try:
            return math.isclose(float(shown), float(want), rel_tol=1e-9, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    if want is None:
        return shown in (None, "")
    return str(shown) == str(want)


def hand_edit(text: str, key: str, value: Any, other: bool = False) -> str:
    """The YAML as a user edits it by hand: the key's line rewritten with a comment (``other``: a new line added at
    the top instead when the key is not there yet)."""
    line = f"{key}: {yaml.safe_dump(value, default_flow_style=True).strip().removesuffix('...').strip()}   # typed"
    lines = (text or "").splitlines()
    for i, old in enumerate(lines):
        if old.split("#", 1)[0].split(":", 1)[0].strip() == key and not old.startswith((" ", "-")):
            lines[i] = line
            return "\n".join(lines) + "\n"
    return "\n".join([line, *lines] if other else [*lines, line]) + "\n"


BROKEN_LINE = "beta: [0.1   # an unclosed list"


def break_yaml(text: str) -> str:
    return (text or "").rstrip("\n") + "\n" + BROKEN_LINE + "\n"


def unbreak(text: str) -> str:
    return "\n".join(ln for ln in (text or "").splitlines() if ln != BROKEN_LINE) + "\n"


def reward_file(folder: Path) -> Path:
    """A reward .py to upload (the shipped letters reward under another name)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "my_letter_reward.py"
    out.write_text((ASSETS / "rewards" / "letter_reward.py").read_text(encoding="utf-8"), encoding="utf-8")
    return out
