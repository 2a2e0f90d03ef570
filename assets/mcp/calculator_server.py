"""The calculator as an MCP server: the tools of ``assets/tools/calculator.py``, served with the official
MCP SDK's ``FastMCP`` (mcp 1.x, the SDK AWorld runs on; its servers are written the same way).

    python assets/mcp/calculator_server.py                                   # stdio (what agents start)
    python assets/mcp/calculator_server.py --transport streamable-http --port 8765   # http://127.0.0.1:8765/mcp
    python assets/mcp/calculator_server.py --transport sse --port 8765               # http://127.0.0.1:8765/sse

Over HTTP, setting ``CALC_MCP_TOKEN`` makes the server require ``Authorization: Bearer <token>``
(what an agent's ``headers: {Authorization: "Bearer ${CALC_MCP_TOKEN}"}`` sends).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from pathlib import Path

from mcp.server.fastmcp import FastMCP

TOOLS_FILE = Path(__file__).resolve().parent.parent / "tools" / "calculator.py"


def _calculator():
    spec = importlib.util.spec_from_file_location("calculator_tools", TOOLS_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_server() -> FastMCP:
    calc = _calculator()
    server = FastMCP("calculator", instructions="Integer arithmetic.", log_level="WARNING")
    server.tool()(calc.add)
    server.tool()(calc.multiply)
    return server


def http_app(server: FastMCP, transport: str, token: str | None):
    """The streamable-HTTP (or SSE) app, behind a bearer-token check when ``token`` is set."""
    from starlette.responses import JSONResponse

    app = server.streamable_http_app() if transport == "streamable-http" else server.sse_app()
    if not token:
        return app

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode() != f"Bearer {token}":
                await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
                return
        await app(scope, receive, send)

    return guarded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "streamable-http", "sse"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    server = build_server()
    if args.transport == "stdio":
        server.run()
        return
    import uvicorn

    uvicorn.run(
        http_app(server, args.transport, os.environ.get("CALC_MCP_TOKEN")),
        host=args.host,
        port=args.port,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
