"""Serve a `Section` declared in any importable module: a stand-in third-party MCP server for tests.

Usage: python -m tests.gateway.serve_module tests.framework.demo_section            (stdio, the SDK's transport)
       python -m tests.gateway.serve_module tests.framework.demo_section --our-stdio   (stdio, shared/serving/stdio.py)
       python -m tests.gateway.serve_module tests.framework.tasks_section --http 8123   (Streamable HTTP, loopback)
"""

from __future__ import annotations

import importlib
import sys

import anyio

from mcp_sections.shared.serving.server import build_server, serve_http, transport_security
from mcp_sections.shared.settings.config import Settings


def main() -> None:
    section = importlib.import_module(sys.argv[1]).SECTION
    server, _ = build_server(section, section.runtime(Settings.load()))
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        anyio.run(serve_http, server, "127.0.0.1", port, transport_security("127.0.0.1", port, [], []), None)
        return
    if "--our-stdio" in sys.argv:  # the transport `mcp-sections serve` uses
        from mcp_sections.shared.serving.stdio import run_stdio

        anyio.run(run_stdio, server)
        return
    server.run("stdio")


if __name__ == "__main__":
    main()
