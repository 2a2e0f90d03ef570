"""An MCP server written as AWorld writes its own (``examples/gaia/mcp_collections/*``): mcp 1.x's ``FastMCP``
imported from ``mcp.server``, started as a module from the project root::

    python -m examples.calc.mcp_collections.calculator

``CALC_OFFSET`` (from the config's ``env``, ``${VAR}``-substituted) is added to every sum: a test sets it to
show the substituted value reached the server. Its ``add`` is described as the demo's (assets/tools/calculator.py):
tiny-calc was warm-started on that description. ``CALC_DELAY_S`` makes every call sleep that long first.
"""

import os
import time

from mcp.server import FastMCP

mcp = FastMCP("calculator", log_level="WARNING")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.

    Returns:
        The sum of a and b.
    """
    time.sleep(float(os.environ.get("CALC_DELAY_S") or 0))
    return a + b + int(os.environ.get("CALC_OFFSET") or 0)


if __name__ == "__main__":
    mcp.run(transport="stdio")
