"""The sections: one package per MCP server."""
