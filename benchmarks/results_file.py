"""What every benchmark here shares: percentiles, a note of the machine and its load, and the
results file under benchmarks/results/."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank)."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * len(s))) - 1))]


def bootstrap_ci(items: list, stat, n: int = 2000, seed: int = 0) -> list[float] | None:
    """95 % interval of ``stat(items)``, resampling ``items`` (e.g. the A-B pairs of an ABBA design)."""
    import random

    if len(items) < 3:
        return None
    rng = random.Random(seed)
    values = sorted(stat([rng.choice(items) for _ in items]) for _ in range(n))
    return [round(values[int(0.025 * n)], 4), round(values[int(0.975 * n) - 1], 4)]


def machine() -> dict:
    """CPUs, Python and the 1-minute load average: these machines are shared, so a result says how busy
    the machine was."""
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg_1m": round(os.getloadavg()[0], 2)}


def write_result(name: str, summary: dict) -> Path:
    """Stamp ``summary`` with the machine and the time, and write it to ``results/<name>``."""
    summary.setdefault("machine", machine())
    summary.setdefault("when", time.strftime("%Y-%m-%d %H:%M:%S"))
    out = RESULTS / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n")
    return out
