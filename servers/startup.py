"""The process entry point (`mcp-sections`, `python -m mcp_sections.servers`): start-up without garbage collection.

Building a server creates some hundred thousand long-lived objects (the SDK's models and ours), and CPython's
cyclic collector walks them again and again while they are being created: ~13% of a start (importing the SDK
alone takes 400 ms with the collector, 350 ms without). So the collector is paused until the server is built
(`servers.cli.server_built`), which then moves every object alive out of its reach (`gc.freeze`) and resumes collection:
later collections skip those objects too, so a full one costs ~0 ms instead of ~50 ms in the middle of a call.
The price: the few thousand cyclic leftovers of start-up (well under 1 MB) stay frozen for the process's life.
"""

from __future__ import annotations

import gc
import os
import sys


def main() -> int:
    """`mcp-sections ...` with the collector paused until the server is built, and without the working directory on
    the module search path: `python -m mcp_sections.servers` puts it first, and from inside a root a program could
    plant there a module the server imports later, unconfined (`shared.confinement.trusted_base`; `-P` does the
    same)."""
    if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]
    gc.disable()
    try:
        from mcp_sections.servers.cli import main as run

        return run()
    finally:
        gc.enable()
