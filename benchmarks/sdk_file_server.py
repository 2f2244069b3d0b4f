"""The floor of a Python file server on the `mcp` SDK: reading and listing with no checks at all.

Run: python benchmarks/sdk_file_server.py (serves stdio). Two plain SDK tools: `read_text_file` returns a
file's text, `list_directory` a directory's entries (name, type, size) as structured output. No root
confinement, no models or error codes of ours, the project's fast stdio transport. bench_file_ops shows it
beside file_ops and the Node reference server: what file_ops costs above it is ours; what it costs above
the reference is the Python SDK's (and its client's). Benchmark-only.
"""

from __future__ import annotations

import os

import anyio
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from mcp_sections.shared.serving.stdio import run_stdio

server = MCPServer("sdk-file-server")


@server.tool()
async def read_text_file(path: str) -> str:
    """Read a text file."""
    with open(path, encoding="utf-8") as file:
        return file.read()


class Entry(BaseModel):
    name: str
    type: str
    size_bytes: int | None = None


class Listing(BaseModel):
    entries: list[Entry]


@server.tool()
async def list_directory(path: str) -> Listing:
    """List a directory."""
    with os.scandir(path) as iterator:
        entries = [
            Entry(name=item.name, type="directory", size_bytes=None)
            if item.is_dir(follow_symlinks=False)
            else Entry(name=item.name, type="file", size_bytes=item.stat(follow_symlinks=False).st_size)
            for item in iterator
        ]
    return Listing(entries=sorted(entries, key=lambda entry: entry.name))


if __name__ == "__main__":
    anyio.run(run_stdio, server)
