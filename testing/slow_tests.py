"""Rewrite ``tests/slow_tests.txt`` and ``tests/file_seconds.json`` from a full run's durations.

    AWORLD_TEST_DURATIONS=/tmp/durations.json python -m pytest -q
    python -m testing.slow_tests /tmp/durations.json

Every test that took over 5 s (setup, call and teardown together) is listed; ``tests/conftest.py`` marks them
``slow``. Tests already in the browser, swift_env or train tiers are slow anyway and are not listed.
``file_seconds.json`` holds each file's seconds: conftest hands pytest-xdist the longest files first, so the run
does not end with one worker on a long file and the other idle.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import importlib.util

# tests/conftest.py by its path (a package named ``tests`` that some dependency installs would shadow the folder)
_spec = importlib.util.spec_from_file_location(
    "_aworld_conftest", Path(__file__).resolve().parent.parent / "tests" / "conftest.py"
)
_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_conftest)
SLOW_LIST, SLOW_SECONDS, FILE_SECONDS = _conftest.SLOW_LIST, _conftest.SLOW_SECONDS, _conftest.FILE_SECONDS
SWIFT_ENV_FILES, TRAIN_FILES = _conftest.SWIFT_ENV_FILES, _conftest.TRAIN_FILES


def main(argv: list[str]) -> int:
    durations = json.loads(Path(argv[0]).read_text(encoding="utf-8"))

    def tiered(node_id: str) -> bool:
        name = Path(node_id.split("::")[0]).name
        return name.startswith("test_browser_") or name in SWIFT_ENV_FILES | TRAIN_FILES

    slow = sorted(n for n, d in durations.items() if d > SLOW_SECONDS and not tiered(n))
    SLOW_LIST.write_text(
        "# tests over 5 s in a full run, outside the browser/swift_env/train tiers "
        "(python -m testing.slow_tests)\n" + "".join(n + "\n" for n in slow),
        encoding="utf-8",
    )
    print(f"{len(slow)} slow tests written to {SLOW_LIST}")
    files: dict[str, float] = {}
    for node_id, seconds in durations.items():
        name = node_id.split("::")[0]
        files[name] = files.get(name, 0.0) + seconds
    FILE_SECONDS.write_text(
        json.dumps({k: round(v, 1) for k, v in sorted(files.items(), key=lambda kv: -kv[1])}, indent=0) + "\n",
        encoding="utf-8",
    )
    print(f"{len(files)} files' seconds written to {FILE_SECONDS}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
