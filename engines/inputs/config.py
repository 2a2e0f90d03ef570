"""Engine configs: load from a YAML/JSON path, a dict or an object; fill defaults; reject unknown
keys with a "did you mean"; check types and ranges; return the effective config.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..results.check_result import CheckError, did_you_mean
from ..files.yaml_input import load_json_text, load_user_file, load_yaml_text


@dataclass
class ConfigField:
    name: str
    type: type | tuple[type, ...]
    default: Any
    help: str = ""
    min: float | None = None
    max: float | None = None
    choices: Sequence[Any] | None = None
    nullable: bool = False
    main: bool = False  # shown as a form field in the studio (others live in the YAML editor)

    def describe(self) -> dict[str, Any]:
        t = self.type if isinstance(self.type, tuple) else (self.type,)
        return {
            "name": self.name,
            "type": "/".join(x.__name__ for x in t),
            "default": self.default,
            "help": self.help,
            "min": self.min,
            "max": self.max,
            "choices": list(self.choices) if self.choices else None,
            "main": self.main,
        }


def load_config_input(config: Any) -> dict[str, Any]:
    """A plain dict from a path (YAML/JSON), dict, dataclass or object with ``to_dict``."""
    if config is None:
        return {}
    if isinstance(config, (str, os.PathLike)):
        text = str(config)
        path = Path(os.path.expanduser(text))
        if "\n" in text or len(text) > 4096 or not path.exists():
            if "\n" in text or ":" in text and not text.endswith((".yaml", ".yml", ".json")):
                return _parse_text(text, "config text")
            raise CheckError("config", f"config file '{config}' does not exist", "give a YAML or JSON file path")
        if path.is_dir():
            raise CheckError("config", f"'{config}' is a folder, not a config file", "give a YAML or JSON file path")
        return _mapping(load_user_file(path, module="config", role="config file"), f"config file '{path.name}'")
    if isinstance(config, dict):
        return dict(config)
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dataclasses.asdict(config)
    for attr in ("to_dict", "model_dump", "dict"):
        if callable(getattr(config, attr, None)):
            return dict(getattr(config, attr)())
    raise CheckError(
        "config", f"config of type {type(config).__name__} is not supported", "pass a YAML/JSON path or a dict"
    )


def _parse_text(text: str, where: str, json_first: bool = False) -> dict[str, Any]:
    if json_first:
        data = load_json_text(text, module="config", where=where)
    else:
        data = load_yaml_text(text, module="config", where=where)
    return _mapping(data, where)


def _mapping(data: Any, where: str) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CheckError(
            "config",
            f"{where} must hold a mapping of settings, not a {type(data).__name__}",
            "write one `key: value` per line, e.g. max_steps: 100",
        )
    return data


def _example(f: ConfigField) -> str:
    """A value to show in "e.g. key: value" (never None: that reads as a suggestion to write None)."""
    if f.default is not None:
        return (
            repr(f.default)
            if isinstance(f.default, str)
            else str(f.default).lower()
            if isinstance(f.default, bool)
            else str(f.default)
        )
    if f.choices:
        return str(list(f.choices)[0])
    types = f.type if isinstance(f.type, tuple) else (f.type,)
    if int in types or float in types:
        lo = f.min if f.min is not None else 1
        return str(int(lo) if int in types else float(lo) or 0.5)
    if bool in types:
        return "true"
    if dict in types:
        return "{NAME: value}"
    return "<text>"


def _short(value: Any, n: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."


def _coerce(f: ConfigField, value: Any) -> Any:
    types = f.type if isinstance(f.type, tuple) else (f.type,)
    if value is None:
        if f.nullable:
            return None
        raise CheckError("config", f"`{f.name}` must not be empty", f"set it, e.g. {f.name}: {_example(f)}", key=f.name)
    if float in types and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if isinstance(value, str) and (int in types or float in types) and str not in types:
        try:
            value = int(value) if int in types and value.strip().lstrip("-").isdigit() else float(value)
        except ValueError:
            pass
    if int in types and float not in types and isinstance(value, float) and value.is_integer():
        value = int(value)  # 5.0 (JSON) or 1e3 (YAML reads it as text) for an integer setting
    if bool in types and isinstance(value, str) and value.lower() in ("true", "false"):
        value = value.lower() == "true"
    if isinstance(value, bool) and bool not in types:
        raise CheckError(
            "config",
            f"`{f.name}` must be {'/'.join(t.__name__ for t in types)}, got {value!r}",
            f"e.g. {f.name}: {_example(f)}",
            key=f.name,
        )
    if not isinstance(value, types):
        raise CheckError(
            "config",
            f"`{f.name}` must be {'/'.join(t.__name__ for t in types)}, got {_short(value)} ({type(value).__name__})",
            f"e.g. {f.name}: {_example(f)}",
            key=f.name,
        )
    if f.choices is not None and value not in f.choices:
        raise CheckError(
            "config",
            f"`{f.name}` = {value!r} is not one of {', '.join(map(str, f.choices))}"
            f"{did_you_mean(str(value), map(str, f.choices))}",
            f"set {f.name} to one of: {', '.join(map(str, f.choices))}",
            key=f.name,
        )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        lo, hi = f.min is not None, f.max is not None
        span = (
            f"use a value between {f.min} and {f.max}"
            if lo and hi
            else f"use a value of at least {f.min}"
            if lo
            else f"use a value of at most {f.max}"
            if hi
            else "use a finite number"
        )
        if not math.isfinite(value):
            raise CheckError("config", f"`{f.name}` = {value} is not a finite number", span, key=f.name)
        if f.min is not None and value < f.min:
            raise CheckError("config", f"`{f.name}` = {value} is below its minimum {f.min}", span, key=f.name)
        if f.max is not None and value > f.max:
            raise CheckError("config", f"`{f.name}` = {value} is above its maximum {f.max}", span, key=f.name)
    return value


def all_problems(problems: Sequence[CheckError]) -> CheckError:
    """One error that says every problem of a config (one alone: itself, unchanged). Each says what is wrong
    and its fix when the fix is short (an unknown key's list of known keys is left to the single error)."""
    if len(problems) == 1:
        return problems[0]
    said, by_key = [], {}
    for e in problems:
        by_key.update({k: v for k, v in e.field_problems().items() if k not in by_key})
        inner = e.result.details.get("problems")
        if inner:
            said.extend(inner)
            continue
        text = e.result.message
        if e.hint and text.endswith(f" — {e.hint}") and len(e.hint) > 80:
            text = text[: -len(f" — {e.hint}")]
        said.append(text)
    return CheckError("config", f"{len(said)} problems in the config: " + "; ".join(said), problems=said, by_key=by_key)


def validate_config(
    config: Any,
    fields: Sequence[ConfigField],
    cross_check: Callable[[dict[str, Any]], list[str]] | None = None,
    base: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """(effective config, warnings). ``base`` holds defaults derived elsewhere (e.g. from the agent)
    that the user's values override. ``cross_check`` raises CheckError or returns warnings."""
    user = load_config_input(config)
    known = {f.name: f for f in fields}
    # every problem at once: an unknown key must not hide a bad value of a known one
    problems: list[CheckError] = []
    unknown = [key for key in user if key not in known]
    for key in unknown:
        problems.append(
            CheckError(
                "config",
                f"unknown config key '{key}'{did_you_mean(key, known)}",
                f"known keys: {', '.join(sorted(known))}",
            )
        )
    effective: dict[str, Any] = {}
    for f in fields:
        if f.name in user:
            value = user[f.name]
        elif base and f.name in base:
            value = base[f.name]
        else:
            value = f.default
        try:
            effective[f.name] = _coerce(f, value)
        except CheckError as e:
            problems.append(e)
    if problems:
        raise all_problems(problems)
    warnings = cross_check(effective) if cross_check else []
    return effective, list(warnings or [])
