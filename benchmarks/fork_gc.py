"""A fork of a preloaded process with its objects frozen for the garbage collector (engines/isolation/forking.py)
against a plain ``os.fork()``, in one process, alternating (ABBA): the CPU a child spends

(a) on one full collection (``gc.collect()``) and nothing else: the cost the freeze removes, alone;
(b) on the studio's real check of the shipped demo (``aworld_gui.worker.check_tasks.check`` in an
    :class:`engines.isolation.sandbox.IsolatedCall`, as the check worker runs every check), CPU of the sandbox's
    supervisor and worker (``RUSAGE_CHILDREN``), and its wall time.

The parent is preloaded as the check worker is (``check_tasks.preload``). Written to benchmarks/results/fork_gc.json.

    python -m benchmarks.fork_gc [--rounds 8]
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import time

from benchmarks.results_file import bootstrap_ci, write_result
from engines.isolation import forking


def measured(call) -> tuple[float, int, float]:
    """(CPU s, page faults, wall s) of the children ``call`` forks and waits for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    call()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return cpu, after.ru_minflt - before.ru_minflt, wall


def bare_collect() -> None:
    pid = forking.fork()
    if pid == 0:
        gc.collect()
        os._exit(0)
    os.waitpid(pid, 0)


def real_check(inputs: dict) -> None:
    from aworld_gui.worker.check_tasks import check
    from engines.isolation.sandbox import run_isolated

    out = run_isolated(check, {"inputs": inputs}, timeout_s=120)
    assert out.ok, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    from aworld_gui.core import inputs as inp
    from aworld_gui.worker import check_tasks

    check_tasks.preload()
    demo = inp.demo_inputs().to_dict()
    real_check(demo)  # warm the caches the check fills (datasets, tokenizer files) both ways alike
    results: dict = {}
    for name, call in (("gc_collect", bare_collect), ("demo_check", lambda: real_check(demo))):
        runs: dict[str, list] = {"plain": [], "frozen": []}
        for i in range(args.rounds):
            for how in ("plain", "frozen") if i % 2 == 0 else ("frozen", "plain"):
                forking.FREEZE = how == "frozen"
                runs[how].append(measured(call))
        forking.FREEZE = True
        pairs = list(zip(runs["plain"], runs["frozen"]))
        results[name] = {
            how: {
                "cpu_s_median": round(statistics.median(r[0] for r in rows), 4),
                "page_faults_median": int(statistics.median(r[1] for r in rows)),
                "wall_s_median": round(statistics.median(r[2] for r in rows), 4),
            }
            for how, rows in runs.items()
        }
        results[name]["cpu_saved_s_median"] = round(statistics.median(p[0] - f[0] for p, f in pairs), 4)
        results[name]["cpu_saved_s_ci95"] = bootstrap_ci(
            pairs, lambda ps: statistics.median(p[0] - f[0] for p, f in ps)
        )
        print(name, results[name])
    results["objects_in_parent"] = len(gc.get_objects())
    results["rounds"] = args.rounds
    write_result("fork_gc.json", results)


if __name__ == "__main__":
    main()
