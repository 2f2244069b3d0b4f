"""The yardstick: a bare one-tool server written directly with the `mcp` SDK.

`--paused-gc` starts it the way `mcp-sections` starts (servers/startup.py: the garbage collector paused while
the server is built, then frozen), so the start-up benchmark can show what our own code costs beside the same
trick given to the bare server.
"""

import gc
import sys

if "--paused-gc" in sys.argv:
    gc.disable()

from mcp.server.mcpserver import MCPServer  # after the collector is paused

server = MCPServer("bare")


@server.tool()
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


if __name__ == "__main__":
    gc.freeze()
    gc.enable()
    server.run("stdio")
