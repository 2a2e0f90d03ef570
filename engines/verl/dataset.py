"""Any dataset the API accepts → verl's RL parquet (the rows verl's ``RLHFDataset`` reads).

One row per prompt, as in verl's own preprocessing examples (``examples/data_preprocess/gsm8k.py``)::

    {"data_source": "letters",
     "prompt": [{"role": "system", "content": <agent's system prompt>}, {"role": "user", "content": ...}],
     "ability": "aworld",
     "reward_model": {"style": "rule", "ground_truth": "C"},
     "extra_info": {"index": 0, "split": "train", <the row's other columns>...},
     "agent_name": "tool_agent"}          # only when the agent has tools

A parquet that already has verl's columns (``prompt`` as chat messages, ``data_source``,
``reward_model``) is taken as is (copied byte for byte into the run dir).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from ..results.check_result import CheckError
from ..inputs.data import ColumnMap, mixed_type_columns, prompt_messages, prompt_text, row_answer

NATIVE_COLUMNS = ("prompt", "data_source", "reward_model")
TOOL_AGENT_LOOP = "tool_agent"  # verl's built-in multi-turn tool loop (verl.experimental.agent_loop)
DEFAULT_ABILITY = "aworld"
#: extra_info keys verl itself reads or writes; dataset columns never go there under these names
RESERVED_EXTRA = (
    "index",
    "split",
    "tools_kwargs",
    "interaction_kwargs",
    "need_tools_kwargs",
    "num_turns",
    "rollout_reward_scores",
)


def is_verl_native(ds, columns: ColumnMap) -> bool:
    names = set(ds.column_names)
    if not all(c in names for c in NATIVE_COLUMNS) or columns.prompt != "prompt":
        return False
    return columns.prompt_kind == "messages"


def data_source_name(source: str | None, fallback: str = "aworld") -> str:
    if source:
        stem = Path(source).stem if not Path(source).is_dir() else Path(source).name
        clean = "".join(c if c.isalnum() or c in "-_." else "_" for c in stem)
        if clean:
            return clean
    return fallback


def extra_columns(ds, columns: ColumnMap) -> list[str]:
    """The row's other columns, passed to the reward (as in the TRL engine) through ``extra_info``."""
    # The answer column stays (under its own name) so a TRL-style reward reading kwargs["solution"]
    # sees the same columns under verl as under trl; verl's ground truth also gets it.
    skip = {columns.prompt, "data_source", "reward_model", "extra_info", "agent_name", "ability"}
    return [c for c in ds.column_names if c not in skip and c not in RESERVED_EXTRA]


def _jsonable(value: Any) -> Any:
    """Parquet structs need one type per column; keep values plain (numpy/datetime → python/str)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return item()
        except (TypeError, ValueError):
            pass
    return str(value)


def convert_table(
    ds, columns: ColumnMap, system_prompt: str | None, data_source: str, split: str, tools: bool, out_path: Path
) -> dict[str, Any]:
    """Write ``ds`` as verl rows to ``out_path``; returns counts for the check report."""
    import datasets

    extras = extra_columns(ds, columns)
    as_text = set(mixed_type_columns(ds))  # a parquet column has one type: mixed values go as text (the check said so)
    has_source = "data_source" in ds.column_names
    has_ability = "ability" in ds.column_names
    has_extra = "extra_info" in ds.column_names

    def to_verl(row: dict, index: int) -> dict:
        extra: dict[str, Any] = {}
        if has_extra and isinstance(row.get("extra_info"), dict):
            extra.update(_jsonable(row["extra_info"]))
        extra.update(
            {
                c: (None if row.get(c) is None else str(row.get(c))) if c in as_text else _jsonable(row.get(c))
                for c in extras
            }
        )
        extra["index"] = index
        extra["split"] = split
        out = {
            "data_source": str(row.get("data_source") or data_source) if has_source else data_source,
            "prompt": prompt_messages(row, columns, system_prompt),
            "ability": str(row.get("ability") or DEFAULT_ABILITY) if has_ability else DEFAULT_ABILITY,
            "reward_model": {"style": "rule", "ground_truth": row_answer(row, columns)},
            "extra_info": extra,
        }
        if tools:
            out["agent_name"] = TOOL_AGENT_LOOP
        return out

    total = len(ds)
    rows = [to_verl(row, i) for i, row in enumerate(ds) if prompt_text(row[columns.prompt]).strip()]
    if not rows:
        raise CheckError("dataset", f"{split} dataset has no non-empty prompt", "fill the prompt column")
    table = datasets.Dataset.from_list(rows)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    table.to_parquet(str(out_path))
    return {"rows": len(rows), "skipped_empty": total - len(rows), "path": str(out_path), "extra_columns": extras}


def place_native(source: str | None, ds, out_path: Path) -> dict[str, Any]:
    """A verl-native table goes into the run dir unchanged (a hard link or a byte copy of the file)."""
    out_path.parent.mkdir(parents=True, exist_ok=True)
    if out_path.exists():
        out_path.unlink()
    if source and str(source).endswith(".parquet") and Path(source).is_file():
        try:
            os.link(source, out_path)
        except OSError:
            shutil.copyfile(source, out_path)
    else:
        ds.to_parquet(str(out_path))
    return {"rows": len(ds), "skipped_empty": 0, "path": str(out_path), "native": True}


def read_rows(path: str | Path, n: int | None = None) -> list[dict]:
    """The first ``n`` rows of a parquet (for checks and tests)."""
    import pyarrow.parquet as pq

    table = pq.read_table(str(path))
    if n is not None:
        table = table.slice(0, n)
    return table.to_pylist()
