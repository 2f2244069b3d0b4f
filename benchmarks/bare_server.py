"""The yardstick: a bare one-tool server written directly with the `mcp` SDK."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("bare")


@server.tool()
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


if __name__ == "__main__":
    server.run("stdio")
