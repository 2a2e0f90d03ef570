"""Difficulty filtering from a probe: the training rows whose pass rate lies inside a band (default strictly between
0 and 1: the prompts the model solves sometimes, the only ones whose GRPO groups have spread) written as JSON lines,
the rows dropped counted by reason, and where the file came from in ``<file>.provenance.json`` beside it — which a run
trained on the file records in its ``run.yaml`` (``data.provenance``). The test set is never filtered."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ..results.check_result import CheckError
from ..runs.rundir import atomic_write_text

PROVENANCE_SUFFIX = ".provenance.json"
DEFAULT_BAND = (0.0, 1.0)


def parse_band(value: Any) -> tuple[float, float]:
    """``"0,1"``, ``(0, 1)`` → (low, high) with 0 ≤ low < high ≤ 1; a CheckError says what is wrong otherwise."""
    if value is None:
        return DEFAULT_BAND
    parts = value.split(",") if isinstance(value, str) else list(value)
    try:
        low, high = (float(p) for p in parts)
    except (TypeError, ValueError):
        raise CheckError(
            "probe",
            f"band {value!r} is not two numbers",
            "give the band as LOW,HIGH, e.g. 0,1 (kept: LOW < pass < HIGH)",
        ) from None
    if not (0.0 <= low < high <= 1.0):
        raise CheckError(
            "probe",
            f"band {low},{high} is not a range of pass rates",
            "give 0 ≤ LOW < HIGH ≤ 1, e.g. 0,1 (kept: LOW < pass < HIGH)",
        )
    return low, high


def provenance_path(path: str | os.PathLike) -> Path:
    return Path(f"{path}{PROVENANCE_SUFFIX}")


def read_provenance(path: str | os.PathLike | None) -> dict[str, Any] | None:
    """The provenance beside a filtered training file, or None (no file, or not one this module wrote)."""
    if not path or not isinstance(path, (str, os.PathLike)):
        return None
    side = provenance_path(path)
    try:
        doc = json.loads(side.read_text(encoding="utf-8")) if side.is_file() else None
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("kind") == "probe_filter" else None


def filter_rows(report: dict[str, Any], n_rows: int, band: tuple[float, float]) -> dict[str, Any]:
    """Which training rows to keep, and why each other one goes: ``kept`` (row indices), ``dropped`` by reason."""
    low, high = band
    rates = {int(p["row"]): float(p["pass_rate"]) for p in report["prompts"]}
    kept, dropped = [], {"at or below the band": [], "at or above the band": [], "not probed": []}
    for i in range(n_rows):
        rate = rates.get(i)
        if rate is None:
            dropped["not probed"].append(i)
        elif rate <= low:
            dropped["at or below the band"].append(i)
        elif rate >= high:
            dropped["at or above the band"].append(i)
        else:
            kept.append(i)
    return {"kept": kept, "dropped": dropped}


def write_filtered(report: dict[str, Any], table: Any, out: str | os.PathLike, band: Any = None) -> dict[str, Any]:
    """Write the rows of ``table`` (the probed training set) inside ``band`` to ``out`` (JSON lines) and its
    provenance beside it; returns what was kept and dropped, by reason."""
    low, high = parse_band(band)
    out = Path(out).expanduser()
    if out.suffix.lower() != ".jsonl":
        raise CheckError("probe", f"{out.name}: the filtered training set is written as JSON lines", "name it *.jsonl")
    source = report.get("inputs", {}).get("dataset", {}).get("source")
    if source and Path(source).resolve() == out.resolve():
        raise CheckError("probe", f"{out} is the training set itself", "write the filtered rows to another file")
    if not out.parent.is_dir():
        raise CheckError("probe", f"{out.parent} is not a folder", "write the filtered rows into an existing folder")
    chosen = filter_rows(report, len(table), (low, high))
    if not chosen["kept"]:
        raise CheckError(
            "probe",
            f"no training row has a pass rate inside {low} < pass < {high} "
            f"({', '.join(f'{len(v)} {k}' for k, v in chosen['dropped'].items() if v)})",
            "widen the band, or probe more prompts (--prompts) or samples (--samples)",
        )
    lines = [json.dumps(table[i], ensure_ascii=False, default=str) for i in chosen["kept"]]
    atomic_write_text(out, "\n".join(lines) + "\n")
    summary = {
        "kind": "probe_filter",
        "path": str(out),
        "source": source,
        "source_sha256": report.get("inputs", {}).get("dataset", {}).get("sha256"),
        "probe": report.get("key"),
        "probe_path": report.get("path"),
        "band": [low, high],
        "rule": f"{low} < pass rate < {high} (pass: reward ≥ {report['pass_rates']['pass_threshold']})",
        "rows": len(table),
        "kept": len(chosen["kept"]),
        "dropped": {k: len(v) for k, v in chosen["dropped"].items()},
        "created": time.time(),
    }
    per_step = (report.get("settings") or {}).get("prompts_per_step")
    if per_step and len(chosen["kept"]) < per_step:  # the config check refuses a set smaller than one step's prompts
        summary["fewer_than_a_step"] = per_step
    atomic_write_text(provenance_path(out), json.dumps(summary, ensure_ascii=False, indent=1))
    return summary
