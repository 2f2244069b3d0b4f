"""Serve a `Section` declared in any importable module over stdio: a stand-in third-party MCP server for tests.

Usage: python -m tests.gateway.serve_module tests.framework.demo_section
"""

from __future__ import annotations

import importlib
import sys

from mcp_sections.shared.config import Settings
from mcp_sections.shared.server import build_server


def main() -> None:
    section = importlib.import_module(sys.argv[1]).SECTION
    server, _ = build_server(section, section.runtime(Settings.load()))
    server.run("stdio")


if __name__ == "__main__":
    main()
