"""The yardstick for a proxy hop: a fastmcp server that mounts a proxy of one stdio MCP server.

Run: python benchmarks/fastmcp_proxy.py NAMESPACE COMMAND [ARGS...] (serves stdio). Benchmark-only: needs
`pip install fastmcp` (4.x), which the project itself never depends on. Built the way fastmcp 4 documents
composition: `create_proxy(transport)` for the backend, mounted on a plain `FastMCP` under a namespace, so
the backend's `tool` is served as `NAMESPACE_tool`.
"""

from __future__ import annotations

import os
import sys

from fastmcp import FastMCP
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit("usage: fastmcp_proxy.py NAMESPACE COMMAND [ARGS...]")
    namespace, command, *args = argv
    backend = create_proxy(StdioTransport(command=command, args=args, env=dict(os.environ)), name=namespace)
    front = FastMCP("fastmcp-proxy")
    front.mount(backend, namespace=namespace)
    front.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main(sys.argv[1:])
