"""Start a section through the real CLI and talk to it with the official `mcp` client over stdio."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult, Tool

SNAPSHOTS = Path(__file__).parent / "snapshots"
REPO = Path(__file__).resolve().parents[1]
#: What a started gateway or section host gets beside `server_environment`: no config file but the one it is given,
#: and this checkout importable by the third-party sections it starts (`python -m tests....`).
HOST_ENVIRONMENT = {"PYTHONPATH": str(REPO), "MCP_SECTIONS_CONFIG": os.devnull}
#: For a server whose test never uses what the section warms up after its first `tools/list` (a model, a sympy
#: process): without it, that work runs for nothing until the server stops.
NO_WARM_UP = {"MCP_SECTIONS_WARM_UP": "0"}


def cli_command() -> list[str]:
    """The installed `mcp-sections` script of this interpreter's environment."""
    script = Path(sys.executable).parent / "mcp-sections"
    if script.exists():
        return [str(script)]
    found = shutil.which("mcp-sections")
    if found:
        return [found]
    return [sys.executable, "-m", "mcp_sections.servers"]


def server_parameters(
    args: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> StdioServerParameters:
    command, *prefix = cli_command()
    return StdioServerParameters(command=command, args=[*prefix, *args], env=server_environment(env), cwd=cwd)


def server_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """What a test server process gets: this process's MCP_SECTIONS_*, PATH* and HOME* variables (HOME is the run's
    own: tests/conftest.py) and where Playwright's browsers are, plus `env`."""
    passed = ("MCP_SECTIONS_", "PATH", "HOME", "PLAYWRIGHT_BROWSERS_PATH")
    environment = {key: value for key, value in os.environ.items() if key.startswith(passed)}
    environment.update(env or {})
    return environment


@asynccontextmanager
async def section_client(
    section: str,
    *extra_args: str,
    env: dict[str, str] | None = None,
    mode: str = "auto",
    cwd: Path | None = None,
    errlog: TextIO | None = None,
) -> AsyncIterator[Client]:
    """`mcp-sections serve <section> <extra_args>` as a subprocess, connected (stderr to `errlog`)."""
    parameters = server_parameters(["serve", section, *extra_args], env=env, cwd=cwd)
    transport = stdio_client(parameters, errlog=errlog or sys.stderr)
    async with Client(transport, mode=mode, read_timeout_seconds=120) as client:  # type: ignore[arg-type]
        yield client


def text_of(result: CallToolResult) -> str:
    """The first text block of a result, out of its provenance envelope (`shared.serving.provenance`)."""
    from mcp_sections.shared.serving.provenance import unwrap

    return unwrap(result.content[0].text)  # type: ignore[union-attr]


def data_of(result: CallToolResult) -> dict[str, Any]:
    """The structured content of a successful call (fails the test with the error text otherwise)."""
    assert not result.is_error, result.content[0].text if result.content else result
    assert result.structured_content is not None
    return result.structured_content


def error_of(result: CallToolResult) -> tuple[str, str]:
    """(error_code, message) of a failed call."""
    assert result.is_error, f"expected an error, got {result.structured_content}"
    assert result.structured_content is not None
    return result.structured_content["error_code"], result.structured_content["error"]


async def call(client: Client, tool: str, /, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured content."""
    return data_of(await client.call_tool(tool, arguments))


async def fail(client: Client, tool: str, code: str, /, **arguments: Any) -> str:
    """Call a tool that must fail with error code `code`; the error message."""
    error_code, message = error_of(await client.call_tool(tool, arguments))
    assert error_code == code, message
    return message


def annotation_hints(tools: Sequence[Tool]) -> dict[str, tuple[bool | None, bool | None, bool | None, bool | None]]:
    """(read_only, destructive, idempotent, open_world) hints by tool name, for the tools that have annotations."""
    return {
        t.name: (
            t.annotations.read_only_hint,
            t.annotations.destructive_hint,
            t.annotations.idempotent_hint,
            t.annotations.open_world_hint,
        )
        for t in tools
        if t.annotations
    }


def check_tools_snapshot(section: str, tools: Sequence[Tool]) -> None:
    """`check_snapshot` for the tools of a `list_tools()` result, dumped as they go over the wire."""
    check_snapshot(section, [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools])


def check_snapshot(section: str, tools: list[dict[str, Any]]) -> None:
    """Compare a section's tools/list with tests/snapshots/<section>.json (UPDATE_SNAPSHOTS=1 rewrites it)."""
    path = SNAPSHOTS / f"{section}.json"
    rendered = json.dumps(tools, indent=2, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1" or (not path.exists() and not os.environ.get("CI")):
        path.write_text(rendered, encoding="utf-8")
    assert path.exists(), f"{path} is missing: generate it with UPDATE_SNAPSHOTS=1 and commit it"
    assert path.read_text(encoding="utf-8") == rendered, (
        f"tools/list of {section} changed; if deliberate, rerun with UPDATE_SNAPSHOTS=1 and review the diff"
    )
