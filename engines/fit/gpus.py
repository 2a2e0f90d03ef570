"""The machine's CUDA GPUs, as the checks see them: read once per process without initializing CUDA in it.

A process that has called into CUDA — ``torch.cuda.is_available()`` loads the driver, ``get_device_name`` or
``is_bf16_supported`` initialize it — cannot fork a child that uses the GPU ("Cannot re-initialize CUDA in forked
subprocess"). Checks run in forks (engines/isolation/sandbox.py), so a check that asked torch directly failed on a
GPU machine as soon as its parent had checked once in-process (a second ``AgentTrainer`` in a notebook, a second
``prepare_run``: seen on an H100, testing/cuda_fork_check.py). So checks ask this module instead:

* :func:`cuda_devices` — ``[{name, total_memory, bf16}]``, read in a short-lived fork the first time (or from torch
  where this process initialized CUDA itself) and kept: forks inherit it and never ask the driver;
* :func:`cuda_available`, :func:`bf16_supported`, :func:`device_count` — read from it;
* :func:`free_memory` — each GPU's free memory now, from ``nvidia-smi`` (never this process's CUDA).

Training itself (the trainer, its metrics) uses torch.cuda as usual: it forks no check after it starts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

_snapshot: dict[str | None, list[dict]] = {}  # CUDA_VISIBLE_DEVICES → the devices (inherited by forks)


def _query() -> list[dict]:
    import torch

    out = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        out.append({"name": p.name, "total_memory": int(p.total_memory), "bf16": bool(torch.cuda.is_bf16_supported())})
    return out


_fork_errors: dict[str | None, str] = {}  # CUDA_VISIBLE_DEVICES → why a fork of this process could not use CUDA


def _in_a_fork() -> tuple[list[dict], str | None]:
    """(the devices, None), or ([], why) when the fork could not use CUDA: a fork of this process cannot."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        try:
            out = {"devices": _query(), "error": None}
        except Exception as e:  # noqa: BLE001 - said to the parent
            out = {"devices": [], "error": f"{type(e).__name__}: {e}"[:500]}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    try:
        out = json.loads(data or b"{}")
        return list(out.get("devices") or []), out.get("error")
    except ValueError:
        return [], "the fork that read the GPUs said nothing"


def fork_cuda_error() -> str | None:
    """Why a fork of this process could not use CUDA, as :func:`cuda_devices` found when it read the GPUs in one
    (None: it could, or there is no CUDA here)."""
    cuda_devices()
    return _fork_errors.get(os.environ.get("CUDA_VISIBLE_DEVICES"))


def _torch():
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch
        except ImportError:
            return None
    return torch


def cuda_devices() -> list[dict]:
    """``[{name, total_memory, bf16}]`` for each visible CUDA GPU (empty without torch, CUDA or a GPU)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible in _snapshot:
        return [dict(d) for d in _snapshot[visible]]
    torch = _torch()
    try:
        if torch is None or not torch.backends.cuda.is_built():
            devices = []
        elif torch.cuda.is_initialized():
            devices = _query()
        elif getattr(torch.cuda, "_is_in_bad_fork", lambda: False)():
            devices = []  # a fork of a process that initialized CUDA and never read this: it cannot ask now
        else:
            # even counting them may touch the driver (torch.cuda.device_count falls back to cudaGetDeviceCount where
            # NVML cannot answer): all of it in the fork
            devices, error = _in_a_fork()
            if error and "no CUDA GPUs are available" not in error and "Found no NVIDIA driver" not in error:
                _fork_errors[visible] = error
    except Exception:  # noqa: BLE001 - a broken driver: no GPU for us
        devices = []
    _snapshot[visible] = devices
    return [dict(d) for d in devices]


def cuda_available() -> bool:
    return bool(cuda_devices())


def device_count() -> int:
    return len(cuda_devices())


def bf16_supported() -> bool:
    devices = cuda_devices()
    return bool(devices) and all(d["bf16"] for d in devices)


def free_memory() -> list[tuple[int, str]]:
    """(free bytes, name) of each visible GPU now, from ``nvidia-smi``; empty without one (or without nvidia-smi)."""
    exe = shutil.which("nvidia-smi")
    if not exe or not cuda_devices():
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=index,memory.free,name", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    rows = {}
    for line in out.stdout.splitlines():
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit():
            rows[parts[0]] = (int(parts[1]) << 20, parts[2])
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    wanted = [v.strip() for v in visible.split(",")] if visible else sorted(rows, key=int)
    return [rows[i] for i in wanted if i in rows]
