"""A calculator MCP server written for mcp 2.x (``MCPServer``, what 2.x renamed FastMCP to), for the tests of a
client on AWorld's mcp 1.x speaking to a server of the other SDK major: ``python testing/mcp2_calculator.py``
with mcp 2.x importable (tests put it first on ``PYTHONPATH``, see :func:`mcp2_site`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: the 2.x SDK the tests start this server with (installed apart from the project's environment)
MCP2 = ["mcp==2.3.0", "mcp-types==2.3.0", "httpx2==2.16.2"]


def mcp2_site(folder: Path) -> Path:
    """``folder`` holding mcp 2.x and the packages 2.x added (the rest comes from the running environment), made
    with pip from the package registry the first time."""
    marker = folder / "mcp-2.3.0.dist-info"
    if not marker.is_dir():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(folder), *MCP2],
            check=True,
            timeout=600,
        )
    return folder


def main() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("calculator2", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: The first number.
            b: The second number.
        """
        return a + b

    server.run()


if __name__ == "__main__":
    main()
