"""The todo section's tools through the official `mcp` client, in memory (one server per module); test_stdio.py
runs the same server over stdio."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_sections.servers.todo.board import FILE_NAME, Board, now_iso
from mcp_sections.shared.serving.provenance import unwrap
from tests.in_memory import section_in_memory
from tests.stdio import call, data_of, error_of, fail, text_of


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("todo") / "data"


@pytest.fixture(scope="module")
async def client(data_dir: Path) -> AsyncIterator[Client]:
    async with section_in_memory("todo", "--data-dir", str(data_dir)) as connected:
        yield connected


@pytest.mark.anyio
async def test_full_lifecycle(client: Client) -> None:
    w = "lifecycle"
    db = await call(client, "todo_create", workflow_id=w, name="Set up database", priority=1)
    assert db["success"] is True and db["message"] == "Task created successfully"
    assert db["task_id"] == db["task"]["id"] and db["task"]["status"] == "pending"
    auth = await call(
        client,
        "todo_create",
        workflow_id=w,
        name="Implement user authentication",
        description="JWT with refresh tokens",
        dependencies=[db["task_id"]],
        assigned_agent="api_agent",
    )
    task = auth["task"]
    assert (task["priority"], task["dependencies"], task["assigned_agent"]) == (3, [db["task_id"]], "api_agent")

    got = await call(client, "todo_get", workflow_id=w, task_id=db["task_id"])
    assert got["dependents"] == [auth["task_id"]] and got["unfinished_dependencies"] == []
    assert (await call(client, "todo_next", workflow_id=w))["task"]["id"] == db["task_id"]

    start = {"workflow_id": w, "task_id": auth["task_id"], "status": "in_progress"}
    message = await fail(client, "todo_update_status", "VALIDATION_FAILED", **start)
    assert db["task_id"] in message and "force" in message

    started = await call(client, "todo_update_status", workflow_id=w, task_id=db["task_id"], status="in_progress")
    assert (started["previous_status"], started["new_status"], started["changed"]) == ("pending", "in_progress", True)
    assert started["task"]["started_at"].endswith("Z")
    done = await call(client, "todo_complete", workflow_id=w, task_id=db["task_id"], duration_ms=45000)
    assert (done["new_status"], done["duration_ms"]) == ("completed", 45000)
    assert done["task"]["completed_at"].endswith("Z")
    again = await call(client, "todo_complete", workflow_id=w, task_id=db["task_id"])
    assert again["changed"] is False and again["duration_ms"] == 45000

    assert (await call(client, "todo_next", workflow_id=w))["task"]["id"] == auth["task_id"]
    await call(client, "todo_update_status", workflow_id=w, task_id=auth["task_id"], status="in_progress")
    # reopening a completed task whose dependent already started is refused
    reopen = {"workflow_id": w, "task_id": db["task_id"], "status": "pending"}
    await fail(client, "todo_update_status", "VALIDATION_FAILED", **reopen)
    finished = await call(client, "todo_complete", workflow_id=w, task_id=auth["task_id"])
    assert isinstance(finished["duration_ms"], int)

    listed = await call(client, "todo_list", workflow_id=w, status_filter="completed")
    assert [t["id"] for t in listed["tasks"]] == [db["task_id"], auth["task_id"]]
    assert (listed["count"], listed["total"], listed["has_more"]) == (2, 2, False)
    nothing = await call(client, "todo_next", workflow_id=w)
    assert nothing["task"] is None and nothing["pending_count"] == 0

    await fail(client, "todo_delete", "VALIDATION_FAILED", workflow_id=w, task_id=db["task_id"])
    deleted = await call(client, "todo_delete", workflow_id=w, task_id=db["task_id"], cascade=True)
    assert deleted["deleted"] == [db["task_id"], auth["task_id"]] and deleted["count"] == 2
    assert (await call(client, "todo_list", workflow_id=w))["total"] == 0


@pytest.mark.anyio
async def test_text_rendering(client: Client) -> None:
    w = "render"
    created = await client.call_tool("todo_create", {"workflow_id": w, "name": "Write docs", "priority": 2})
    text = text_of(created)
    task_id = data_of(created)["task_id"]
    assert text == f"Created {task_id} [pending] P2 Write docs in workflow {w}."
    listed = await client.call_tool("todo_list", {"workflow_id": w})
    assert text_of(listed).splitlines() == [
        f"1 of 1 tasks in workflow {w}:",
        f"{task_id} [pending] P2 Write docs",
    ]
    error = await client.call_tool("todo_get", {"workflow_id": w, "task_id": "task_000000000000"})
    assert error.content[0].text.startswith("[NOT_FOUND] no task 'task_000000000000'")  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_update_and_cycles(client: Client) -> None:
    w = "cycles"
    a = (await call(client, "todo_create", workflow_id=w, name="a"))["task_id"]
    b = (await call(client, "todo_create", workflow_id=w, name="b", dependencies=[a]))["task_id"]
    c = (await call(client, "todo_create", workflow_id=w, name="c", dependencies=[b]))["task_id"]
    message = await fail(client, "todo_update", "VALIDATION_FAILED", workflow_id=w, task_id=a, dependencies=[c])
    assert f"{a} → {c} → {b} → {a}" in message
    await fail(client, "todo_update", "VALIDATION_FAILED", workflow_id=w, task_id=a, dependencies=[a])
    await fail(client, "todo_update", "NOT_FOUND", workflow_id=w, task_id=a, dependencies=["task_ffffffffffff"])
    edit = {"name": "c2", "priority": 1, "dependencies": [a], "assigned_agent": "x"}
    updated = await call(client, "todo_update", workflow_id=w, task_id=c, **edit)
    assert (updated["task"]["name"], updated["task"]["priority"], updated["task"]["dependencies"]) == ("c2", 1, [a])
    unassigned = await call(client, "todo_update", workflow_id=w, task_id=c, unassign=True)
    assert unassigned["task"]["assigned_agent"] is None
    assert (await call(client, "todo_get", workflow_id=w, task_id=a))["dependents"] == [b, c]


@pytest.mark.anyio
async def test_force(client: Client) -> None:
    w = "force"
    first = (await call(client, "todo_create", workflow_id=w, name="first"))["task_id"]
    second = (await call(client, "todo_create", workflow_id=w, name="second", dependencies=[first]))["task_id"]
    await fail(client, "todo_complete", "VALIDATION_FAILED", workflow_id=w, task_id=second)
    forced = await call(client, "todo_complete", workflow_id=w, task_id=second, force=True)
    assert forced["forced_past"] == [first] and forced["new_status"] == "completed"
    assert forced["duration_ms"] is None  # never started, no duration given


@pytest.mark.anyio
async def test_workflow_isolation_and_default(client: Client) -> None:
    mine = (await call(client, "todo_create", workflow_id="team-a", name="mine"))["task_id"]
    theirs = (await call(client, "todo_create", workflow_id="team-b", name="theirs"))["task_id"]
    default = await call(client, "todo_create", name="no workflow given")
    assert default["task"]["workflow_id"] == "default"
    assert [t["id"] for t in (await call(client, "todo_list"))["tasks"]] == [default["task_id"]]
    assert [t["id"] for t in (await call(client, "todo_list", workflow_id="team-a"))["tasks"]] == [mine]
    await fail(client, "todo_get", "NOT_FOUND", workflow_id="team-a", task_id=theirs)
    await fail(client, "todo_update_status", "NOT_FOUND", workflow_id="team-a", task_id=theirs, status="completed")
    await fail(client, "todo_complete", "NOT_FOUND", workflow_id="team-a", task_id=theirs)
    await fail(client, "todo_update", "NOT_FOUND", workflow_id="team-a", task_id=theirs, name="x")
    await fail(client, "todo_delete", "NOT_FOUND", workflow_id="team-a", task_id=theirs)
    await fail(client, "todo_create", "NOT_FOUND", workflow_id="team-a", name="x", dependencies=[theirs])
    assert (await call(client, "todo_get", workflow_id="team-b", task_id=theirs))["task"]["name"] == "theirs"
    assert (await call(client, "todo_next", workflow_id="team-b"))["task"]["id"] == theirs
    message = await fail(client, "todo_complete", "NOT_FOUND", task_id=theirs)  # workflow_id forgotten
    assert f"no task {theirs!r} in workflow 'default'" in message and "team-b" not in message, message
    assert "only visible with that workflow's workflow_id: pass it if you know it" in message, message


@pytest.mark.anyio
async def test_a_refusal_names_one_dependent_in_the_singular(client: Client) -> None:
    first = (await call(client, "todo_create", workflow_id="grammar", name="first"))["task_id"]
    then = (await call(client, "todo_create", workflow_id="grammar", name="then", dependencies=[first]))["task_id"]
    message = await fail(client, "todo_delete", "VALIDATION_FAILED", workflow_id="grammar", task_id=first)
    assert f"task {then} depends on it." in message, message


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("todo_create", {"name": "x" * 129}, "name"),
        ("todo_create", {"name": ""}, "name"),
        ("todo_create", {"name": "   "}, "name"),
        ("todo_create", {}, "name"),
        ("todo_create", {"name": "x", "description": "d" * 1001}, "description"),
        ("todo_create", {"name": "x", "priority": 0}, "priority"),
        ("todo_create", {"name": "x", "priority": 6}, "priority"),
        ("todo_create", {"name": "x", "priority": "high"}, "priority"),
        ("todo_create", {"name": "x", "dependencies": [f"t{i}" for i in range(101)]}, "dependencies"),
        ("todo_create", {"name": "x", "dependencies": ["../x"]}, "dependencies"),
        ("todo_create", {"name": "x", "assigned_agent": "two words"}, "assigned_agent"),
        ("todo_create", {"name": "x", "workflow_id": "bad/id"}, "workflow_id"),
        ("todo_create", {"name": "x", "workflow_id": "w" * 129}, "workflow_id"),
        ("todo_create", {"name": "x", "operation": "create"}, "operation"),
        ("todo_get", {}, "task_id"),
        ("todo_get", {"task_id": "x" * 65}, "task_id"),
        ("todo_update_status", {"task_id": "task_1", "status": "done"}, "status"),
        ("todo_list", {"limit": 1001}, "limit"),
        ("todo_list", {"limit": 0}, "limit"),
        ("todo_list", {"offset": -1}, "offset"),
        ("todo_list", {"status_filter": "archived"}, "status_filter"),
        ("todo_complete", {"task_id": "task_1", "duration_ms": -1}, "duration_ms"),
        ("todo_complete", {"task_id": "task_1", "duration_ms": 10**13}, "duration_ms"),
        ("todo_delete", {"task_id": "task_1", "cascade": "maybe"}, "cascade"),
        ("todo_update", {"task_id": "task_1", "priority": 7}, "priority"),
        ("todo_next", {"assigned_agent": ""}, "assigned_agent"),
    ],
)
async def test_invalid_input(client: Client, tool: str, arguments: dict[str, Any], field: str) -> None:
    message = await fail(client, tool, "INVALID_INPUT", **arguments)
    assert field in message


@pytest.mark.anyio
async def test_limits_at_the_edge(client: Client) -> None:
    w = "edges"
    deps = [(await call(client, "todo_create", workflow_id=w, name=f"d{i}"))["task_id"] for i in range(100)]
    big = await call(client, "todo_create", workflow_id="e" * 64, name="n" * 128, description="d" * 1000, priority=5)
    assert len(big["task"]["name"]) == 128
    many = await call(client, "todo_create", workflow_id=w, name="many", dependencies=deps)
    assert len(many["task"]["dependencies"]) == 100
    page = await call(client, "todo_list", workflow_id=w, limit=1000)
    assert (page["count"], page["total"], page["has_more"]) == (101, 101, False)
    page = await call(client, "todo_list", workflow_id=w, limit=40, offset=80)
    assert (page["count"], page["offset"], page["has_more"]) == (21, 80, False)
    assert (await call(client, "todo_list", workflow_id=w, limit=40))["has_more"] is True
    missing = await fail(client, "todo_create", "NOT_FOUND", workflow_id=w, name="x", dependencies=["task_nope"])
    assert "task_nope" in missing


@pytest.mark.anyio
async def test_task_cap(client: Client, data_dir: Path) -> None:
    """A workflow filled to 10,000 tasks (written straight into the shared file) refuses one more."""
    board = Board(data_dir / FILE_NAME)
    now = now_iso()
    with board.db.write() as conn:
        conn.executemany(
            "INSERT INTO tasks (id, workflow_id, name, status, priority, created_at, updated_at)"
            " VALUES (?, 'full', ?, 'pending', 3, ?, ?)",
            [(f"bulk_{i}", f"bulk {i}", now, now) for i in range(10_000)],
        )
    board.close()
    message = await fail(client, "todo_create", "MAX_LIMIT_EXCEEDED", workflow_id="full", name="one too many")
    assert "10000" in message
    page = await call(client, "todo_list", workflow_id="full", limit=1000, offset=9500)
    assert (page["count"], page["total"]) == (500, 10_000)
    await call(client, "todo_delete", workflow_id="full", task_id="bulk_0")
    fits = await call(client, "todo_create", workflow_id="full", name="fits again")
    await fail(client, "todo_create", "MAX_LIMIT_EXCEEDED", workflow_id="full", name="full again")
    repeated = await call(client, "todo_create", workflow_id="full", name="fits again")  # its answer was lost
    assert (repeated["created"], repeated["task_id"]) == (False, fits["task_id"])


@pytest.mark.anyio
async def test_a_retried_create_returns_the_task_it_made(client: Client) -> None:
    arguments = {"workflow_id": "retried", "name": "Tag the release", "description": "v2.0.0", "priority": 2}
    made = await call(client, "todo_create", **arguments)
    again = await call(client, "todo_create", **arguments)  # as a client does when the first answer was lost
    assert made["created"] is True and again["created"] is False
    assert again["task_id"] == made["task_id"] and again["task"] == made["task"]
    assert "allow_duplicate=true" in again["message"]
    assert "already has these fields" in text_of(await client.call_tool("todo_create", arguments))
    another = await call(client, "todo_create", **arguments, allow_duplicate=True)
    assert another["created"] is True and another["task_id"] != made["task_id"]
    listed = await call(client, "todo_list", workflow_id="retried")
    assert sorted(task["id"] for task in listed["tasks"]) == sorted([made["task_id"], another["task_id"]])


def unwrapped(value: Any) -> Any:
    """An error's details out of their provenance envelopes (`shared.serving.provenance`: they are the store's data)."""
    if isinstance(value, dict):
        return {key: unwrapped(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unwrapped(item) for item in value]
    return unwrap(value) if isinstance(value, str) else value


@pytest.mark.anyio
async def test_a_repeated_delete_says_the_first_one_did_it(client: Client) -> None:
    """A client calls todo_delete again after losing its answer (a 502, a timeout): still NOT_FOUND (an id deleted
    long ago may be the caller's mistake), but the message and the details say when it was deleted, and by what."""
    w = "retried-delete"
    root = (await call(client, "todo_create", workflow_id=w, name="root"))["task_id"]
    leaf = (await call(client, "todo_create", workflow_id=w, name="leaf", dependencies=[root]))["task_id"]
    assert (await call(client, "todo_delete", workflow_id=w, task_id=root, cascade=True))["deleted"] == [root, leaf]
    result = await client.call_tool("todo_delete", {"workflow_id": w, "task_id": root, "cascade": True})
    code, message = error_of(result)
    details = unwrapped(result.structured_content["details"])  # type: ignore[index]
    when = details["deleted_at"]
    assert code == "NOT_FOUND" and details == {"deleted_at": when, "dependents_deleted": [leaf]}
    assert message == (
        f"task {root} was already deleted at {when} (with its dependent {leaf}); if this call repeats an earlier "
        "delete, that delete is done — nothing to do."
    )
    assert text_of(result) == f"[NOT_FOUND] {message}"
    result = await client.call_tool("todo_get", {"workflow_id": w, "task_id": leaf})
    assert f"by cascade from task {root}" in error_of(result)[1]
    assert unwrapped(result.structured_content["details"]) == {"deleted_at": when, "deleted_with": root}  # type: ignore[index]
    message = await fail(client, "todo_update_status", "NOT_FOUND", workflow_id=w, task_id=leaf, status="completed")
    assert "already deleted" in message and "nothing to do" not in message
