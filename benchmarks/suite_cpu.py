"""Where the suite's CPU goes, by kind of process: runs a command (the README's test command, say) and samples every
process on the machine every ``--every`` seconds, keeping each one's last CPU time (user + system, from
``/proc/<pid>/stat``), then sums them by what the process is (its command line, shortened to a kind: Chromium,
a pytest worker, the studio, a run forked from the fork server, ms-swift, Ray, ...).

The suite is CPU-bound on a 2-core machine (docs/DEVELOPMENT.md): its wall time is its CPU time over the cores.
This says which kind of process to make cheaper. A process that lives less than one interval is missed, and one
that ends loses its last interval: the total is a lower bound.

It also charges each interval's CPU to a test file: tests/conftest.py writes the test each pytest process runs to
``$AWORLD_TEST_NOW/<pid>`` (set here); a process's CPU goes to the file whose test its nearest pytest ancestor
runs (a studio, its check worker, a run it forked, Chromium: all descendants of the worker that started them),
else to "no test (reparented)".

    python -m benchmarks.suite_cpu [--every 0.25] [--name suite_cpu.json] -- .venv/bin/python -m pytest -q -n 3 --dist loadfile
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.results_file import write_result

TICK = os.sysconf("SC_CLK_TCK")


def cpu_and_start(pid: str) -> tuple[float, str, str] | None:
    """(CPU seconds, start time in ticks, parent pid) of one process, or None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK, fields[19], fields[1]


def test_file_of(pid: str, parents: dict[str, str], now: dict[str, str]) -> str:
    """The test file whose test the nearest pytest ancestor of ``pid`` (itself included) runs now."""
    for _ in range(64):
        if pid in now:
            return now[pid].split("::", 1)[0]
        pid = parents.get(pid, "0")
        if pid in ("0", "1"):
            break
    return "no test (reparented, or between tests)"


def kind_of(pid: str) -> str:
    """A short name for what a process is, from its command line."""
    try:
        argv = [a for a in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0") if a]
    except OSError:
        return "?"
    if not argv:
        return "kernel or gone"
    exe = os.path.basename(argv[0])
    line = " ".join(argv)
    if "chrom" in exe or "chrome" in line.split(" ")[0]:
        kind = next((a.split("=", 1)[1] for a in argv if a.startswith("--type=")), "browser")
        return f"chromium {kind}"
    if "ray::" in line or exe in ("raylet", "gcs_server") or "/ray/" in line:
        return "ray " + (exe if exe in ("raylet", "gcs_server") else "worker or dashboard")
    if "exec(eval(sys.stdin" in line or "xdist" in line:
        return "pytest worker"
    if "pytest" in line:
        return "pytest main"
    if "/swift" in line or "swift" in exe:
        return "ms-swift " + exe
    if "-m" in argv:
        module = argv[argv.index("-m") + 1] if argv.index("-m") + 1 < len(argv) else "?"
        rest = argv[argv.index("-m") + 2 : argv.index("-m") + 3]
        return f"python -m {module} {' '.join(rest)}".strip()
    if "-c" in argv:  # a process's argv can end at "-c" (a shell's, one still being set up): no code to show
        code = argv[argv.index("-c") + 1 : argv.index("-c") + 2]
        return f"python -c {code[0][:40]!r}" if code else f"{exe} -c"
    return exe + (" " + os.path.basename(argv[1]) if len(argv) > 1 and exe.startswith("python") else "")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=float, default=0.25)
    ap.add_argument("--name", default="suite_cpu.json")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    before = {p: cpu_and_start(p) for p in os.listdir("/proc") if p.isdigit()}
    seen: dict[tuple[str, str], list] = {}  # (pid, start) -> [kind, cpu at first sight, last cpu]
    by_file: dict[str, float] = defaultdict(float)
    now_dir = Path(tempfile.mkdtemp(prefix="test-now-"))
    start = time.time()
    child = subprocess.Popen(command, env={**os.environ, "AWORLD_TEST_NOW": str(now_dir)})
    while child.poll() is None:
        sample = {}
        for pid in os.listdir("/proc"):
            if pid.isdigit() and (got := cpu_and_start(pid)) is not None:
                sample[pid] = got
        parents = {pid: got[2] for pid, got in sample.items()}
        tests = {}
        for f in now_dir.iterdir():
            try:
                tests[f.name] = f.read_text(encoding="utf-8")
            except OSError:
                pass
        for pid, (cpu, started, _) in sample.items():
            key = (pid, started)
            if key not in seen:
                old = before.get(pid)
                first = old[0] if old is not None and old[1] == started else 0.0
                seen[key] = [kind_of(pid), first, first]
            by_file[test_file_of(pid, parents, tests)] += cpu - seen[key][2]
            seen[key][2] = cpu
        time.sleep(args.every)
    wall = time.time() - start
    shutil.rmtree(now_dir, ignore_errors=True)
    by_kind: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for kind, first, last in seen.values():
        if last - first > 0:
            by_kind[kind][0] += last - first
            by_kind[kind][1] += 1
    total = sum(v[0] for v in by_kind.values())
    rows = sorted(by_kind.items(), key=lambda kv: -kv[1][0])
    for kind, (cpu, n) in rows[:30]:
        print(f"{cpu:9.1f} CPU-s {100 * cpu / total:5.1f} %  {n:5d} processes  {kind}")
    print(f"{total:9.1f} CPU-s in all over {wall:.0f} s wall ({total / wall:.2f} cores busy); exit {child.returncode}")
    files = sorted(by_file.items(), key=lambda kv: -kv[1])
    for name, cpu in files[:40]:
        print(f"{cpu:9.1f} CPU-s {100 * cpu / total:5.1f} %  {name}")
    write_result(
        args.name,
        {
            "command": command,
            "exit": child.returncode,
            "wall_s": round(wall, 1),
            "cpu_s": round(total, 1),
            "by_kind": [{"kind": k, "cpu_s": round(c, 1), "processes": n} for k, (c, n) in rows],
            "by_test_file": {name: round(cpu, 1) for name, cpu in files},
        },
    )
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
