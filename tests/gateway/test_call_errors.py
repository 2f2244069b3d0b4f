"""A call the gateway cannot run says how to make it: wrong arguments in the suite's one wording (the argument, what
it must be, the length given, `details.fields`), whichever path the call took. The gateway in memory, its sections
real subprocesses or hosted in it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from tests.in_memory import gateway_in_memory
from tests.stdio import error_of


@pytest.fixture(scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    workdir = tmp_path_factory.mktemp("call-errors")
    async with gateway_in_memory("--data-dir", str(workdir / "data"), "--root", str(workdir), cwd=workdir) as connected:
        yield connected


@pytest.mark.anyio
async def test_the_gateways_own_tools_report_wrong_arguments_as_the_sections_do(client: Client) -> None:
    own = await client.call_tool("find_tools", {"query": "x" * 600, "limit": 0})
    code, message = error_of(own)
    assert code == "INVALID_INPUT"
    assert "query: must be at most 500 characters long (600 given)" in message and "limit: must be >= 1" in message
    assert "String should" not in message and "x" * 20 not in message  # no pydantic wording, no value echoed
    assert own.structured_content["details"]["fields"] == ["limit", "query"]
    # a section's tool, forwarded: the same words and the same details
    forwarded = await client.call_tool(
        "call_section_tool", {"section": "todo", "tool": "todo_create", "arguments": {"name": "n" * 300}}
    )
    code, message = error_of(forwarded)
    assert code == "INVALID_INPUT" and "name: must be at most 128 characters long (300 given)" in message
    assert forwarded.structured_content["details"]["fields"] == ["name"]
    # nested: each problem of a planned action by its path
    code, message = error_of(
        await client.call_tool(
            "plan_actions", {"goal": "g", "sections": ["todo"], "actions": [{"description": "", "step": 1}]}
        )
    )
    assert "actions.0.description: must be at least 1 character long (0 given)" in message
    assert "actions.0.step: unknown argument; remove it (accepted: complexity, description)" in message


@pytest.mark.anyio
async def test_each_problem_is_said_once(client: Client) -> None:
    arguments = {"section": "orchestration", "tool": "spawn_agent", "arguments": {"goal": "summarise the repo"}}
    result = await client.call_tool("call_section_tool", arguments)
    code, message = error_of(result)
    assert code == "INVALID_INPUT"
    assert message.count("name: required argument is missing") == 1
    assert message.count("prompt: required argument is missing") == 1
    assert "goal: unknown argument" in message
    assert result.structured_content["details"]["fields"] == ["goal", "name", "prompt"]


@pytest.mark.anyio
async def test_a_sections_tool_called_at_the_gateway_is_pointed_to_its_section(client: Client) -> None:
    code, message = error_of(await client.call_tool("read_file", {"path": "notes.txt"}))
    assert code == "NOT_FOUND"
    assert message.startswith("read_file is a tool of the file_ops section")
    assert 'call_section_tool(section="file_ops", tool="read_file", arguments={...})' in message
    # a mistyped name: the closest ones, each with the call that reaches it
    code, message = error_of(await client.call_tool("list_directry", {}))
    assert code == "NOT_FOUND" and "did you mean list_directory (in file_ops: call_section_tool(" in message
    code, message = error_of(await client.call_tool("find_tool", {"query": "x"}))
    assert "did you mean find_tools (a gateway tool, called directly)" in message
    # nothing was started to know it
    sections = (await client.call_tool("list_tool_sections", {})).structured_content["sections"]  # type: ignore[index]
    assert {section["id"]: section["state"] for section in sections}["file_ops"] == "not_started"


@pytest.mark.anyio
async def test_a_tool_asked_of_the_wrong_section_is_pointed_to_the_right_one(client: Client) -> None:
    wrong = {"section": "file_ops", "tool": "run_command", "arguments": {"command": ["ls"]}}
    code, message = error_of(await client.call_tool("call_section_tool", wrong))
    assert code == "NOT_FOUND"
    assert message.startswith("run_command is in shell_ops, not file_ops: call it with ")
    assert 'call_section_tool(section="shell_ops", tool="run_command", arguments={...})' in message
    typo = {"section": "file_ops", "tool": "read_fil", "arguments": {}}
    code, message = error_of(await client.call_tool("call_section_tool", typo))
    assert "has no tool 'read_fil'; did you mean read_file" in message and "Its tools are: read_file," in message
    own = {"section": "todo", "tool": "find_tools", "arguments": {}}
    _, message = error_of(await client.call_tool("call_section_tool", own))
    assert message == "find_tools is one of the gateway's own tools, not a tool of todo: call it directly."
    sections = (await client.call_tool("list_tool_sections", {})).structured_content["sections"]  # type: ignore[index]
    states = {section["id"]: section["state"] for section in sections}
    assert states["file_ops"] == states["todo"] == "not_started"  # no process started for a wrong name


@pytest.mark.anyio
async def test_a_hidden_tool_is_never_named(tmp_path: Path) -> None:
    from mcp_sections.servers.gateway.server import build_gateway_server
    from mcp_sections.servers.pool.settings import GatewaySettings
    from mcp_sections.shared.settings.config import Settings

    config = GatewaySettings.load({"disabled_tools": ["todo:todo_delete"]})
    server, _ = build_gateway_server(Settings.load(data_dir=tmp_path / "data"), config)
    async with Client(server) as client:
        code, message = error_of(await client.call_tool("todo_delete", {"task_id": "task_1"}))
        assert code == "NOT_FOUND" and "todo_delete is a tool" not in message and 'tool="todo_delete"' not in message
        wrong = {"section": "calculator", "tool": "todo_delete", "arguments": {}}
        code, message = error_of(await client.call_tool("call_section_tool", wrong))
        assert code == "NOT_FOUND" and "todo_delete is in" not in message
