"""Any dataset the API accepts → ms-swift's ``messages`` JSONL.

One line per prompt::

    {"messages": [{"role": "system", "content": <agent's system prompt>}, {"role": "user", "content": ...}],
     "solution": "C",                       # the reference answer: what ms-swift hands the rewards
     "tools": "[{...json schema...}]",      # only when the agent has tools (ms-swift's agent format)
     <the row's other columns>...}          # ms-swift passes every extra column to the rewards by name

For supervised fine-tuning (``swift sft``) the reference answer is appended as the assistant's message. Both
splits are written; the test split becomes ``--val_dataset``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..results.check_result import CheckError
from ..inputs.data import ColumnMap, prompt_messages, prompt_text, row_answer

SOLUTION = "solution"
#: columns ms-swift 4.6 reads or renames itself (RowPreprocessor.standard_keys and the keys its
#: MessagesPreprocessor maps to ``messages``/``system``); the row's own columns of these names are not
#: passed on. tests/test_swift_env.py checks this list against the installed ms-swift.
SWIFT_RESERVED = frozenset(
    {
        "messages",
        "images",
        "videos",
        "audios",
        "tools",
        "objects",
        "rejected_messages",
        "rejected_images",
        "rejected_videos",
        "rejected_audios",
        "rejected_tools",
        "rejected_objects",
        "positive_messages",
        "positive_images",
        "positive_videos",
        "positive_audios",
        "positive_tools",
        "positive_objects",
        "negative_messages",
        "negative_images",
        "negative_videos",
        "negative_audios",
        "negative_tools",
        "negative_objects",
        "rejected_response",
        "label",
        "channel",
        "margin",
        "teacher_prompt",
        "teacher_images",
        "chat_template_kwargs",
        "ref_audios",
        "audio_codes",
        "questions",
        "kinds",
        "options",
        "target_probs",
        "state",
        "question_ids",
        "criteria",
        "omnijev_column_keys",
        "omnijev_video",
        "conversation",
        "conversations",
        "system",
        "system_prompt",
        "image",
        "video",
        "audio",
        SOLUTION,
    }
)


def _plain(value: Any) -> Any:
    """JSON-safe values (numpy scalars, datetimes, NaN)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):
        return _plain(value.item())
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    return str(value)


def passed_columns(column_names: list[str], columns: ColumnMap) -> tuple[list[str], list[str]]:
    """(the row's columns handed to the rewards, those left out because ms-swift reserves their names)."""
    keep, dropped = [], []
    for c in column_names:
        if c == columns.prompt:
            continue
        (dropped if c in SWIFT_RESERVED else keep).append(c)
    return keep, dropped


def to_row(
    row: dict, columns: ColumnMap, system: str | None, keep: list[str], tools_json: str | None, sft: bool
) -> dict | None:
    """One dataset row → one ms-swift line (None for an empty prompt, which the dataset check reported)."""
    if not prompt_text(row[columns.prompt]).strip():
        return None
    messages = prompt_messages(row, columns, system)
    answer = row_answer(row, columns)
    if sft:
        messages = messages + [{"role": "assistant", "content": answer or ""}]
    out: dict[str, Any] = {"messages": messages}
    out.update({c: _plain(row.get(c)) for c in keep})
    out[SOLUTION] = answer
    if tools_json:
        out["tools"] = tools_json
    return out


def write_split(
    ds, path: Path, columns: ColumnMap, system: str | None, tools: list[dict] | None, sft: bool = False
) -> dict[str, Any]:
    """Write one split; returns what the dataset check reports about it."""
    keep, dropped = passed_columns(list(ds.column_names), columns)
    tools_json = json.dumps(tools, ensure_ascii=False) if tools else None
    path.parent.mkdir(parents=True, exist_ok=True)
    written = skipped = 0
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for row in ds:
            line = to_row(row, columns, system, keep, tools_json, sft)
            if line is None:
                skipped += 1
                continue
            if sft and not line[SOLUTION]:
                skipped += 1
                continue
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
            written += 1
    tmp.replace(path)
    if written == 0:
        raise CheckError(
            "dataset",
            f"no row of {path.stem} has a prompt{' and an answer' if sft else ''}",
            "fill the prompt column" + (" and the answer column (SFT learns from it)" if sft else ""),
        )
    return {
        "path": str(path),
        "rows": written,
        "skipped": skipped,
        "reward_columns": [SOLUTION, *keep],
        "not_passed": dropped,
    }


def first_messages(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return json.loads(f.readline())["messages"]
