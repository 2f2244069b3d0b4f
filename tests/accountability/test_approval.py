"""approval = "destructive": the user is asked before a destructive tool runs, in both protocol eras; refused
on a client without elicitation; read-only tools are never asked about. In memory, with the real todo section
and the real gateway."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_sections.servers.gateway.server import build_gateway_server
from mcp_sections.servers.pool.settings import load_gateway_settings
from mcp_sections.servers.registry import load_section
from mcp_sections.shared.serving.audit import read_records
from mcp_sections.shared.serving.server import build_server
from mcp_sections.shared.settings.config import Settings
from tests.orchestration.helpers import User
from tests.stdio import call, fail

pytestmark = pytest.mark.anyio


def _todo(tmp_path: Path, user: User | None, mode: str) -> Client:
    section = load_section("todo")
    settings = Settings.load({"data_dir": str(tmp_path), "approval": "destructive", "warm_up": False})
    server, _ = build_server(section, section.runtime(settings))
    client = Client(server, mode=mode, elicitation_callback=user)  # type: ignore[arg-type]
    client.audit = settings.data_dir / "audit"  # type: ignore[attr-defined]
    return client


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_destructive_call_runs_only_once_approved(tmp_path: Path, mode: str) -> None:
    user = User()
    async with _todo(tmp_path, user, mode) as client:
        task = (await call(client, "todo_create", name="keep me"))["task_id"]  # not destructive: never asked
        assert user.questions == []
        user.will("accept", {"approve": False})
        message = await fail(client, "todo_delete", "PERMISSION_DENIED", task_id=task)
        assert "did not approve todo_delete" in message
        user.will("decline")
        assert "declined" in await fail(client, "todo_delete", "PERMISSION_DENIED", task_id=task)
        assert (await call(client, "todo_get", task_id=task))["task"]["name"] == "keep me"
        user.will("accept", {"approve": True})
        assert (await call(client, "todo_delete", task_id=task))["deleted"] == [task]
    question: Any = user.questions[-1]
    assert "todo_delete" in question.message and task in question.message
    # the refused calls are in the audit log too, each with its start and its outcome
    outcomes = [record["outcome"] for record in read_records(client.audit, "todo") if record["tool"] == "todo_delete"]
    assert outcomes == ["PERMISSION_DENIED", "PERMISSION_DENIED", "OK"]


async def test_without_elicitation_it_is_refused_with_how_to_turn_approval_off(tmp_path: Path) -> None:
    async with _todo(tmp_path, None, "legacy") as client:
        task = (await call(client, "todo_create", name="x"))["task_id"]
        message = await fail(client, "todo_delete", "DEPENDENCY_ERROR", task_id=task)
    assert "cannot ask the user" in message and 'approval = "off"' in message
    assert [r["outcome"] for r in read_records(client.audit, "todo") if r["tool"] == "todo_delete"] == [
        "DEPENDENCY_ERROR"
    ]


async def test_the_gateway_asks_before_a_sub_agent_starts_and_before_forwarding_a_destructive_call(
    tmp_path: Path,
) -> None:
    user = User()
    settings = Settings.load({"data_dir": str(tmp_path), "approval": "destructive", "warm_up": False})
    # todo in the gateway's process: the question is the gateway's, whichever way the section runs
    server, _ = build_gateway_server(settings, load_gateway_settings(settings, in_process=["todo"]))
    async with Client(server, mode="legacy", elicitation_callback=user) as client:  # type: ignore[arg-type]
        user.will("decline")
        message = await fail(client, "plan_actions", "PERMISSION_DENIED", goal="tidy up", sections=["todo"])
        assert "declined plan_actions" in message and "sub-agent" in user.questions[-1].message

        asked = len(user.questions)
        listed = await client.call_tool("call_section_tool", {"section": "todo", "tool": "todo_list"})
        assert not listed.is_error, listed.content
        assert len(user.questions) == asked  # read-only: no question
        user.will("accept", {"approve": False})
        arguments = {"section": "todo", "tool": "todo_delete", "arguments": {"task_id": "task_000000000000"}}
        await fail(client, "call_section_tool", "PERMISSION_DENIED", **arguments)
