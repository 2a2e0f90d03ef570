"""Can verl train from here? What the verl interpreter has (GPUs, rollout backends, verl's trainer
extras), the engine's availability line with the install hint, and whether a Ray dashboard answers.

Importing this module imports neither verl, torch nor ray; :func:`probe` runs another interpreter in a
child process (this one only through ``importlib.util.find_spec`` and ``nvidia-smi``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from typing import Any

from ..plugins import interpreter_probe
from .compose import ROLLOUT_BACKENDS

PYTHON_ENV = "AWORLD_VERL_PYTHON"
INSTALL_HINT = (
    "on a CUDA machine, in an environment of its own: python -m venv .venv-verl && "
    ".venv-verl/bin/pip install 'verl[vllm]==0.9.1' cloudpickle, then "
    f"export {PYTHON_ENV}=$PWD/.venv-verl/bin/python (see docs/VERL.md)"
)
PROBED_MODULES = ("verl", "vllm", "sglang", "transfer_queue", "cloudpickle", "flash_attn")
_PROBES: dict[str, dict[str, Any]] = {}


def _detect_gpus_cheap() -> int:
    """nvidia-smi when present (no torch import), else torch."""
    exe = shutil.which("nvidia-smi")
    if exe:
        try:
            out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=10)
            return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
        except (OSError, subprocess.SubprocessError):
            pass
    if os.environ.get("CUDA_VISIBLE_DEVICES", "x").strip() in ("", "-1") or importlib.util.find_spec("torch") is None:
        return 0
    try:
        import torch

        return int(torch.cuda.device_count())
    except Exception:
        return 0


def verl_python(setting: str | None = None) -> str:
    """The interpreter that runs verl locally: the config's ``verl_python``, $AWORLD_VERL_PYTHON, or this one."""
    return os.path.expanduser(setting or os.environ.get(PYTHON_ENV) or sys.executable)


def probe(python: str | None = None) -> dict[str, Any]:
    """What the verl interpreter has: GPUs, rollout backends, verl's trainer extras (once per interpreter)."""
    python = verl_python(python)
    key = os.path.realpath(python)
    if key in _PROBES:
        return _PROBES[key]
    if key == os.path.realpath(sys.executable):
        out: dict[str, Any] = {m: importlib.util.find_spec(m) is not None for m in PROBED_MODULES}
        out["gpus"] = _detect_gpus_cheap()
    else:
        try:
            found = interpreter_probe.ask(python, {"modules": list(PROBED_MODULES), "gpus": True}, timeout_s=120)
            out = {**found["modules"], "gpus": found["gpus"]}
        except Exception as e:  # a wrong path, a broken environment: not cached, the user may fix it
            return {"error": f"{python}: {type(e).__name__}: {e}"}
    _PROBES[key] = out
    return out


def availability() -> tuple[bool, str]:
    """CUDA GPUs, a rollout backend and verl's extra dependencies (or a Ray cluster to submit to)."""
    missing = [m for m in ("verl", "ray", "hydra", "omegaconf") if importlib.util.find_spec(m) is None]
    if missing:
        return False, f"missing {', '.join(missing)} — pip install -r requirements.txt"
    address = os.environ.get("RAY_ADDRESS")
    if address:
        return True, f"Ray cluster at {address}: jobs are submitted there (its GPUs and its verl[vllm])"
    found = probe()
    python = verl_python()
    if "error" in found:
        return False, f"cannot run the verl Python {found['error']} — check ${PYTHON_ENV}"
    problems = []
    if not found.get("verl"):
        problems.append(f"verl is not installed in {python}")
    if not found.get("gpus"):
        problems.append("no CUDA GPU found")
    backend = next((b for b in ROLLOUT_BACKENDS if found.get(b)), None)
    if backend is None:
        problems.append("no rollout backend (vllm or sglang) importable")
    if not found.get("transfer_queue"):
        problems.append("verl's trainer dependencies are missing (transfer_queue: extra verl-core)")
    if problems:
        return False, "; ".join(
            problems
        ) + f" — {INSTALL_HINT}; or set ray_address / RAY_ADDRESS to a Ray cluster that has them"
    return True, f"{found['gpus']} CUDA GPU(s), rollout backend {backend} ({python})"


def with_install_hint(error: str) -> str:
    """verl's error line, with the install hint when it is a missing module."""
    if "No module named" in error or "ModuleNotFoundError" in error:
        return f"{error} — missing dependency: {INSTALL_HINT}"
    return error
