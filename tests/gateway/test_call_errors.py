"""A call the gateway cannot run says how to make it: wrong arguments in the suite's one wording (the argument, what
it must be, the length given, `details.fields`), whichever path the call took. The gateway in memory, its sections
real subprocesses or hosted in it."""

from __future__ import annotations

from collections.abc import AsyncIterator

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
