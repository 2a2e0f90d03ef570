"""AWorld's ways of starting MCP servers, as its ``mcp.json`` files write them.

* :func:`module_root` — ``"command": "python", "args": ["-m", "examples.gaia.mcp_collections.documents.txt"]``
  runs from AWorld's project root. Without a ``cwd``, the server runs from the first folder, walking up
  from the config's own folder (then the agent file's, then the current one), where the module resolves
  (``a/b/c.py``, ``a/b/c/__main__.py`` or ``a/b/c/__init__.py``). The check says which folder it chose.
* :func:`require_launcher` — a Node.js launcher (``npx``, ``node``…) that is not installed is a clear error
  before anything starts, not a "file not found" from deep inside the SDK.
* :func:`sdk_mismatch_hint` — a server that dies importing an MCP SDK of the other major version (a
  server written for mcp 2.x started by this interpreter, which has AWorld's mcp 1.x) gets a hint that
  names the fix: start it with an interpreter that has its SDK (``command: /path/to/venv/bin/python``).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from ..results.check_result import CheckError

PYTHON_NAMES = re.compile(r"^python(\d+(\.\d+)?)?$")
NODE_LAUNCHERS = {"npx", "node", "npm", "pnpm", "yarn", "bunx", "bun"}
#: how far up from a config's folder a module's project root is looked for
MAX_LEVELS = 12


def _module_arg(args: list) -> str | None:
    args = [str(a) for a in args]
    for i, a in enumerate(args[:-1]):
        if a == "-m":
            return args[i + 1]
    return None


def _resolves(folder: Path, module: str) -> bool:
    base = folder.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__main__.py").is_file() or (base / "__init__.py").is_file()


def module_root(command: str, args: list, start_dirs: list[Path]) -> tuple[Path, str] | None:
    """(folder, note) for a ``python -m <module>`` server: the nearest folder up from ``start_dirs`` where
    ``<module>`` resolves. None when the command is not Python, has no ``-m``, or the module is found
    nowhere up (then it must be importable by the interpreter, as an installed package is)."""
    if not PYTHON_NAMES.match(Path(command).name):
        return None
    module = _module_arg(args)
    if not module or not all(part.isidentifier() for part in module.split(".")):
        return None
    seen: set[Path] = set()
    for start in start_dirs:
        folder = Path(start).resolve()
        for _ in range(MAX_LEVELS):
            if folder in seen:
                break
            seen.add(folder)
            if _resolves(folder, module):
                return folder, (
                    f"runs from {folder} (`-m {module}` resolves there; found walking up from "
                    f"{Path(start).resolve()}; set `cwd` to choose another folder)"
                )
            if folder.parent == folder:
                break
            folder = folder.parent
    return None


def require_launcher(name: str, command: str) -> None:
    """A Node.js launcher must be installed (an MCP server started with ``npx`` needs Node.js)."""
    program = Path(command).name
    if program not in NODE_LAUNCHERS or os.sep in command or shutil.which(command):
        return
    raise CheckError(
        "agent",
        f"MCP server '{name}' is started with `{command}`, a Node.js program, but Node.js "
        f"is not installed here (`{command}` is not on PATH)",
        "install Node.js (e.g. apt-get install nodejs npm), or remove the server from mcp_servers",
        mcp_server=name,
    )


_IMPORT_2X = ("mcp.server.mcpserver", "mcp_types", "httpx2", "MCPServer")
_IMPORT_1X = ("mcp.server.fastmcp", "FastMCP")


def sdk_mismatch_hint(stderr_tail: str) -> str | None:
    """A hint when a stdio server died importing an MCP SDK of the other major version."""
    if "Error" not in stderr_tail or "mcp" not in stderr_tail:
        return None
    try:
        from importlib.metadata import version

        here = version("mcp")
    except Exception:  # noqa: BLE001 - no SDK installed: nothing to compare with
        return None
    if here.startswith("1.") and any(m in stderr_tail for m in _IMPORT_2X):
        return (
            f"this server is written for mcp 2.x, and the interpreter that started it has mcp {here} (the SDK "
            "AWorld pins): start it with a Python that has mcp 2.x — set `command` to that interpreter, e.g. "
            "/path/to/venv-mcp2/bin/python (docs/AWORLD.md)"
        )
    if not here.startswith("1.") and any(m in stderr_tail for m in _IMPORT_1X):
        return (
            f"this server is written for mcp 1.x (FastMCP), and the interpreter that started it has mcp {here}: "
            "set `command` to a Python that has mcp 1.x (docs/AWORLD.md)"
        )
    return None
