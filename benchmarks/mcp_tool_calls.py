"""What calling a tool through MCP costs a rollout: one ``add`` call as the model's tool call makes it, through the
Python function, the demo MCP server over stdio, and the same server over streamable HTTP (each MCP call through
the process's pool: one session, reused). Interleaved rounds, so the machine's load falls on all three alike.

    python -m benchmarks.mcp_tool_calls [--calls 300] [--rounds 5]

Writes ``benchmarks/results/mcp_tool_calls.json``: per path, the p50/p95 of a call in ms (all rounds pooled)
and, per round, the median of each path (to compare within a round on a busy machine).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.results_file import pct, write_result
from engines import load_agent
from engines.tools.mcp_client import close_default_pool
from engines.isolation.processes import terminate_tree
from testing import free_port

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "assets/mcp/calculator_server.py"


def python_add():
    spec = importlib.util.spec_from_file_location("calc_tools", ROOT / "assets/tools/calculator.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.add


def mcp_add(entry: dict):
    spec = load_agent(
        {
            "model": str(ROOT / "assets/models/tiny-calc"),
            "mcp_config": {"mcpServers": {"calc": entry}},
            "mcp_servers": ["calc"],
            "black_tool_actions": {"calc": ["multiply"]},
        }
    )
    (add,) = spec.tool_callables()
    return add


def start_http() -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--transport", "streamable-http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}/mcp"
        time.sleep(0.2)
    terminate_tree(proc.pid)
    raise SystemExit("the HTTP server did not start")


def timed(fn, calls: int) -> list[float]:
    out = []
    for i in range(calls):
        t0 = time.perf_counter()
        result = fn(a=i, b=1)
        out.append((time.perf_counter() - t0) * 1000)
        assert int(result) == i + 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    http, url = start_http()
    try:
        paths = {
            "python": python_add(),
            "mcp_stdio": mcp_add({"command": "python", "args": [str(SERVER)]}),
            "mcp_http": mcp_add({"type": "streamable-http", "url": url}),
        }
        for fn in paths.values():
            timed(fn, 20)  # warm: sessions opened, code paths hot
        samples = {name: [] for name in paths}
        rounds = []
        for r in range(args.rounds):
            order = list(paths) if r % 2 == 0 else list(paths)[::-1]
            medians = {}
            for name in order:
                ms = timed(paths[name], args.calls)
                samples[name] += ms
                medians[name] = round(pct(ms, 0.5), 4)
            rounds.append(medians)
            print(f"round {r + 1}: " + ", ".join(f"{k} {v:.4f} ms" for k, v in medians.items()), flush=True)
    finally:
        close_default_pool()
        terminate_tree(http.pid, grace_s=20)
    summary = {
        "benchmark": "mcp_tool_calls",
        "calls_per_round": args.calls,
        "rounds": args.rounds,
        "ms": {k: {"p50": round(pct(v, 0.5), 4), "p95": round(pct(v, 0.95), 4)} for k, v in samples.items()},
        "round_medians_ms": rounds,
    }
    print(summary["ms"])
    print(f"wrote {write_result('mcp_tool_calls.json', summary)}")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
