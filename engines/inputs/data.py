"""Load and check train/test datasets through Hugging Face ``datasets`` (Arrow, memory-mapped).

Accepted: csv, tsv, jsonl, json, parquet, a ``save_to_disk`` folder, a ``datasets.Dataset`` or
``DatasetDict``. The prompt is text or chat messages; the reference answer is a column such as
``answer``/``ground_truth``/``solution`` or verl's nested ``reward_model.ground_truth``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..results.check_result import CheckError, CheckResult
from .data_size import check_parquet, check_rows, check_text
from .row_location import describe_rows, locate_rows

PROMPT_KEYS = ("prompt", "question", "query", "input", "instruction", "problem", "messages")
ANSWER_KEYS = ("answer", "ground_truth", "solution", "reference", "target", "label", "output")
NESTED_ANSWER = "reward_model.ground_truth"
FORMATS = {".csv": "csv", ".tsv": "csv", ".jsonl": "json", ".json": "json", ".parquet": "parquet"}
SUPPORTED_TEXT = "csv, tsv, jsonl, json, parquet or a save_to_disk folder"
PREVIEW_ROWS = 3
#: a .json file up to this size is read whole first, to tell a wrapped object from a list of records
JSON_PEEK_BYTES = 256 << 20


@dataclass
class ColumnMap:
    prompt: str
    answer: str | None = None
    prompt_kind: str = "text"  # text | messages

    def to_dict(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "answer": self.answer}


@dataclass
class DataBundle:
    train: Any  # datasets.Dataset
    test: Any | None
    columns: ColumnMap
    report: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    train_source: str | None = None
    test_source: str | None = None

    def result(self) -> CheckResult:
        r = self.report
        msg = f"train {r['train']['rows']} rows"
        if r.get("test"):
            msg += f", test {r['test']['rows']} rows"
        msg += f"; prompt='{self.columns.prompt}' ({self.columns.prompt_kind})"
        msg += f", answer='{self.columns.answer}'" if self.columns.answer else ", no answer column"
        return CheckResult(
            "dataset", "warning" if self.warnings else "ok", msg, details=r, warnings=list(self.warnings)
        )


def _load_file(path: Path, role: str):
    import datasets

    datasets.disable_progress_bars()

    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise CheckError(
            "dataset",
            f"{role} file '{path.name}' has an unsupported format '{suffix or '(none)'}'",
            f"use {SUPPORTED_TEXT}",
        )
    if path.stat().st_size == 0:
        raise CheckError("dataset", f"{role} file '{path.name}' is empty", "add rows with a prompt column")
    if suffix != ".parquet":
        check_text(path, role, suffix)  # (before the .json peek, which reads the file whole)
    _check_file_kind(path, role, suffix)
    if suffix == ".parquet":
        check_parquet(path, role)
    kwargs: dict[str, Any] = {}
    if suffix == ".tsv":
        kwargs["delimiter"] = "\t"
    try:
        ds = datasets.load_dataset(FORMATS[suffix], data_files=str(path), split="train", **kwargs)
    except Exception as e:  # datasets wraps parser errors in several types
        cause = e.__cause__ or e
        if "corresponds to no data" in str(cause):  # e.g. a CSV with a header line only
            raise CheckError("dataset", f"{role} file '{path.name}' has no rows", "add rows with a prompt column")
        raise _read_error(path, role, suffix, cause)
    return ds


def _check_file_kind(path: Path, role: str, suffix: str) -> None:
    """Refuse, before the readers see it, a binary file in a text format, a parquet that is none, and a JSON
    object that wraps the records instead of being their list."""
    from ..files.user_files import binary_kind

    with open(path, "rb") as f:
        head = f.read(8192)
    if suffix == ".parquet":
        if not head.startswith(b"PAR1"):
            kind = binary_kind(head) or "text"
            raise CheckError(
                "dataset",
                f"{role} file '{path.name}' is not a parquet file (it is {kind})",
                "give a file written by to_parquet, or name it by its real format",
            )
        return
    kind = binary_kind(head)
    if kind:
        raise CheckError(
            "dataset", f"{role} file '{path.name}' is {kind}, not {suffix[1:]} text", f"use {SUPPORTED_TEXT}"
        )
    if suffix == ".json" and head.lstrip()[:1] in (b"{", b"[") and path.stat().st_size <= JSON_PEEK_BYTES:
        import json

        try:
            data = json.loads(path.read_bytes())
        except RecursionError:
            raise CheckError("dataset", f"{role} file '{path.name}' is nested too deep to read")
        except ValueError as e:
            if getattr(e, "msg", "") == "Extra data":  # JSON lines in a .json file: read as such
                return
            # the reader would accept some broken JSON (a trailing comma); say where it is broken
            raise CheckError(
                "dataset",
                f"{role} file '{path.name}' is not valid JSON: {getattr(e, 'msg', e)} at "
                f"line {getattr(e, 'lineno', '?')}, column {getattr(e, 'colno', '?')}",
                "fix the JSON syntax (double quotes, no trailing commas)",
            )
        if isinstance(data, dict):
            lists = {k: v for k, v in data.items() if isinstance(v, list) and v and isinstance(v[0], dict)}
            what = f"; its '{next(iter(lists))}' holds {len(next(iter(lists.values())))} records" if lists else ""
            raise CheckError(
                "dataset",
                f"{role} file '{path.name}' is one JSON object (keys: "
                f"{', '.join(list(map(str, data))[:8])}), not a list of records{what}",
                "put the list of records at the top level ([{...}, {...}]) or write JSON lines (.jsonl)",
            )
        if isinstance(data, list) and data and not all(isinstance(r, dict) for r in data):
            bad = next(i for i, r in enumerate(data) if not isinstance(r, dict))
            raise CheckError(
                "dataset",
                f"{role} file '{path.name}' is a JSON list whose record {bad + 1} is a "
                f"{type(data[bad]).__name__}, not an object",
                'make every record an object: {"prompt": ..., "answer": ...}',
            )


def _read_error(path: Path, role: str, suffix: str, cause: BaseException) -> CheckError:
    """What went wrong reading a dataset file, with the line (and column) where it did."""
    from ..files.user_files import find_bad_utf8

    text = f"{type(cause).__name__}: {str(cause)[:300]}"
    chain = [cause, getattr(cause, "__cause__", None), getattr(cause, "__context__", None)]
    if suffix != ".parquet" and (
        any(isinstance(c, UnicodeDecodeError) for c in chain)
        or "decode" in text
        or "utf-8" in text.lower()
        or "UTF8" in text
    ):
        bad = find_bad_utf8(path)
        if bad:
            line, col, byte = bad
            return CheckError(
                "dataset",
                f"{role} file '{path.name}' is not UTF-8 text: byte 0x{byte} at line {line}, "
                f"column {col} cannot be read",
                "save the file as UTF-8",
            )
    if suffix == ".json" and path.stat().st_size <= JSON_PEEK_BYTES:
        import json

        try:
            json.loads(path.read_bytes())
        except ValueError as e:
            if getattr(e, "msg", "") != "Extra data":  # (extra data: JSON lines in a .json file)
                return CheckError(
                    "dataset",
                    f"{role} file '{path.name}' is not valid JSON: {getattr(e, 'msg', e)} at "
                    f"line {getattr(e, 'lineno', '?')}, column {getattr(e, 'colno', '?')}",
                    "fix the JSON syntax (double quotes, no trailing commas)",
                )
    if suffix in (".jsonl", ".json"):
        mixed = _mixed_json_column(path)
        if mixed:
            name, first = mixed
            kinds = ", ".join(f"{kind} (line {line})" for kind, line in first.items())
            return CheckError(
                "dataset",
                f"{role} file '{path.name}': column '{name}' mixes value types — {kinds}; "
                "a column needs values of one type",
                f"write every '{name}' as the same type (e.g. text)",
                key=name,
            )
        found = _bad_json_line(path)
        if found:
            line, message = found
            return CheckError(
                "dataset",
                f"{role} file '{path.name}' line {line} is not a JSON object: {message}",
                'write one JSON object per line, e.g. {"prompt": "...", "answer": "..."}',
            )
    return CheckError(
        "dataset",
        f"cannot read {role} file '{path.name}' as {suffix[1:]}: {text}",
        "check that every row has the same columns and the file is valid",
    )


def _mixed_json_column(path: Path, limit: int = 1_000_000) -> tuple[str, dict[str, int]] | None:
    """(column, {kind: first line}) of the first column of a JSON-lines file whose values are of several kinds
    (text and numbers, text and objects, ...)."""
    import json

    first: dict[str, dict[str, int]] = {}
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if n > limit or not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except ValueError:
                return None
            if not isinstance(row, dict):
                return None
            for k, v in row.items():
                kind = _value_kind(v)
                if kind is not None:
                    first.setdefault(k, {}).setdefault(kind, n)
    for k, kinds in first.items():  # (called once the reader failed: any mix is a suspect)
        if len(kinds) > 1:
            return k, kinds
    return None


def _bad_json_line(path: Path, limit: int = 1_000_000) -> tuple[int, str] | None:
    """(line, what is wrong) of the first line of a JSON-lines file that is not a JSON object."""
    import json

    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if n > limit:
                return None
            if not raw.strip():
                continue
            try:
                value = json.loads(raw.rstrip(b"\r\n"))
            except ValueError as e:
                col = getattr(e, "colno", None)
                return n, f"{getattr(e, 'msg', e)}" + (f" at column {col}" if col else "")
            if not isinstance(value, dict):
                return n, f"it is a {type(value).__name__}"
    return None


def load_table(source: Any, role: str = "train"):
    """A ``datasets.Dataset`` from any accepted source, refused when it has more rows than a check can
    inspect (:mod:`engines.inputs.data_size`; a file is measured before it is read)."""
    ds = _load_any(source, role)
    check_rows(ds, role, source)
    return ds


def _load_any(source: Any, role: str):
    import datasets

    if isinstance(source, datasets.Dataset):
        return source
    if isinstance(source, datasets.DatasetDict):
        wanted = ("train",) if role == "train" else ("test", "validation", "valid", "eval")
        for name in wanted:
            if name in source:
                return source[name]
        return source[next(iter(source))]
    if isinstance(source, (list, tuple)) and source and isinstance(source[0], dict):
        return datasets.Dataset.from_list(list(source))
    if isinstance(source, (str, os.PathLike)):
        path = Path(os.path.expanduser(str(source)))
        if not path.exists():
            raise CheckError(
                "dataset", f"{role} dataset '{source}' does not exist", f"give the path of a {SUPPORTED_TEXT}"
            )
        if path.is_dir():
            try:
                loaded = datasets.load_from_disk(str(path))
            except Exception as e:
                raise CheckError(
                    "dataset",
                    f"folder '{path.name}' is not a datasets save_to_disk folder: {e}",
                    f"point at a file ({SUPPORTED_TEXT}) or a folder made by save_to_disk",
                )
            return _load_any(loaded, role)
        return _load_file(path, role)
    raise CheckError(
        "dataset",
        f"{role} dataset of type {type(source).__name__} is not supported",
        f"pass a path ({SUPPORTED_TEXT}) or a datasets.Dataset",
    )


def _is_messages(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) > 0
        and all(isinstance(m, dict) and "role" in m and "content" in m for m in value)
    )


def detect_columns(ds, mapping: dict | None = None) -> ColumnMap:
    cols = list(ds.column_names)
    mapping = {k: v for k, v in (mapping or {}).items() if v}
    prompt = mapping.get("prompt")
    if prompt and prompt not in cols:
        raise CheckError(
            "dataset",
            f"prompt column '{prompt}' is not in the dataset (columns: {', '.join(cols)})",
            "pick one of the dataset's columns",
        )
    if not prompt:
        prompt = next((k for k in PROMPT_KEYS if k in cols), None)
    if not prompt:
        raise CheckError(
            "dataset",
            f"no prompt column found (columns: {', '.join(cols) or 'none'})",
            f"name a column one of {', '.join(PROMPT_KEYS)} or map it: columns={{'prompt': '<col>'}}",
            studio_hint="choose it under 'Prompt column' below the data sets",
        )
    answer = mapping.get("answer")
    if answer and answer != NESTED_ANSWER and answer not in cols:
        raise CheckError(
            "dataset",
            f"answer column '{answer}' is not in the dataset (columns: {', '.join(cols)})",
            "pick one of the dataset's columns",
        )
    if not answer:
        answer = next((k for k in ANSWER_KEYS if k in cols and k != prompt), None)
        if answer is None and "reward_model" in cols:
            answer = NESTED_ANSWER
    first = ds[0][prompt] if len(ds) else ""
    kind = "messages" if _is_messages(first) else "text"
    return ColumnMap(prompt=prompt, answer=answer, prompt_kind=kind)


def prompt_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if _is_messages(value):
        return "\n".join(f"{m['role']}: {m['content']}" for m in value)
    return "" if value is None else str(value)


def row_answer(row: dict, columns: ColumnMap) -> str | None:
    if not columns.answer:
        return None
    if columns.answer == NESTED_ANSWER:
        rm = row.get("reward_model") or {}
        value = rm.get("ground_truth") if isinstance(rm, dict) else None
    else:
        value = row.get(columns.answer)
    return None if value is None else str(value)


def prompt_messages(row: dict, columns: ColumnMap, system_prompt: str | None = None) -> list[dict]:
    """The chat messages training sees: the agent's system prompt, then the row's prompt."""
    value = row[columns.prompt]
    if _is_messages(value):
        msgs = [{"role": m["role"], "content": m["content"]} for m in value]
    else:
        msgs = [{"role": "user", "content": prompt_text(value)}]
    if system_prompt and not any(m["role"] == "system" for m in msgs):
        msgs.insert(0, {"role": "system", "content": system_prompt})
    return msgs


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.strip().encode("utf-8"), digest_size=12).digest()


def _value_kind(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "text"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, (list, tuple)):
        return "list"
    return type(v).__name__


def mixed_type_columns(ds) -> dict[str, dict[str, int]]:
    """Columns whose values are of several kinds (text, number, list, ...): ``{column: {kind: first row}}``.
    (Arrow gives a column one type; ``datasets`` reads a JSON column of mixed kinds as ``Json``.)"""
    out: dict[str, dict[str, int]] = {}
    for name, feature in ds.features.items():
        if type(feature).__name__ != "Json":
            continue
        first: dict[str, int] = {}
        for start in range(0, len(ds), 10_000):
            for i, v in enumerate(ds[start : start + 10_000][name]):
                kind = _value_kind(v)
                if kind is not None and kind not in first:
                    first[kind] = start + i
        if len(first) > 1:
            out[name] = first
    return out


def _mixed_warnings(ds, columns: ColumnMap, role: str, source: Any) -> tuple[list[str], dict[str, dict]]:
    mixed = mixed_type_columns(ds)
    warnings = []
    for name, first in mixed.items():
        where = locate_rows(source, first.values())
        kinds = ", ".join(f"{kind} ({where[row]})" for kind, row in sorted(first.items(), key=lambda kv: kv[1]))
        if name == columns.prompt:
            continue  # the prompt check refuses non-text prompts, naming the rows
        if name == columns.answer:
            what = "answers are compared as text, so each is converted with str() (e.g. 1 → '1')"
        else:
            what = "rewards receive each value as it is (verl's parquet needs one type: it gets them as text)"
        warnings.append(f"{role}: column '{name}' mixes value types — {kinds}; {what}")
    return warnings, {k: {kind: row for kind, row in v.items()} for k, v in mixed.items()}


def inspect_table(ds, columns: ColumnMap, role: str, source: Any = None) -> tuple[dict, list[str], set[bytes]]:
    """Rows, columns, empty/non-text prompts, duplicates and a preview, in one streaming pass."""
    if len(ds) == 0:
        raise CheckError("dataset", f"{role} dataset has no rows", "add rows with a prompt")
    warnings: list[str] = []
    empty, bad, seen, dupes = [], [], set(), 0
    missing_answer = 0
    for start in range(0, len(ds), 10_000):
        batch = ds[start : start + 10_000]
        prompts = batch[columns.prompt]
        answers = batch.get(columns.answer) if columns.answer and columns.answer != NESTED_ANSWER else None
        if columns.answer == NESTED_ANSWER:
            answers = [(rm or {}).get("ground_truth") if isinstance(rm, dict) else None for rm in batch["reward_model"]]
        for i, value in enumerate(prompts):
            idx = start + i
            if not (isinstance(value, str) or _is_messages(value)):
                bad.append(idx)
                continue
            text = prompt_text(value)
            if not text.strip():
                empty.append(idx)
                continue
            d = _digest(text)
            if d in seen:
                dupes += 1
            seen.add(d)
            if answers is not None and (answers[i] is None or str(answers[i]).strip() == ""):
                missing_answer += 1
    name = f"{role} file '{Path(str(source)).name}'" if isinstance(source, (str, os.PathLike)) else f"{role} dataset"
    if bad:
        raise CheckError(
            "dataset",
            f"{name}: {len(bad)} prompt(s) are neither text nor chat messages (column "
            f"'{columns.prompt}': {describe_rows(source, bad, 3)})",
            "make the prompt column text, or a list of {role, content}",
            rows=bad[:20],
        )
    if len(empty) == len(ds):
        raise CheckError(
            "dataset", f"{name}: every prompt is empty (column '{columns.prompt}')", "fill the prompt column"
        )
    if empty:
        warnings.append(f"{role}: {len(empty)} empty prompt(s) ({describe_rows(source, empty, 3)}) will be skipped")
    if dupes:
        warnings.append(f"{role}: {dupes} duplicate prompt(s)")
    if missing_answer:
        warnings.append(f"{role}: {missing_answer} row(s) have no reference answer")
    mixed_warnings, mixed = _mixed_warnings(ds, columns, role, source)
    warnings += mixed_warnings
    preview = [{k: _short(v) for k, v in ds[i].items()} for i in range(min(PREVIEW_ROWS, len(ds)))]
    report = {
        "rows": len(ds),
        "columns": list(ds.column_names),
        "empty_prompts": len(empty),
        "duplicates": dupes,
        "missing_answers": missing_answer,
        "preview": preview,
        "mixed_types": mixed,
    }
    return report, warnings, seen


def _short(v: Any, n: int = 200) -> Any:
    if isinstance(v, str) and len(v) > n:
        return v[:n] + "…"
    return v


#: the most characters of a prompt or answer a check report carries (a preview, not the data)
PREVIEW_CHARS = 4000


def preview_text(text: str, n: int = PREVIEW_CHARS) -> str:
    """``text``, or its first ``n`` characters and how much was left out."""
    if not isinstance(text, str) or len(text) <= n:
        return text
    return f"{text[:n]}… [{len(text) - n:,} more characters not shown]"


def load_datasets(train: Any, test: Any = None, columns: dict | None = None) -> DataBundle:
    """Load, map columns, inspect and compare the splits. Raises :class:`CheckError`."""
    if train is None or (isinstance(train, str) and not train.strip()):
        raise CheckError("dataset", "no training dataset given", f"pass a path ({SUPPORTED_TEXT}) or a Dataset")
    train_ds = load_table(train, "train")
    cmap = detect_columns(train_ds, columns)
    warnings: list[str] = []
    if cmap.answer is None:
        warnings.append("no reference-answer column (answer/ground_truth/solution): rewards get answer=None")
    train_report, w, train_keys = inspect_table(train_ds, cmap, "train", train)
    warnings += w
    report: dict[str, Any] = {"columns": cmap.to_dict(), "prompt_kind": cmap.prompt_kind, "train": train_report}
    test_ds = None
    if test is None or (isinstance(test, str) and not test.strip()):
        warnings.append("no test dataset: evaluation falls back to the training set")
    else:
        test_ds = load_table(test, "test")
        for key in ("prompt", "answer"):
            col = getattr(cmap, key)
            if col and col != NESTED_ANSWER and col not in test_ds.column_names:
                raise CheckError(
                    "dataset",
                    f"test dataset has no '{col}' column (it has: {', '.join(test_ds.column_names)})",
                    "give both splits the same columns",
                    studio_hint="choose a test set with the same columns, or (none) under 'Test set'",
                )
        test_report, w, test_keys = inspect_table(test_ds, cmap, "test", test)
        warnings += w
        overlap = len(test_keys & train_keys)
        test_report["overlap_with_train"] = overlap
        if overlap:
            warnings.append(f"{overlap} test prompt(s) also appear in the training set")
        report["test"] = test_report
    source = lambda s: str(Path(s).resolve()) if isinstance(s, (str, os.PathLike)) else None  # noqa: E731
    return DataBundle(
        train=train_ds,
        test=test_ds,
        columns=cmap,
        report=report,
        warnings=warnings,
        train_source=source(train),
        test_source=source(test) if test_ds is not None else None,
    )


def save_for_spec(ds, folder: Path, name: str) -> str:
    """Persist an in-memory dataset into the run dir so run.yaml can point at it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.parquet"
    ds.to_parquet(str(path))
    return str(path)
