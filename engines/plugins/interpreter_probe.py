"""What another Python interpreter has, asked without importing it here: run by path in that interpreter
(``<python> interpreter_probe.py '<json request>'``; standard library only, since that interpreter has neither this
repository nor its dependencies) by :func:`ask`. The request names the ``modules`` to find (never imported), the
``distributions`` whose versions to read, and whether to count CUDA ``gpus`` (which imports torch); the answer is
one JSON line: ``{"modules": {name: bool}, "versions": {dist: str|None}, "python": "3.11.x", "gpus": n,
"locations": {module: its folder}}``."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import subprocess
import sys
from typing import Any


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except Exception:  # noqa: BLE001 - not installed, or broken metadata: no version
        return None


def _gpus() -> int:
    try:
        import torch

        return int(torch.cuda.device_count())
    except Exception:  # noqa: BLE001 - no torch, or a broken CUDA: no GPU to use
        return 0


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The probe itself (what the other interpreter runs)."""
    specs = {m: importlib.util.find_spec(m) for m in request.get("modules", [])}
    out: dict[str, Any] = {
        "modules": {m: s is not None for m, s in specs.items()},
        "versions": {d: _version(d) for d in request.get("distributions", [])},
        "python": sys.version.split()[0],
        "locations": {m: next(iter(s.submodule_search_locations or []), None) for m, s in specs.items() if s},
    }
    if request.get("gpus"):
        out["gpus"] = _gpus()
    return out


def ask(python: str, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """``python``'s answer to ``request``; raises what running it raises (a wrong path, a time-out, no JSON)."""
    res = subprocess.run([python, __file__, json.dumps(request)], capture_output=True, text=True, timeout=timeout_s)
    return json.loads(res.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    print(json.dumps(answer(json.loads(sys.argv[1]))))
