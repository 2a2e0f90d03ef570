"""The code is linted and formatted (ruff, configured in pyproject.toml), so the README's test command and CI check
both: a finding fails the suite with ruff's own report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_finds_nothing():
    out = _ruff("check", "--output-format", "concise", ".")
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_code_is_formatted():
    out = _ruff("format", "--check", ".")
    assert out.returncode == 0, out.stdout + out.stderr
