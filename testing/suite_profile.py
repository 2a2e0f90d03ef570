"""Where the suite's time goes: a full run's durations (``AWORLD_TEST_DURATIONS``) summarised into
``benchmarks/results/suite_profile.json`` under a label ("before", "after", ...), and a table for docs/DEVELOPMENT.md.

    AWORLD_TEST_DURATIONS=/tmp/durations.json python -m pytest -q -n 2 --dist loadfile
    python -m testing.suite_profile /tmp/durations.json --label after --wall 840 --note "fresh clone, quiet"

``--wall``: the run's wall-clock seconds (the durations add up the tests' own times; under pytest-xdist two run at
once). The tiers are the conftest's: a file counts as browser, swift_env or train by its name.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "suite_profile.json"


def summarize(durations: dict[str, float], wall_s: float | None, note: str) -> dict:
    files: dict[str, list[float]] = {}
    for node, seconds in durations.items():
        files.setdefault(node.split("::", 1)[0], []).append(seconds)
    per_file = sorted(((sum(v), len(v), k) for k, v in files.items()), reverse=True)
    total = sum(durations.values())
    browser = sum(s for s, _, f in per_file if Path(f).name.startswith("test_browser_"))
    return {
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "note": note,
        "tests": len(durations),
        "sum_of_tests_s": round(total, 1),
        "wall_s": wall_s,
        "browser_files_s": round(browser, 1),
        "files": [{"file": f, "seconds": round(s, 1), "tests": n} for s, n, f in per_file],
        "slowest_tests": [
            {"test": k, "seconds": round(v, 1)} for k, v in sorted(durations.items(), key=lambda kv: -kv[1])[:30]
        ],
    }


def table(label: str, summary: dict, rows: int = 15) -> str:
    lines = [
        f"**{label}** — {summary['tests']} tests, their times add up to {summary['sum_of_tests_s'] / 60:.1f} min"
        + (f", {summary['wall_s'] / 60:.1f} min wall" if summary.get("wall_s") else "")
        + f" ({summary['note']})",
        "",
        "| seconds | tests | file |",
        "|---:|---:|---|",
    ]
    lines += [f"| {r['seconds']:.0f} | {r['tests']} | `{r['file']}` |" for r in summary["files"][:rows]]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("durations")
    ap.add_argument("--label", required=True)
    ap.add_argument("--wall", type=float, default=None)
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    durations = json.loads(Path(a.durations).read_text(encoding="utf-8"))
    doc = json.loads(RESULT.read_text(encoding="utf-8")) if RESULT.exists() else {}
    doc[a.label] = summarize(durations, a.wall, a.note)
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(table(a.label, doc[a.label]))


if __name__ == "__main__":
    main()
