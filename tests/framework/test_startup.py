"""The entry point pauses garbage collection while a server is built, then freezes what start-up created."""

from __future__ import annotations

import gc
import subprocess
import sys
from importlib.metadata import entry_points

from mcp_sections.servers.cli import server_built


def test_the_command_is_the_paused_collection_entry_point() -> None:
    (script,) = [point for point in entry_points(group="console_scripts") if point.name == "mcp-sections"]
    assert script.value == "mcp_sections.servers.startup:main"


def test_server_built_freezes_start_up_and_resumes_collection() -> None:
    gc.disable()
    try:
        server_built()
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.enable()


def test_collection_is_back_on_after_a_command_that_serves_nothing() -> None:
    code = (
        "import gc, sys; from mcp_sections.servers.startup import main; sys.argv = ['mcp-sections', 'list']; "
        "main(); print(gc.isenabled())"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("True")
