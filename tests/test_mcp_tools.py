"""JSON schemas of MCP tools → Python callables that transformers' get_json_schema (TRL's tool calling) and verl's
tool schema accept, for the schema shapes servers publish."""

from __future__ import annotations

import inspect

import pytest
from transformers.utils import get_json_schema

from engines.results.check_result import CheckError
from engines.tools.mcp_servers import parse_mcp
from engines.tools.mcp_tools import McpTool, check_unique_names, make_callable, signature_of, tools_from_listing

SEARCH = McpTool(
    "web",
    "search",
    "search",
    "Search the web.\n\nReturns a list of hits.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "limit": {"type": "integer", "default": 5, "title": "Limit"},
            "lang": {"enum": ["en", "zh"], "description": "Result language."},
            "tags": {"type": "array", "items": {"type": "string"}},
            "since": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "scale": {"type": ["number", "integer"]},
            "filters": {"type": "object", "properties": {"site": {"type": "string"}}},
            "anything": {"description": "Untyped."},
        },
        "required": ["query", "lang"],
    },
)


def test_a_schema_becomes_a_signature_transformers_reads_back():
    sig, annotations, doc = signature_of(SEARCH)
    assert list(sig.parameters) == ["query", "limit", "lang", "tags", "since", "scale", "filters", "anything"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in sig.parameters.values())
    assert sig.parameters["limit"].default == 5 and sig.parameters["query"].default is inspect.Parameter.empty
    fn = make_callable(SEARCH, server=None, pool=lambda: None)
    schema = get_json_schema(fn)["function"]
    assert schema["name"] == "search" and schema["description"] == "Search the web.\n\nReturns a list of hits."
    props = schema["parameters"]["properties"]
    assert props["query"] == {"type": "string", "description": "What to look for."}
    assert props["limit"]["type"] == "integer" and "nullable" not in props["limit"]  # optional, default 5
    assert props["lang"]["enum"] == ["en", "zh"] and props["lang"]["description"] == "Result language."
    assert props["tags"] == {
        "type": "array",
        "items": {"type": "string"},
        "nullable": True,
        "description": "The tags argument.",
    }
    assert props["since"]["type"] == "string" and props["since"]["nullable"] is True
    assert set(props["scale"]["type"]) == {"number", "integer"}
    assert props["filters"]["type"] == "object"
    assert props["anything"]["type"] == "string"  # verl needs a type on every parameter
    assert schema["parameters"]["required"] == ["query", "lang"]
    # verl's own tool schema model accepts it
    from verl.tools.schemas import OpenAIFunctionToolSchema

    OpenAIFunctionToolSchema.model_validate(get_json_schema(fn))


def test_arguments_are_checked_against_the_signature_before_the_server_is_called():
    calls = []

    class Pool:
        def call(self, server, tool, arguments):
            calls.append((tool, arguments))
            raise AssertionError("not reached in this test")

    fn = make_callable(SEARCH, server=None, pool=lambda: Pool())
    with pytest.raises(TypeError, match="missing a required argument: 'lang'"):
        fn(query="x")
    with pytest.raises(TypeError, match="unexpected keyword argument 'page'"):
        fn(query="x", lang="en", page=2)
    assert calls == []


def test_hidden_tools_bad_parameter_names_and_name_clashes():
    selection = parse_mcp(
        {
            "mcp_config": {"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}},
            "black_tool_actions": {"a": ["drop", "missing"]},
        },
        None,
        [],
        [],
    )
    listing = {
        "a": [
            {"name": "keep", "inputSchema": {"type": "object", "properties": {}}},
            {"name": "drop", "inputSchema": {}},
            {"name": "odd", "inputSchema": {"type": "object", "properties": {"user-id": {"type": "string"}}}},
        ],
        "b": [{"name": "keep", "inputSchema": {"type": "object", "properties": {}}}],
    }
    warnings: list[str] = []
    tools = tools_from_listing(selection, listing, warnings)
    assert [(t.server, t.name) for t in tools] == [("a", "keep"), ("b", "keep")]
    assert any("hides 'missing' of MCP server 'a', which does not list it" in w for w in warnings)
    assert any("tool 'odd' of MCP server 'a' is left out" in w and "user-id" in w for w in warnings)
    with pytest.raises(
        CheckError, match="two tools are named 'keep': one from MCP server 'a', one from MCP server 'b'"
    ):
        check_unique_names(tools, [])
