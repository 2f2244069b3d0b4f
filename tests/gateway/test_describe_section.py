"""describe_section's text is what a model that sees only text needs to call a section's tools — a few lines per tool
— while its structured result keeps the full definitions. The gateway in memory; nothing is started."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from mcp_sections.servers.registry import BUILTIN_SECTIONS
from tests.gateway.helpers import builtin_available
from tests.in_memory import gateway_in_memory
from tests.stdio import error_of

SECTIONS = [section for section in BUILTIN_SECTIONS if builtin_available(section)]


@pytest.fixture(scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    workdir = tmp_path_factory.mktemp("describe")
    async with gateway_in_memory("--data-dir", str(workdir / "data"), "--root", str(workdir), cwd=workdir) as connected:
        yield connected


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


def blocks(described: str) -> dict[str, list[str]]:
    """The text's lines per tool (a tool's line starts at the margin, its arguments are indented)."""
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for line in described.split("\n\n", 1)[1].splitlines():
        if not line.startswith(" "):
            current = found.setdefault(line.split(" ", 1)[0], [])
        current.append(line)
    return found


@pytest.mark.anyio
@pytest.mark.parametrize("section", SECTIONS)
async def test_the_text_names_every_argument_and_the_structured_result_keeps_the_definitions(
    client: Client, section: str
) -> None:
    result = await client.call_tool("describe_section", {"section": section})
    assert not result.is_error
    definitions = result.structured_content["tools"]  # type: ignore[index]
    described = text(result)
    assert len(described) * 3 < len(json.dumps(definitions))  # a fraction of the definitions (rag_ops: 65,697 before)
    assert '"inputSchema"' not in described and f'call_section_tool(section="{section}"' in described
    lines = blocks(described)
    assert list(lines) == [definition["name"] for definition in definitions]
    for definition in definitions:
        schema = definition["inputSchema"]
        tool_lines = lines[definition["name"]]
        assert tool_lines[0].startswith(f"{definition['name']} (") and "inputSchema" in definition
        arguments = {line.strip().split(":", 1)[0]: line for line in tool_lines[1:]}
        assert set(arguments) == set(schema.get("properties") or {}) or tool_lines[1:] == ["  (no arguments)"]
        for name in schema.get("required") or []:
            assert ", required" in arguments[name].split(" — ", 1)[0], arguments[name]


@pytest.mark.anyio
async def test_the_text_says_types_bounds_and_defaults(client: Client) -> None:
    lines = blocks(text(await client.call_tool("describe_section", {"section": "file_ops"})))
    read_file = lines["read_file"]
    assert read_file[0].startswith("read_file (read-only): Read a text file")
    assert "  path: string (1-4096 chars), required — " in read_file[1]
    assert any(
        line.startswith('  encoding: "auto" | "utf-8" | "utf-16" | "latin-1", default "auto"') for line in read_file
    )
    edit = next(line for line in lines["edit_file"] if line.startswith("  edits:"))
    assert "list (1-100 items) of {old_text: string (1-1000000 chars), new_text: " in edit and "replace_all?: " in edit
    assert lines["delete_path"][0].startswith("delete_path (destructive): ")


@pytest.mark.anyio
async def test_named_tools_are_described_in_full(client: Client) -> None:
    whole = await client.call_tool("describe_section", {"section": "file_ops"})
    full = {tool["name"]: tool for tool in whole.structured_content["tools"]}  # type: ignore[index]
    result = await client.call_tool("describe_section", {"section": "file_ops", "tools": ["read_file"]})
    assert [tool["name"] for tool in result.structured_content["tools"]] == ["read_file"]  # type: ignore[index]
    assert result.structured_content["tools"][0] == full["read_file"]  # type: ignore[index]
    described = text(result)
    assert full["read_file"]["description"].strip() in described
    assert full["read_file"]["inputSchema"]["properties"]["path"]["description"] in described
    code, message = error_of(
        await client.call_tool("describe_section", {"section": "file_ops", "tools": ["run_command"]})
    )
    assert code == "NOT_FOUND" and "run_command is in shell_ops, not file_ops" in message
