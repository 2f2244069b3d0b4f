"""The gateway: one MCP server that lists the sections, forwards calls to them and runs sub-agents."""
