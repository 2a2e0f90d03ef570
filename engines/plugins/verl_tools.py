"""The function-tool file of a verl run (``actor_rollout_ref.rollout.multi_turn.function_tool_path``; installed by
:func:`engines.verl.bridge.write_function_tools`): each of the agent's Python tools registered with verl's
``@function_tool`` (its schema from the function's type hints and docstring), loaded the way the studio loads it.

Parameters (``function_tools.json``): ``tools``, each ``{name, ref}`` (``file.py:fn`` or ``module:fn``) with, for a
file, ``attr`` and ``copy`` (relative to the run directory).
"""

from __future__ import annotations

import os
from typing import Any, Callable

from ..inputs.loading import load_object
from .files import resolved


def tool_function(item: dict[str, Any], run_dir: str) -> Callable[..., Any]:
    """The tool's function, from the original file where this node has it, else the run directory's copy."""
    return load_object(resolved(item, run_dir)["ref"])


def start(folder: str, params: dict[str, Any]) -> dict[str, Any]:
    """Register each tool with verl; exports nothing."""
    from verl.tools.function_tool import function_tool

    for item in params["tools"]:
        function_tool(item["name"])(tool_function(item, os.path.dirname(folder)))
    return {}
