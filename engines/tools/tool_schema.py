"""A tool function described to the model: its JSON schema as tool-calling chat templates consume it (transformers'
``get_json_schema``), with a fix-it error where a hint or a docstring is missing. A leaf: Python tools
(``engines.agents.agent_spec``) and MCP tools (``engines.tools.mcp_tools``) are both described here."""

from __future__ import annotations

import inspect
from typing import Callable

from ..results.check_result import CheckError


def check_tool(fn: Callable, ref: str) -> dict:
    """A tool must be callable with type hints on every parameter and a docstring."""
    if not callable(fn):
        raise CheckError("agent", f"tool '{ref}' is not callable")
    name = getattr(fn, "__name__", ref)
    doc = inspect.getdoc(fn)
    if not doc:
        raise CheckError(
            "agent",
            f"tool '{name}' ({ref}) has no docstring",
            "add a Google-style docstring with a summary line and an `Args:` section — "
            "the chat template shows it to the model",
        )
    sig = inspect.signature(fn)
    try:
        hints = inspect.get_annotations(fn, eval_str=True)
    except Exception:  # unresolvable string annotations
        hints = getattr(fn, "__annotations__", {})
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name not in hints:
            raise CheckError(
                "agent",
                f"tool '{name}' ({ref}) has no type hint for parameter '{p.name}'",
                f"annotate it, e.g. `{p.name}: int`",
            )
    try:
        from transformers.utils import get_json_schema  # what tool-calling chat templates consume

        schema = get_json_schema(fn)
    except ImportError:  # pragma: no cover - transformers is a requirement
        schema = {"type": "function", "function": {"name": name, "description": doc.splitlines()[0]}}
    except Exception as e:
        raise CheckError(
            "agent",
            f"tool '{name}' ({ref}) cannot be described to the model: {e}",
            "document every argument under `Args:` in the docstring",
        )
    return schema
