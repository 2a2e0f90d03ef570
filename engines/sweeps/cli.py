"""The sweep commands of ``aworld-train``:

    aworld-train sweep --agent A.yaml --train train.jsonl --test test.jsonl --reward R --config C.yaml \\
                       --engine trl --sweep sweep.yaml [--run-path runs] [--name N] [--detach]
    aworld-train sweep-run   runs/sweeps/<id>     # the driver (what --detach and the studio start)
    aworld-train sweep-stop  runs/sweeps/<id>     # its trials stop at a step boundary
    aworld-train sweep-resume runs/sweeps/<id> [--detach]
    aworld-train sweeps [--runs-dir runs]         # list sweeps with their best trial
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def cmd_sweep(a: argparse.Namespace) -> int:
    from ..results.check_result import CheckError, format_table
    from ..module_args import modules_from_args
    from .launch import prepare_sweep, spawn_sweep

    try:
        sd = prepare_sweep(a.sweep, modules_from_args(a), runs_dir=a.run_path, name=a.name, timeout_s=a.check_timeout)
    except CheckError as e:
        print(format_table([e.result]), file=sys.stderr)
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"sweep directory: {sd.path}", file=sys.stderr)
    if a.detach:
        pid = spawn_sweep(sd.path)
        print(json.dumps({"sweep_dir": str(sd.path), "pid": pid}))
        return 0
    return _drive(sd.path)


def _drive(path) -> int:
    from .driver import run_sweep
    from .sweep_dir import SweepDir

    try:
        outcome = run_sweep(path)
    except Exception as e:  # recorded in the sweep's status.json/events.jsonl
        print(f"sweep failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    best = SweepDir(path).read_summary().get("best")
    print(f"{outcome}: {path}", file=sys.stderr)
    print(json.dumps({"sweep_dir": str(path), "state": outcome, "best": best}, default=str))
    return 0


def cmd_sweep_run(a: argparse.Namespace) -> int:
    from .sweep_dir import SweepDir

    if not SweepDir(a.sweep_dir).exists():
        print(f"error: {a.sweep_dir} has no sweep.yaml, so it is not a prepared sweep", file=sys.stderr)
        return 2
    return _drive(SweepDir(a.sweep_dir).path)


def cmd_sweep_stop(a: argparse.Namespace) -> int:
    from .launch import stop_sweep

    print(stop_sweep(a.sweep_dir, reason="cli").get("state"))
    return 0


def cmd_sweep_resume(a: argparse.Namespace) -> int:
    from .launch import resume_sweep

    try:
        if a.detach:
            print(json.dumps({"sweep_dir": a.sweep_dir, "pid": resume_sweep(a.sweep_dir, detach=True)}))
            return 0
        resume_sweep(a.sweep_dir, detach=False)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def cmd_sweeps(a: argparse.Namespace) -> int:
    from ..runs.lifecycle import effective_status
    from .sweep_dir import list_sweeps

    for sd in list_sweeps(a.runs_dir):
        summary, st = sd.read_summary(), effective_status(sd)
        best = summary.get("best") or {}
        done = sum(1 for t in summary.get("trials", []) if t.get("state") in ("complete", "pruned", "failed"))
        print(
            f"{sd.run_id}  {st.get('state', '?'):9s} {done}/{st.get('trials', '?')} trials  "
            f"best: {best.get('value', '-')} {json.dumps(best.get('params') or {})}"
        )
    return 0


def add_parsers(sub) -> None:
    """Add the sweep commands to ``aworld-train``'s sub-parsers."""
    from ..module_args import add_module_args

    p = sub.add_parser("sweep", help="search settings with Optuna: many runs of one setup (see docs/SWEEPS.md)")
    add_module_args(p)
    p.add_argument("--sweep", required=True, help="sweep.yaml: trials, sampler, pruner, objective, params")
    p.add_argument("--run-path", default=os.environ.get("AWORLD_RUNS_DIR", "runs"))
    p.add_argument("--name", help="the sweep's name (its trials are named '<name> · trial k')")
    p.add_argument("--detach", action="store_true", help="drive it in the background; print the sweep directory")
    p.set_defaults(func=cmd_sweep)
    p = sub.add_parser("sweep-run", help="drive a prepared sweep directory (what --detach starts)")
    p.add_argument("sweep_dir")
    p.set_defaults(func=cmd_sweep_run)
    p = sub.add_parser("sweep-stop", help="stop a sweep: its trials stop at a step boundary")
    p.add_argument("sweep_dir")
    p.set_defaults(func=cmd_sweep_stop)
    p = sub.add_parser("sweep-resume", help="resume a stopped or killed sweep")
    p.add_argument("sweep_dir")
    p.add_argument("--detach", action="store_true")
    p.set_defaults(func=cmd_sweep_resume)
    p = sub.add_parser("sweeps", help="list sweeps")
    p.add_argument("--runs-dir", default=os.environ.get("AWORLD_RUNS_DIR", "runs"))
    p.set_defaults(func=cmd_sweeps)
