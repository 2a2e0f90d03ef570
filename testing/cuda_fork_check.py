"""On a machine with a CUDA GPU: runs forked from the preloaded fork server (engines/fork_server.py) train on
the GPU. Written to ``$OUT/cuda_fork_check.json`` (or ``--out``); the result is kept in
benchmarks/results/cuda_fork_check.json (docs/DEVELOPMENT.md says how it was run).

1. what the fork server's preload did to CUDA: nothing may have touched it (a fork of a process that loaded the
   driver — ``torch.cuda.is_available()`` does — cannot use the GPU; the server then refuses to serve and every
   run is a fresh interpreter);
2. the control: a plain fork after ``torch.cuda.is_available()`` in the parent — can the child use the GPU? (what
   the guard protects against);
3. the demo trained on the GPU for a few steps, prepared in a fork (as the studio's worker does) and launched
   through the fork server and as a fresh interpreter: both finish on ``cuda``; Launch → first step of each;
4. where this process itself called into CUDA (``cuda_calls_here``).

    python -m testing.cuda_fork_check [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def control_fork_after_is_available() -> dict:
    """Fork after the parent asked torch.cuda.is_available(): what the child gets."""
    import torch

    available = torch.cuda.is_available()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            x = torch.ones(4, device="cuda") * 2
            out = {"ok": True, "sum": float(x.sum().item())}
        except Exception as e:  # noqa: BLE001 - what the child met is the result
            out = {"ok": False, "error": f"{type(e).__name__}: {e}"[:300]}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.waitpid(pid, 0)
    from engines.fork_server import cuda_touched

    return {"parent_is_available": available, "child": json.loads(data or b"{}"), "guard_says": cuda_touched()}


def first_step(run, timeout_s: float = 300) -> float:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        rows = run.read_jsonl("metrics.jsonl")
        if rows:
            return float(rows[0]["time"])
        if run.read_status().get("state") in ("failed", "finished", "stopped"):
            break
        time.sleep(0.05)
    raise RuntimeError(f"no step: {run.read_status()} {run.log_path.read_text()[-2000:]}")


POISONERS: list[str] = []  # where this process called into CUDA (a fork after it cannot use the GPU)


def trace_cuda_calls() -> None:
    """Record the stack of every call in this process that initializes CUDA or loads its driver."""
    import traceback

    import torch

    me = os.getpid()

    def wrap(owner, name):
        orig = getattr(owner, name, None)
        if orig is None:  # a torch built without CUDA
            return

        def traced(*a, **k):
            if os.getpid() == me and len(POISONERS) < 5:
                POISONERS.append(f"{name}: " + "".join(traceback.format_stack(limit=10)[:-1])[-2500:])
            return orig(*a, **k)

        setattr(owner, name, traced)

    wrap(torch._C, "_cuda_getDeviceCount")
    wrap(torch.cuda, "_lazy_init")


def launches() -> dict:
    from engines.runs.launcher import Launcher
    from engines.runs.lifecycle import spawn_run
    from engines.isolation.sandbox import run_isolated
    from engines.core.prepare import prepare_run
    from engines.runs.rundir import RunDir
    from testing import letters_demo as d

    out: dict = {}
    la = Launcher().start()
    la._settled.wait(600)
    out["fork_server"] = {
        "ready": la.ready(),
        "failed": la._failed,
        "preload_s": la.info.get("preload_s"),
        "preload_error": la.info.get("preload_error"),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for how in ("forked", "exec", "forked"):
            cfg = {"max_steps": 3, "save_steps": 1000, "eval_steps": 0}  # device: auto (the GPU where there is one)
            # prepared in a fork, as the studio's worker and a sweep's driver prepare runs: this process stays clean
            done = run_isolated(
                prepare_run,
                dict(
                    agent=d.AGENT,
                    train_dataset=d.TRAIN,
                    test_dataset=d.TEST,
                    reward_func=d.REWARD,
                    config=cfg,
                    train_engine_name="trl",
                    runs_dir=f"{tmp}/runs",
                ),
                timeout_s=300,
            )
            if not done.ok:
                raise RuntimeError(f"prepare: {done.failure()}")
            run = RunDir(done.value.path)
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
            t0 = time.time()
            spawn_run(run.path, launcher=la if how == "forked" else None)
            step = first_step(run) - t0
            while run.read_status().get("state") not in ("failed", "finished", "stopped"):
                time.sleep(0.2)
            st = run.read_status()
            out.setdefault("runs", []).append(
                {
                    "asked": how,
                    "spawned": st.get("spawned"),
                    "why": st.get("spawned_why"),
                    "state": st.get("state"),
                    "device": st.get("device"),
                    "first_step_s": round(step, 2),
                    "error": st.get("error"),
                    "log_tail": "" if st.get("state") == "finished" else run.log_path.read_text()[-1500:],
                }
            )
    la.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "cuda_fork_check.json"))
    ap.add_argument("--control", action="store_true", help="only the control, printed as JSON (a fresh process)")
    a = ap.parse_args()
    if a.control:
        print(json.dumps(control_fork_after_is_available()))
        return
    import subprocess

    import torch

    result = {"torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0]}
    trace_cuda_calls()
    try:
        result["launches"] = launches()
    except Exception as e:  # noqa: BLE001 - said in the result, with where CUDA was called
        result["launches"] = {"error": f"{type(e).__name__}: {e}"[:1500]}
    result["cuda_calls_here"] = POISONERS
    control = subprocess.run(
        [sys.executable, "-m", "testing.cuda_fork_check", "--control"], capture_output=True, text=True
    )
    result["control"] = (
        json.loads(control.stdout.strip().splitlines()[-1]) if control.returncode == 0 else control.stderr[-2000:]
    )
    result["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    Path(a.out).write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
