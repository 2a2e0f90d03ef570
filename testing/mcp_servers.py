"""MCP servers that misbehave on purpose, for the tests: ``python testing/mcp_servers.py <kind>``.

* ``exit``   — writes a line to stderr and exits at once (status 3)
* ``leak``   — prints its ``API_TOKEN`` to stderr and exits (a secret in a stderr tail)
* ``hang``   — starts and never answers (does not read its stdin)
* ``chatty`` — prints a banner on stdout (no MCP), then never answers: what a server that logs to stdout does
* ``empty``  — a real MCP server with no tools
* ``env``    — a real MCP server whose tool ``read_env(name)`` returns an environment variable (``${ENV}``
               substitution reaching a stdio server)
* ``flaky``  — the calculator (add, multiply) that exits after ``FLAKY_CALLS`` tool calls; with
               ``FLAKY_MARKER`` set it leaves that file behind when it dies and refuses to start while
               the file exists (a server that cannot be restarted)

:func:`calculator_over_http` runs the shipped demo server over streamable HTTP or SSE for a test.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

PATH = str(Path(__file__).resolve())
CALCULATOR = str(Path(__file__).resolve().parent.parent / "assets" / "mcp" / "calculator_server.py")


@contextlib.contextmanager
def calculator_over_http(
    transport: str = "streamable-http", token: str | None = None, port: int | None = None
) -> Iterator[str]:
    """The demo calculator server on 127.0.0.1:<port> (a free one by default); yields its URL (``/mcp``
    or ``/sse``)."""
    from testing import free_port

    port = port or free_port()
    env = dict(os.environ)
    if token:
        env["CALC_MCP_TOKEN"] = token
    proc = subprocess.Popen(
        [sys.executable, CALCULATOR, "--transport", transport, "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the {transport} calculator exited: {proc.stderr.read().decode()[-2000:]}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(f"the {transport} calculator did not listen on port {port} within 60 s")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/{'mcp' if transport == 'streamable-http' else 'sse'}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def command(kind: str) -> dict:
    """The ``mcpServers`` entry that starts this script as ``kind``."""
    return {"command": sys.executable, "args": [PATH, kind]}


def _server(name: str):
    from mcp.server.fastmcp import FastMCP

    return FastMCP(name, log_level="WARNING")


def main(kind: str) -> None:
    if kind == "exit":
        print("fatal: calculator config missing (CALC_CONFIG is not set)", file=sys.stderr, flush=True)
        sys.exit(3)
    if kind == "leak":
        print(f"auth failed with token {os.environ.get('API_TOKEN')}", file=sys.stderr, flush=True)
        sys.exit(3)
    if kind == "chatty":
        print("Welcome to the calculator v2.1 — listening", flush=True)
        while True:
            time.sleep(3600)
    if kind == "hang":
        print("starting up slowly...", file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)
    if kind == "empty":
        _server("empty").run()
        return
    if kind == "env":
        server = _server("env")

        @server.tool()
        def read_env(name: str) -> str:
            """Read an environment variable of the server process.

            Args:
                name: The variable's name.
            """
            return os.environ.get(name, "<unset>")

        server.run()
        return
    if kind == "flaky":
        marker = os.environ.get("FLAKY_MARKER")
        if marker and os.path.exists(marker):
            print(f"refusing to start: {marker} exists (the last run crashed)", file=sys.stderr, flush=True)
            sys.exit(1)
        limit = int(os.environ.get("FLAKY_CALLS", "1000000"))
        calls = {"n": 0}
        server = _server("flaky")

        def count() -> None:
            calls["n"] += 1
            if calls["n"] > limit:
                if marker:
                    Path(marker).write_text(str(os.getpid()))
                print(f"flaky: dying after {limit} calls", file=sys.stderr, flush=True)
                os._exit(9)

        @server.tool()
        def add(a: int, b: int) -> int:
            """Add two integers.

            Args:
                a: The first number.
                b: The second number.

            Returns:
                The sum of a and b.
            """
            count()
            return a + b

        @server.tool()
        def pid() -> int:
            """The server's process id."""
            count()
            return os.getpid()

        server.run()
        return
    raise SystemExit(f"unknown kind {kind!r}")


if __name__ == "__main__":
    main(sys.argv[1])
