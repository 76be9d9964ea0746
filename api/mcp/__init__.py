"""The MCP server of each org (issue 31): ``/mcp/{org}``, Streamable HTTP, stateless."""
