"""The floor of a Python file server on the `mcp` SDK: `read_text_file` with no checks at all.

Run: python benchmarks/sdk_file_server.py (serves stdio). One SDK tool that reads a file and returns its
text: no root confinement, no pydantic input model of ours, no structured output, the project's fast stdio
transport. bench_file_ops shows it beside file_ops and the Node reference server: what file_ops costs above it
is ours; what it costs above the reference is the Python SDK's. Benchmark-only.
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer

from mcp_sections.shared.stdio import run_stdio

server = MCPServer("sdk-file-server")


@server.tool()
async def read_text_file(path: str) -> str:
    """Read a text file."""
    with open(path, encoding="utf-8") as file:
        return file.read()


if __name__ == "__main__":
    anyio.run(run_stdio, server)
