"""One workflow id for memory and todo (`shared.ground.workflows`): an outside tester's `proj:alpha` worked in memory
and failed in todo (todo allowed neither ':' nor more than 64 characters). The real servers, in memory."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_sections.servers.todo.board import Board
from mcp_sections.shared.ground.errors import ToolFailure
from tests.in_memory import section_in_memory
from tests.stdio import call, fail

LONGEST = "w" + "x" * 127  # 128 characters
#: The rules each section had before they shared one: every id either stored must keep working.
FORMER = {"todo": r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", "memory": r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"}
STORED = ["default", "team-a", "Team_B.v2", "9lives", "proj:alpha", "org:team:sprint-12", "a" * 64, LONGEST]


@pytest.fixture
async def servers(tmp_path: Path) -> AsyncIterator[dict[str, Client]]:
    data = str(tmp_path / "data")
    async with (
        section_in_memory("todo", "--data-dir", data) as todo,
        section_in_memory("memory", "--data-dir", data) as memory,
    ):
        yield {"todo": todo, "memory": memory}


@pytest.mark.anyio
@pytest.mark.parametrize("workflow_id", ["proj:alpha", LONGEST])
async def test_an_id_memory_takes_todo_takes_too(servers: dict[str, Client], workflow_id: str) -> None:
    task = await call(servers["todo"], "todo_create", name="ship it", workflow_id=workflow_id)
    assert task["task"]["workflow_id"] == workflow_id
    listed = await call(servers["todo"], "todo_list", workflow_id=workflow_id)
    assert [t["id"] for t in listed["tasks"]] == [task["task_id"]]
    await call(servers["memory"], "memory_add", type="context", content="Ship it on Friday.", workflow_id=workflow_id)
    memories = await call(servers["memory"], "memory_list", workflow_id=workflow_id, scope="workflow")
    assert memories["total"] == 1


@pytest.mark.anyio
@pytest.mark.parametrize("workflow_id", ["w" * 129, "proj alpha", "-leading", "a/b"])
async def test_an_id_one_section_refuses_the_other_refuses_too(servers: dict[str, Client], workflow_id: str) -> None:
    await fail(servers["todo"], "todo_list", "INVALID_INPUT", workflow_id=workflow_id)
    await fail(servers["memory"], "memory_list", "INVALID_INPUT", workflow_id=workflow_id)


@pytest.mark.anyio
async def test_every_workflow_id_argument_of_both_sections_declares_the_same_rule(servers: dict[str, Client]) -> None:
    rules: set[tuple[Any, ...]] = set()
    for client in servers.values():
        for tool in (await client.list_tools()).tools:
            schema = tool.input_schema["properties"].get("workflow_id")
            if schema is None:
                continue
            string = next((s for s in schema.get("anyOf", [schema]) if s.get("type") == "string"), schema)
            rules.add((string["pattern"], string["maxLength"], string["minLength"]))
    assert len(rules) == 1, rules


def test_every_id_stored_under_either_former_rule_keeps_working(tmp_path: Path) -> None:
    board = Board.in_data_dir(tmp_path)
    for workflow_id in STORED:
        assert any(re.fullmatch(rule, workflow_id) for rule in FORMER.values()), workflow_id
        assert board.add(workflow_id, "a task").task.workflow_id == workflow_id
        assert board.list(workflow_id).total == 1


@pytest.mark.parametrize("workflow_id", ["w" * 129, "proj alpha", "team\n", ""])
def test_the_board_refuses_what_is_not_a_workflow_id(tmp_path: Path, workflow_id: str) -> None:
    with pytest.raises(ToolFailure) as refused:
        Board.in_data_dir(tmp_path).add(workflow_id, "a task")
    assert refused.value.code == "INVALID_INPUT" and "letters, digits" in refused.value.message
