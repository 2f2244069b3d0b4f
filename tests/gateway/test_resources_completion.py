"""The gateway's resource templates and `completion/complete` (`servers/gateway/resources.py`): section ids, tool names
(as the tool filters show them) and brain projects complete as a person types, and each template's URI reads; a
section answers completion/complete with nothing to offer. The gateway in memory, its sections as it starts them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import PromptReference, ResourceTemplateReference

from tests.in_memory import gateway_in_memory, section_in_memory

pytestmark = pytest.mark.anyio
SECTION, TOOL, PROJECT = (
    "mcp-sections://gateway/sections/{section}",
    "mcp-sections://gateway/tools/{tool}",
    "mcp-sections://gateway/brain/{project}",
)


async def values(client: Client, template: str, argument: str, typed: str) -> list[str]:
    answer = await client.complete(ResourceTemplateReference(uri=template), {"name": argument, "value": typed})
    return list(answer.completion.values)


def brain_with_a_project(data: Path) -> None:
    """A project registered in the SQLite brain (no files ingested)."""
    from mcp_sections.shared.brain.model import Project
    from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore

    store = SQLiteBrainStore(data / "brain.sqlite3")
    try:
        store.upsert_project(Project(id="p-shop", name="shop-project", root=str(data / "shop"), type="python"))
    finally:
        store.close()


async def test_templates_complete_sections_tools_and_read(tmp_path: Path) -> None:
    async with gateway_in_memory("--data-dir", str(tmp_path), "--profile", "readonly") as client:
        assert client.server_capabilities.completions is not None
        listed = {template.uri_template for template in (await client.list_resource_templates()).resource_templates}
        assert {SECTION, TOOL, PROJECT} <= listed

        assert (await values(client, SECTION, "section", "fi"))[0] == "file_ops"
        assert "calculator" in await values(client, SECTION, "section", "CALC"), "case does not matter"
        tools = await values(client, TOOL, "tool", "read")
        assert tools[0] == "read_file" and all(name.startswith("read") for name in tools[:2])
        assert "write_file" not in await values(client, TOOL, "tool", "file"), "the readonly profile hides it"
        assert "list_directory" in await values(client, TOOL, "tool", "direc"), "containing, after starting with"
        assert await values(client, SECTION, "nothing", "x") == []
        prompt = await client.complete(PromptReference(name="no_such_prompt"), {"name": "arg1", "value": "t"})
        assert prompt.completion.values == []

        section = json.loads(
            (await client.read_resource("mcp-sections://gateway/sections/calculator")).contents[0].text
        )
        assert section["section"]["id"] == "calculator" and section["tools"]
        tool = json.loads((await client.read_resource("mcp-sections://gateway/tools/read_file")).contents[0].text)
        assert tool["section"] == "file_ops" and tool["name"] == "read_file" and "inputSchema" in tool
        for missing in ("sections/nowhere", "tools/write_file", "brain/none"):
            with pytest.raises(MCPError) as raised:
                await client.read_resource(f"mcp-sections://gateway/{missing}")
            assert raised.value.error.code == -32602


async def test_brain_projects_complete_by_name(tmp_path: Path) -> None:
    brain_with_a_project(tmp_path)
    async with gateway_in_memory("--data-dir", str(tmp_path)) as client:
        assert await values(client, PROJECT, "project", "shop") == ["shop-project"]
        summary: Any = json.loads(
            (await client.read_resource("mcp-sections://gateway/brain/shop-project")).contents[0].text
        )
        assert summary["name"] == "shop-project" and "nodes" in summary


async def test_a_section_answers_completion_with_nothing_to_offer(tmp_path: Path) -> None:
    async with section_in_memory("calculator", "--data-dir", str(tmp_path)) as client:
        assert client.server_capabilities.completions is not None
        answer = await client.complete(PromptReference(name="test_prompt_with_arguments"), {"name": "a", "value": "x"})
        assert answer.completion.values == [] and answer.completion.total == 0
