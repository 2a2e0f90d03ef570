"""MCP tools as Python tools: what an engine's tool calling takes.

Each tool a server lists becomes a callable with ``__name__``, a Google-style docstring and a real
``inspect.Signature`` with type annotations synthesized from its JSON schema, so that
``transformers.utils.get_json_schema`` (what chat templates and TRL's ``GRPOTrainer(tools=...)`` use)
and verl's ``@function_tool`` accept it exactly as they accept a Python function. The callable carries
``mcp_server`` (the server's name) and ``mcp_tool`` (the tool's name on that server); calling it calls
the server through this process's :class:`engines.tools.mcp_client.McpPool`.
"""

from __future__ import annotations

import inspect
import keyword
import typing
from dataclasses import asdict, dataclass
from typing import Any, Callable, Literal, Optional, Union

from ..results.check_result import CheckError
from .mcp_client import McpToolError, default_pool
from .mcp_servers import McpSelection, McpServer
from .tool_schema import check_tool

JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}


@dataclass
class McpTool:
    """One tool of one server, as listed at check time."""

    server: str
    name: str  # what the model calls it
    remote_name: str  # what the server calls it
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tools_from_listing(
    selection: McpSelection, listing: dict[str, list[dict[str, Any]]], warnings: list[str]
) -> list[McpTool]:
    """The tools an agent uses: every listed tool of its servers, minus ``black_tool_actions``."""
    out = []
    for server in selection.servers:
        hidden = set(selection.hidden.get(server.name, []))
        listed = listing.get(server.name, [])
        for name in sorted(hidden - {t.get("name") for t in listed}):
            warnings.append(f"black_tool_actions hides '{name}' of MCP server '{server.name}', which does not list it")
        for t in listed:
            if t.get("name") in hidden:
                continue
            schema = t.get("inputSchema") or t.get("input_schema") or {"type": "object", "properties": {}}
            bad = [p for p in (schema.get("properties") or {}) if not p.isidentifier() or keyword.iskeyword(p)]
            if bad:
                warnings.append(
                    f"tool '{t['name']}' of MCP server '{server.name}' is left out: its parameter(s) "
                    f"{', '.join(bad)} cannot be Python parameter names, which tool calling needs"
                )
                continue
            exposed = f"{server.name}__{t['name']}" if selection.prefix else t["name"]
            out.append(
                McpTool(
                    server.name,
                    exposed,
                    t["name"],
                    t.get("description") or "",
                    schema,
                    t.get("outputSchema") or t.get("output_schema"),
                )
            )
    return out


def check_unique_names(tools: list[McpTool], python_names: list[str]) -> None:
    """Tool calling finds a tool by its name: two tools may not share one."""
    seen = {n: "a Python tool" for n in python_names}
    for t in tools:
        where = f"MCP server '{t.server}'"
        if t.name in seen:
            raise CheckError(
                "agent",
                f"two tools are named '{t.name}': one from {seen[t.name]}, one from {where}",
                f"hide one with black_tool_actions: {{{t.server}: [{t.remote_name}]}}, or set "
                "mcp_tool_prefix: true to name MCP tools <server>__<tool>",
            )
        seen[t.name] = where


# -- JSON schema → Python annotations -----------------------------------------------------------------
def _annotation(schema: Any) -> Any:
    """The Python type ``get_json_schema`` turns back into (nearly) this JSON schema. A schema without a
    type becomes ``str`` (verl's tool schema needs a type on every parameter)."""
    if not isinstance(schema, dict):
        return str
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, (str, int, float, bool)) for v in enum):
        return Literal[tuple(enum)]  # type: ignore[misc]
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and options:
        return _union([_annotation(o) for o in options])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([_annotation({**schema, "type": k}) for k in kind])
    if kind == "array":
        items = schema.get("items")
        return list[_annotation(items)] if isinstance(items, dict) and items else list
    return JSON_TYPES.get(kind, str) if kind is not None else str


def _union(types: list[Any]) -> Any:
    unique = list(dict.fromkeys(types))
    if len(unique) == 1:
        return unique[0]
    none = type(None) in unique
    rest = [t for t in unique if t is not type(None)]
    core = rest[0] if len(rest) == 1 else Union[tuple(rest)]  # type: ignore[valid-type]
    return Optional[core] if none else core


def _return_annotation(output_schema: dict[str, Any] | None) -> Any:
    """From ``outputSchema``: a server built with the SDK wraps a plain return value as ``{"result": ...}``."""
    if not isinstance(output_schema, dict):
        return inspect.Signature.empty
    props = output_schema.get("properties") or {}
    if set(props) == {"result"}:
        return _annotation(props["result"])
    return dict


def _one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def _doc_parts(tool: McpTool) -> tuple[str, dict[str, str], str | None]:
    """(summary, per-argument descriptions, returns) from the tool's description (often a whole
    Google-style docstring when the server was written with the SDK)."""
    from transformers.utils.chat_template_utils import parse_google_format_docstring

    text = inspect.cleandoc(tool.description or "")
    try:
        summary, args, returns = parse_google_format_docstring(text)
    except Exception:  # noqa: BLE001 - an unusual description is kept whole
        summary, args, returns = text, {}, None
    return (summary or "").strip(), dict(args or {}), returns


def signature_of(tool: McpTool) -> tuple[inspect.Signature, dict[str, Any], str]:
    """(signature, annotations, docstring) synthesized from the tool's schemas and description. Every
    parameter is keyword-only (tool calling passes arguments by name), so the schema's order is kept."""
    summary, arg_docs, returns = _doc_parts(tool)
    props: dict[str, Any] = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or [])
    params, annotations, arg_lines = [], {}, []
    for name, prop in props.items():
        prop = prop if isinstance(prop, dict) else {}
        ann = _annotation(prop)
        if name in required:
            default = inspect.Parameter.empty
        else:
            default = prop.get("default")
            if default is None and not (typing.get_origin(ann) is Union and type(None) in typing.get_args(ann)):
                ann = Optional[ann]
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann))
        annotations[name] = ann
        title = prop.get("title")
        described = (
            prop.get("description")
            or arg_docs.get(name)
            or (title if title and title.lower() != name.lower() else None)
            or f"The {name} argument."
        )
        arg_lines.append(f"    {name}: {_one_line(described)}")
    ret = _return_annotation(tool.output_schema)
    if ret is not inspect.Signature.empty:
        annotations["return"] = ret
    doc = summary or f"The {tool.remote_name} tool of MCP server {tool.server}."
    if arg_lines:
        doc += "\n\nArgs:\n" + "\n".join(arg_lines)
    if returns and ret is not inspect.Signature.empty:
        doc += f"\n\nReturns:\n    {_one_line(returns)}"
    return inspect.Signature(params, return_annotation=ret), annotations, doc


# -- results -----------------------------------------------------------------------------------------
def result_value(result: Any, tool: McpTool) -> Any:
    """What the model sees from a ``CallToolResult``: the wrapped value of a plain return, else the text
    content. ``isError`` raises :class:`McpToolError` (the engine hands its text back as the result)."""
    texts = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
        elif kind in ("image", "audio"):
            texts.append(f"[{kind} content, {getattr(block, 'mime_type', None) or getattr(block, 'mimeType', '')}]")
        elif kind == "resource":
            inner = getattr(block, "resource", None)
            texts.append(getattr(inner, "text", None) or f"[resource {getattr(inner, 'uri', '')}]")
        else:
            texts.append(f"[{kind or 'unknown'} content]")
    text = "\n".join(texts)
    if getattr(result, "is_error", False) or getattr(result, "isError", False):
        raise McpToolError(text or f"tool '{tool.remote_name}' of MCP server '{tool.server}' failed")
    structured = getattr(result, "structured_content", None)
    if structured is None:  # the SDK's 1.x name
        structured = getattr(result, "structuredContent", None)
    if isinstance(structured, dict) and set(structured) == {"result"} and tool.output_schema:
        return structured["result"]
    if not texts and structured is not None:
        return structured
    return text


def make_callable(tool: McpTool, server: McpServer, pool: Callable[[], Any] = default_pool) -> Callable[..., Any]:
    """The tool as a Python callable (see the module docstring)."""
    signature, annotations, doc = signature_of(tool)

    def call_mcp_tool(**kwargs: Any) -> Any:
        bound = signature.bind(**kwargs)  # a wrong argument is the model's error: reported like Python's
        arguments = {k: v for k, v in bound.arguments.items()}
        return result_value(pool().call(server, tool.remote_name, arguments), tool)

    call_mcp_tool.__name__ = call_mcp_tool.__qualname__ = tool.name
    call_mcp_tool.__doc__ = doc
    call_mcp_tool.__signature__ = signature  # type: ignore[attr-defined]
    call_mcp_tool.__annotations__ = annotations
    call_mcp_tool.__module__ = __name__
    call_mcp_tool.mcp_server = tool.server  # type: ignore[attr-defined]
    call_mcp_tool.mcp_tool = tool.remote_name  # type: ignore[attr-defined]
    return call_mcp_tool


def callables(tools: list[McpTool], selection: McpSelection) -> list[Callable[..., Any]]:
    servers = selection.by_name()
    return [make_callable(t, servers[t.server]) for t in tools]


def discover(
    selection: McpSelection, python_names: list[str], warnings: list[str]
) -> tuple[list[McpTool], list[dict[str, Any]]]:
    """The check: list every server's tools (each server started or reached, then closed, within its
    time limit) and describe each tool to the model as a Python tool is described."""
    from .mcp_client import McpServerError, list_server_tools

    try:
        listing = list_server_tools(selection.servers)
    except McpServerError as e:
        raise CheckError("agent", str(e), e.hint, mcp_server=e.server) from None
    except ImportError as e:
        raise CheckError(
            "agent",
            f"MCP servers need the official MCP SDK: {e}",
            "pip install -r requirements.txt (or pip install mcp)",
        ) from None
    tools = tools_from_listing(selection, listing, warnings)
    for server in selection.servers:
        if not any(t.server == server.name for t in tools):
            warnings.append(f"every tool of MCP server '{server.name}' is hidden: it gives the agent nothing")
    check_unique_names(tools, python_names)
    schemas = [check_tool(fn, f"MCP server {t.server}") for t, fn in zip(tools, callables(tools, selection))]
    return tools, schemas
