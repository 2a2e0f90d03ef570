"""Agent tools: a tool's schema, MCP servers as AWorld agents configure them, the MCP client, MCP tools as Python callables."""
