"""Start the gateway through the real CLI over stdio, with real section subprocesses."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client

from mcp_sections.servers.registry import load_section
from tests.stdio import HOST_ENVIRONMENT, REPO, server_parameters

DEMO_MODULE = "tests.framework.demo_section"
#: The gateway's own tools, in the order tools/list gives them.
GATEWAY_TOOLS = [
    "list_tool_sections",
    "find_tools",
    "describe_section",
    "call_section_tool",
    "plan_actions",
    "get_working_directory",
    "get_environment_info",
    "get_project_info",
]


#: The gateway's tool that forwards a call to a section's tool (`forward` builds its arguments).
FORWARD = "call_section_tool"


def forward(section: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """`call_section_tool`'s arguments for `tool` of `section` called with `arguments`."""
    return {"section": section, "tool": tool, "arguments": arguments}


def demo_section_table(section_id: str = "demo", name: str = "Demo") -> str:
    """A `[gateway.sections.<id>]` table running the framework's demo section as a third-party stdio server."""
    return (
        f"[gateway.sections.{section_id}]\n"
        f'command = "{sys.executable}"\n'
        f'args = ["-m", "tests.gateway.serve_module", "{DEMO_MODULE}"]\n'
        f'cwd = "{REPO}"\n'
        f'name = "{name}"\n'
        'description = "Framework demo section run as a third-party MCP server."\n'
    )


def tasks_demo_table(data_dir: Path) -> str:
    """A `[gateway.sections.tasks_demo]` table running the framework's tasks section (slow, failing and bulky tools,
    `tests/framework/tasks_section.py`) as a third-party stdio server on the 2025-11-25 protocol, its data in
    `data_dir`."""
    return (
        "[gateway.sections.tasks_demo]\n"
        f'command = "{sys.executable}"\n'
        'args = ["-m", "tests.gateway.serve_module", "tests.framework.tasks_section"]\n'
        f'cwd = "{REPO}"\n'
        'name = "Tasks demo"\n'
        'description = "Slow and bulky test tools."\n'
        'protocol = "legacy"\n'
        f'env = {{ MCP_SECTIONS_DATA_DIR = "{data_dir}", MCP_SECTIONS_CONFIG = "{os.devnull}" }}\n'
    )


def write_config(path: Path, *tables: str) -> Path:
    path.write_text("\n".join(tables), encoding="utf-8")
    return path


@asynccontextmanager
async def gateway_client(
    *args: str, env: dict[str, str] | None = None, mode: str = "legacy", cwd: Path | None = None
) -> AsyncIterator[Client]:
    """`mcp-sections gateway <args>` as a subprocess, connected with the official client."""
    environment = {**HOST_ENVIRONMENT, **(env or {})}
    parameters = server_parameters(["gateway", *args], env=environment, cwd=cwd or REPO)
    async with Client(parameters, mode=mode, read_timeout_seconds=120) as client:  # type: ignore[arg-type]
        yield client


def builtin_available(section_id: str) -> bool:
    try:
        load_section(section_id)
    except Exception:
        return False
    return True
