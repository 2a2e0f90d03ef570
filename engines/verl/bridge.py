"""Files verl loads from the run directory: the reward bridge and the function-tool file.

Both are copies of :mod:`engines.plugins.entry` that verl imports by path on whichever node runs the code
(``load_extern_object`` for the reward, ``load_function_tools_from_path`` for tools), starting
:mod:`engines.plugins.verl_reward` or :mod:`engines.plugins.verl_tools` from a snapshot of the studio's
engine-neutral modules copied next to them (``aworld_engines/``) with the parameters of the JSON file of the same
name — never the studio's GUI, never this repository installed. User files they reference are copied into the run
dir too and used when the original path does not exist on the node.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ..plugins.install import install
from ..plugins.verl_reward import REWARD_FN

REWARD_FILE = "reward_bridge.py"
TOOLS_FILE = "function_tools.py"

__all__ = ["REWARD_FILE", "REWARD_FN", "TOOLS_FILE", "write_function_tools", "write_reward_bridge"]


def _copy_user_file(path: Path, verl_dir: Path, sub: str, i: int) -> str:
    """Copy a user .py into the run dir; returns its path relative to the run dir."""
    dest = verl_dir / sub / f"{i}_{path.name}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, dest)
    return str(dest.relative_to(verl_dir.parent))


def _relocatable(ref: str, run_dir: Path, verl_dir: Path, sub: str, i: int) -> dict[str, Any]:
    """``file.py:fn`` → {ref, attr, copy}; ``module:fn`` → {ref}."""
    target, _, attr = ref.rpartition(":")
    if not target.endswith(".py"):
        return {"ref": ref}
    path = Path(target)
    out: dict[str, Any] = {"ref": ref, "attr": attr}
    if path.is_file():
        try:
            out["copy"] = str(path.resolve().relative_to(run_dir))
        except ValueError:
            out["copy"] = _copy_user_file(path, verl_dir, sub, i)
    return out


def write_reward_bridge(
    run_dir: Path,
    verl_dir: Path,
    spec: list[dict],
    columns: list[str],
    final_answer_only: bool,
    tokenizer_path: str | None = None,
) -> Path:
    """The bridge file exposing ``compute_score`` for ``spec`` (a Reward.to_spec() list); rewards that
    read completion_ids get them from ``tokenizer_path`` (the model's folder) on the node."""
    items = []
    for i, entry in enumerate(spec):
        entry = dict(entry)
        if "pickle" in entry:
            p = Path(entry["pickle"]).resolve()
            try:
                entry["pickle"] = str(p.relative_to(run_dir))
            except ValueError:
                dest = verl_dir / "reward_files" / f"{i}_{p.name}"
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(p, dest)
                entry["pickle"] = str(dest.relative_to(run_dir))
        elif "ref" in entry:
            entry.update(_relocatable(entry["ref"], run_dir, verl_dir, "reward_files", i))
        items.append(entry)
    params = {
        "terms": [f"{e.get('name') or e.get('ref')}×{e.get('weight', 1.0):g}" for e in items],
        "spec": items,
        "columns": columns,
        "final_answer_only": bool(final_answer_only),
        "tokenizer": tokenizer_path,
    }
    return install(verl_dir, REWARD_FILE, "verl_reward", params, "the verl reward bridge")


def write_function_tools(run_dir: Path, verl_dir: Path, tools: list[tuple[str, str]]) -> Path:
    """``tools``: (name, 'file.py:fn' or 'module:fn') → a file of verl ``@function_tool`` registrations."""
    items = [
        {"name": name, **_relocatable(ref, run_dir, verl_dir, "tool_files", i)} for i, (name, ref) in enumerate(tools)
    ]
    return install(verl_dir, TOOLS_FILE, "verl_tools", {"tools": items}, "the verl function tools")
