"""--expose: chosen sections' tools listed directly by the gateway (in memory; the third-party sections are
processes, todo in process), in both protocol modes, and over HTTP (the gateway, and a section by URL, as processes)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.gateway.helpers import GATEWAY_TOOLS, REPO, builtin_available, demo_section_table, write_config
from tests.in_memory import gateway_in_memory
from tests.processes import serving_over_http
from tests.stdio import cli_command, data_of, error_of

pytestmark = pytest.mark.skipif(not builtin_available("todo"), reason="the todo section is not importable")
#: How the HTTP servers here run: from the checkout, with nothing on stdin, their stderr dropped.
QUIET: dict[str, Any] = {"cwd": REPO, "stdin": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}

DEMO = ["demo_sum", "demo_lookup", "demo_count"]


def config_with_two_demos(tmp_path: Path) -> Path:
    """Two third-party copies of the demo section: the second one's tools collide with the first one's."""
    return write_config(
        tmp_path / "config.toml",
        '[gateway]\nexpose = "demo_copy"\n',  # the --expose flag below replaces this value
        demo_section_table("demo"),
        demo_section_table("demo_copy", name="Demo copy"),
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.anyio
async def test_exposed_tools_are_listed_in_a_fixed_order(tmp_path: Path, mode: str) -> None:
    from mcp_sections.servers.registry import load_section

    todo_tools = [spec.name for spec in load_section("todo").specs]
    config = config_with_two_demos(tmp_path)
    args = [
        "--config",
        str(config),
        "--data-dir",
        str(tmp_path / "data"),
        "--expose",
        "demo_copy,todo",
        "--expose",
        "demo",
        "--in-process",
        "todo",
    ]
    async with gateway_in_memory(*args, mode=mode) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names == GATEWAY_TOOLS + todo_tools + DEMO + [f"demo_copy__{name}" for name in DEMO]
        assert len(set(names)) == len(names)
        assert not client.server_capabilities.tools.list_changed
        # exposed tools keep the section's schemas and forward unchanged
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tools["demo_copy__demo_sum"].input_schema == tools["demo_sum"].input_schema
        assert tools["todo_create"].output_schema is not None
        code, message = error_of(await client.call_tool("demo_sum", {"numbers": "many"}))
        assert code == "INVALID_INPUT" and "numbers" in message
        assert data_of(await client.call_tool("demo_sum", {"numbers": [3, 4]})) == {"total": 7.0}
        assert data_of(await client.call_tool("demo_copy__demo_sum", {"numbers": [1, 2]})) == {"total": 3.0}
        # the third-party sections started once, with the gateway (listing their tools), and serve the calls
        pool = client.gateway.pool  # type: ignore[attr-defined]
        assert [pool.launcher(section).starts for section in ("demo", "demo_copy")] == [1, 1]
        created = data_of(await client.call_tool("todo_create", {"name": "exposed", "workflow_id": "wf_expose"}))
        assert created["task"]["name"] == "exposed"
        # the same task through call_section_tool
        listed = data_of(
            await client.call_tool(
                "call_section_tool", {"section": "todo", "tool": "todo_list", "arguments": {"workflow_id": "wf_expose"}}
            )
        )
        assert "exposed" in str(listed)
        sections = {s["id"]: s for s in data_of(await client.call_tool("list_tool_sections", {}))["sections"]}
        assert sections["demo"]["exposed"] and sections["todo"]["exposed"] and not sections["memory"]["exposed"]


@pytest.mark.anyio
async def test_an_exposed_section_that_cannot_start_leaves_the_others_listed(tmp_path: Path) -> None:
    """The exposed third-party sections are asked for their tools at once: one that cannot start is logged and left
    out; the gateway serves, with the other's tools in the config's order."""
    broken = '[gateway.sections.broken]\ncommand = "/nonexistent/server"\ndescription = "Cannot start."\n'
    config = write_config(tmp_path / "config.toml", broken, demo_section_table("demo"))
    args = ["--config", str(config), "--data-dir", str(tmp_path / "data"), "--expose", "broken,demo"]
    async with gateway_in_memory(*args) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names == GATEWAY_TOOLS + DEMO
        assert data_of(await client.call_tool("demo_sum", {"numbers": [2, 3]}))["total"] == 5


@pytest.mark.anyio
async def test_exposing_an_unknown_section_is_a_config_error(tmp_path: Path) -> None:
    command = [*cli_command(), "gateway", "--data-dir", str(tmp_path), "--expose", "nope"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "cannot expose unknown section 'nope'" in done.stderr


@pytest.mark.anyio
async def test_gateway_over_streamable_http(tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.toml", demo_section_table())
    args = ["gateway", "--config", str(config), "--data-dir", str(tmp_path / "data"), "--expose", "demo"]
    with serving_over_http(args, seconds=30, **QUIET) as (port, _):
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", read_timeout_seconds=60) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert names == GATEWAY_TOOLS + DEMO
            assert data_of(await client.call_tool("demo_sum", {"numbers": [4, 5]})) == {"total": 9.0}


@pytest.mark.anyio
async def test_streamable_http_url_section(tmp_path: Path) -> None:
    """A section reached by URL (here the todo section served over HTTP); its names collide with the built-in's."""
    args = ["serve", "todo", "--data-dir", str(tmp_path / "remote-data")]
    with serving_over_http(args, seconds=30, **QUIET) as (port, _):
        config = write_config(
            tmp_path / "config.toml",
            f'[gateway.sections.remote]\nurl = "http://127.0.0.1:{port}/mcp"\nname = "Remote todo"\n'
            'headers = { "X-Test" = "1" }\n',
        )
        args = ["--config", str(config), "--data-dir", str(tmp_path / "data"), "--expose", "remote"]
        async with gateway_in_memory(*args) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert "remote__todo_create" in names and "todo_create" not in names
            created = data_of(await client.call_tool("remote__todo_create", {"name": "far away"}))
            assert created["task"]["name"] == "far away"
            listed = data_of(
                await client.call_tool("call_section_tool", {"section": "remote", "tool": "todo_list", "arguments": {}})
            )
            assert "far away" in str(listed)
            sections = {s["id"]: s for s in data_of(await client.call_tool("list_tool_sections", {}))["sections"]}
            assert sections["remote"]["kind"] == "http" and sections["remote"]["state"] == "running"
            assert "todo_create" in sections["remote"]["tools"]
