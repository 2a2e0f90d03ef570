"""ms-swift's own rewards (its ORMs: ``accuracy``, ``format``, ``soft_overlong``, ...) as rewards of a run on the
``swift`` engine, named ``swift:<name>`` in a reward spec (``swift:format@0.5`` in the CLI and the studio).

They live in ms-swift's environment and run only there: ms-swift builds them from its training arguments
(``soft_max_length``, ``cosine_*``, ...) and calls them beside the ORMs of our plugin. This module reads which
ORMs the installed ms-swift has from its source (``swift/rewards/orm.py``'s ``orms`` table), without importing
it, for the checks and the reward catalog. Other engines refuse them (:mod:`engines.rewards.spec`), naming a
counterpart that runs everywhere where one exists.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

from ..results.check_result import CheckError, did_you_mean
from ..rewards.native import COUNTERPARTS, PREFIX
from . import environment

ORM_FILE = Path("rewards") / "orm.py"
#: what an ORM reads besides the completions (the dataset's answer column reaches it as ``solution``)
READS = {
    "accuracy": "solution (the answer column)",
    "cosine": "solution; cosine_* arguments",
    "soft_overlong": "soft_max_length, soft_cache_length arguments",
    "repetition": "repetition_* arguments",
    "toolbench": "solution (ToolBench trajectories)",
    "math": "ground_truths (MathORM's own convention)",
}


@functools.lru_cache(maxsize=4)
def _parse(orm_file: str) -> dict[str, dict[str, str]]:
    tree = ast.parse(Path(orm_file).read_text(encoding="utf-8"))
    docs: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            call = next(
                (
                    n
                    for n in node.body
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__call__"
                ),
                None,
            )
            doc = ast.get_docstring(node) or (ast.get_docstring(call) if call else None) or ""
            docs[node.name] = " ".join(doc.split("\n\n")[0].split())
    table = next(
        (
            n.value
            for n in tree.body
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Dict)
            and any(isinstance(t, ast.Name) and t.id == "orms" for t in n.targets)
        ),
        None,
    )
    out: dict[str, dict[str, str]] = {}
    for k, v in zip(table.keys if table else [], table.values if table else []):
        if isinstance(k, ast.Constant) and isinstance(v, ast.Name):
            out[k.value] = {"class": v.id, "doc": docs.get(v.id, "")}
    return out


def installed_orms(python: str | None = None) -> tuple[dict[str, dict[str, str]], str | None]:
    """({name: {"class", "doc"}} of the installed ms-swift, its version), or ({}, why not)."""
    info = environment.probe(python or environment.swift_python())
    where = info.get("swift_dir")
    if not where or not (Path(where) / ORM_FILE).is_file():
        return {}, None
    return _parse(str(Path(where) / ORM_FILE)), (info.get("versions") or {}).get("ms-swift")


def resolve(name: str, weight: float, python: str | None = None) -> dict[str, Any]:
    """One ``swift:<name>`` term checked against the installed ms-swift: {"name", "class", "weight"}."""
    orms, _ = installed_orms(python)
    if not orms:
        raise CheckError(
            "reward",
            f"'{PREFIX}{name}' is one of ms-swift's rewards, and ms-swift's environment cannot be read",
            f"run: {environment.SETUP_COMMAND}",
        )
    if name not in orms:
        raise CheckError(
            "reward",
            f"ms-swift has no reward '{name}'{did_you_mean(name, orms)}",
            f"its rewards: {', '.join(PREFIX + n for n in sorted(orms))}",
        )
    return {"name": name, "class": orms[name]["class"], "weight": weight}


def catalog_entries() -> list[dict[str, Any]]:
    """The reward catalog's ms-swift section (empty when ms-swift's environment is not set up)."""
    orms, version = installed_orms()
    out = []
    for name, orm in sorted(orms.items()):
        counterpart = COUNTERPARTS.get(name)
        desc = (
            (orm["doc"] or f"ms-swift's {orm['class']}")
            + " — on the swift engine only"
            + (f"; elsewhere use {counterpart}" if counterpart else "")
        )
        if name in READS:
            desc += f"; reads {READS[name]}"
        out.append(
            {
                "key": PREFIX + name,
                "label": f"ms-swift · {name}",
                "source": f"ms-swift {version}",
                "description": desc,
                "requires": ["ms-swift (its own environment)"],
                "missing": [],
                "factory": False,
                "args": {},
                "data_sources": [],
                "example": None,
                "aspect": "answer",
                "engines": ["swift"],
            }
        )
    return out
