"""No todo call learns another workflow's name, nor whether a task id belongs to one (an outside tester: todo_get of a
task of 'team-secret' without workflow_id answered "task … is in workflow 'team-secret', not in 'default'").

On a team's gateway every user shares the board and a workflow's id is all it takes to use it, so the answer is
memory's: NOT_FOUND in this workflow, the same for an id that exists elsewhere and one that exists nowhere, with how
to look in another workflow for a caller who knows its id. The real server, in memory.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from tests.in_memory import section_in_memory
from tests.stdio import call

SECRET = "team-secret"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    async with section_in_memory("todo", "--data-dir", str(tmp_path / "data")) as connected:
        yield connected


async def refusal(client: Client, tool: str, **arguments: object) -> tuple[str, str]:
    """The NOT_FOUND answer to this call, as the client gets it (its whole structured error, as text), with the id
    it names replaced by TASK_ID."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error and result.structured_content is not None, result
    assert result.structured_content["error_code"] == "NOT_FOUND", result.structured_content
    every_word = json.dumps(result.structured_content) + "".join(getattr(c, "text", "") for c in result.content)
    task_id = str(arguments.get("task_id", ""))
    return every_word, result.structured_content["error"].replace(task_id, "TASK_ID")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("todo_get", {}),
        ("todo_update_status", {"status": "in_progress"}),
        ("todo_complete", {}),
        ("todo_update", {"name": "renamed"}),
        ("todo_delete", {}),
    ],
)
async def test_a_task_of_another_workflow_is_not_found_and_its_workflow_never_named(
    client: Client, tool: str, arguments: dict[str, object]
) -> None:
    secret = await call(client, "todo_create", name="Secret project milestone", workflow_id=SECRET)
    everything, message = await refusal(client, tool, task_id=secret["task_id"], **arguments)
    assert SECRET not in everything and "secret" not in everything.lower(), everything
    # the same answer as for an id that is a task of no workflow: no oracle of where ids live
    _, nowhere = await refusal(client, tool, task_id="task_0123456789ab", **arguments)
    assert message == nowhere, (message, nowhere)
    assert "no task" in message and "'default'" in message and "workflow_id" in message, message
    # untouched, and there with its workflow's id
    found = await call(client, "todo_get", task_id=secret["task_id"], workflow_id=SECRET)
    assert found["task"]["status"] == "pending" and found["task"]["name"] == "Secret project milestone"


@pytest.mark.anyio
async def test_a_dependency_on_another_workflows_task_names_neither(client: Client) -> None:
    secret = await call(client, "todo_create", name="Secret project milestone", workflow_id=SECRET)
    everything, _ = await refusal(client, "todo_create", name="mine", dependencies=[secret["task_id"]])
    assert SECRET not in everything, everything
