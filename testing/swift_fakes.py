"""A stand-in for a virtualenv being set up, for tests of the setup's progress in the studio: its
``bin/python`` answers ``-m pip install`` like pip does (a few "Collecting …" lines, then "Successfully
installed …", a couple of seconds) and the availability probe (engines/plugins/interpreter_probe.py) as if ms-swift were installed. The real setup
(`python -m engines setup swift`, ~2 GB, minutes) runs in the README's test command and tests/test_swift_env.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from engines.swift.environment import REQUIRED

SCRIPT = """#!/bin/sh
# stand-in interpreter of a virtualenv being set up (testing/swift_fakes.py)
case "$*" in
  *"-m pip install"*)
    for p in torch==2.13.0 ms-swift==4.6.0 msgspec==0.22.0 transformers==5.19.0 trl==0.29.1; do
      echo "Collecting $p"; sleep {pause}
    done
    echo "Installing collected packages: torch, ms-swift"; sleep {pause}
    echo "Successfully installed ms-swift-4.6.0 torch-2.13.0"
    exit 0 ;;
  *interpreter_probe.py*)
    echo '{probe}'
    exit 0 ;;
esac
echo "stand-in python: no $*" >&2
exit 1
"""


def stand_in_venv(folder: str | Path, pause_s: float = 0.6) -> Path:
    """A folder shaped like an unfinished virtualenv (no marker: unavailable until set up)."""
    folder = Path(folder)
    (folder / "bin").mkdir(parents=True, exist_ok=True)
    probe = json.dumps(
        {
            "modules": {m: True for m in REQUIRED},
            "versions": {
                "ms-swift": "4.6.0",
                "torch": "2.13.0",
                "transformers": "5.19.0",
                "trl": "0.29.1",
                "msgspec": "0.22.0",
            },
            "python": "3.11",
            "locations": {},
        }
    )
    python = folder / "bin" / "python"
    python.write_text(SCRIPT.format(pause=pause_s, probe=probe))
    python.chmod(0o755)
    (folder / "bin" / "pip").write_text("#!/bin/sh\n")
    return folder
