"""The test tiers of tests/conftest.py, run on a throwaway suite: markers by file, slow from the list, and a skip
that fails the run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _suite(tmp_path: Path, slow_ids: list[str]) -> Path:
    tests = tmp_path / "tests"
    tests.mkdir()
    shutil.copy(ROOT / "tests" / "conftest.py", tests / "conftest.py")
    shutil.copy(ROOT / "pytest.ini", tmp_path / "pytest.ini")
    (tests / "slow_tests.txt").write_text("# listed\n" + "".join(i + "\n" for i in slow_ids))
    (tests / "test_browser_page.py").write_text("def test_page():\n    pass\n")
    (tests / "test_plain.py").write_text("def test_quick():\n    pass\n\ndef test_listed():\n    pass\n")
    (tests / "test_skips.py").write_text("import pytest\n\ndef test_env():\n    pytest.skip('no chromium here')\n")
    return tmp_path


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )


def test_the_fast_tier_leaves_out_browser_and_listed_tests_and_a_skip_fails_the_run(tmp_path):
    folder = _suite(tmp_path, ["tests/test_plain.py::test_listed"])
    fast = _pytest(folder, "-m", "not slow", "--collect-only")
    assert "test_quick" in fast.stdout and "test_env" in fast.stdout
    assert "test_page" not in fast.stdout and "test_listed" not in fast.stdout
    browser = _pytest(folder, "-m", "browser", "--collect-only")
    assert "test_page" in browser.stdout and "test_quick" not in browser.stdout
    full = _pytest(folder)
    assert full.returncode == 1, full.stdout
    assert "skipped, and a skip is a failure in this suite: Skipped: no chromium here" in full.stdout
    assert "1 failed, 3 passed" in full.stdout
