"""Several server processes on one data directory: restart, concurrent writers, kill -9 mid-burst."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import CallToolResult

from mcp_sections.servers.todo.board import FILE_NAME
from tests.processes import RawServer
from tests.stdio import call, data_of, error_of, section_client


def integrity(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]


@pytest.mark.anyio
async def test_persistence_across_restart(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "data")
    async with section_client("todo", "--data-dir", data_dir) as client:
        first = await call(client, "todo_create", workflow_id="keep", name="first", priority=1)
        second = await call(client, "todo_create", workflow_id="keep", name="second", dependencies=[first["task_id"]])
        await call(client, "todo_update_status", workflow_id="keep", task_id=first["task_id"], status="in_progress")
        done = await call(client, "todo_complete", workflow_id="keep", task_id=first["task_id"], duration_ms=1234)
        before = await call(client, "todo_list", workflow_id="keep")
    async with section_client("todo", "--data-dir", data_dir) as client:
        assert await call(client, "todo_list", workflow_id="keep") == before
        got = await call(client, "todo_get", workflow_id="keep", task_id=first["task_id"])
        assert got["task"] == done["task"] and got["dependents"] == [second["task_id"]]
        assert (await call(client, "todo_next", workflow_id="keep"))["task"]["id"] == second["task_id"]
        third = await call(client, "todo_create", workflow_id="keep", name="after restart")
        assert third["task_id"] not in {first["task_id"], second["task_id"]}
    assert integrity(tmp_path / "data" / FILE_NAME) == "ok"


async def concurrently(*calls: tuple[Client, str, dict[str, Any]]) -> list[CallToolResult]:
    """Run several tool calls at once (over one or more connections); results in call order."""
    results: list[CallToolResult | None] = [None] * len(calls)

    async def run(index: int, client: Client, tool: str, arguments: dict[str, Any]) -> None:
        results[index] = await client.call_tool(tool, arguments)

    async with anyio.create_task_group() as group:
        for index, (client, tool, arguments) in enumerate(calls):
            group.start_soon(run, index, client, tool, arguments)
    return [result for result in results if result is not None]


@pytest.mark.anyio
async def test_two_processes_write_concurrently(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "data")
    per_client = 40
    async with (
        section_client("todo", "--data-dir", data_dir) as one,
        section_client("todo", "--data-dir", data_dir) as two,
    ):
        burst = [
            (client, "todo_create", {"workflow_id": "shared", "name": f"{label}-{index}"})
            for index in range(per_client)
            for client, label in ((one, "one"), (two, "two"))
        ]
        results = await concurrently(*burst)
        ids = {data_of(result)["task_id"] for result in results}  # every call succeeded (no "locked" error)
        assert len(ids) == 2 * per_client
        for client in (one, two):
            listed = await call(client, "todo_list", workflow_id="shared")
            assert {t["id"] for t in listed["tasks"]} == ids

        # Racing rule checks across processes: the checks run inside each write transaction.
        for round_ in range(6):
            w = f"race{round_}"
            a = (await call(one, "todo_create", workflow_id=w, name="a"))["task_id"]
            b = (await call(two, "todo_create", workflow_id=w, name="b"))["task_id"]
            outcomes = await concurrently(
                (one, "todo_update", {"workflow_id": w, "task_id": a, "dependencies": [b]}),
                (two, "todo_update", {"workflow_id": w, "task_id": b, "dependencies": [a]}),
            )
            assert [r.is_error for r in outcomes].count(False) == 1, outcomes  # one edge wins, never a cycle
            assert error_of(next(r for r in outcomes if r.is_error))[0] == "VALIDATION_FAILED"

            # delete vs. a new dependent: never both (no dangling dependency)
            target = (await call(one, "todo_create", workflow_id=w, name="target"))["task_id"]
            deleted, created = await concurrently(
                (one, "todo_delete", {"workflow_id": w, "task_id": target}),
                (two, "todo_create", {"workflow_id": w, "name": "needs target", "dependencies": [target]}),
            )
            assert [deleted.is_error, created.is_error].count(False) == 1, (deleted, created)
            if created.is_error:
                assert error_of(created)[0] == "NOT_FOUND"
            else:
                assert error_of(deleted)[0] == "VALIDATION_FAILED"
    path = tmp_path / "data" / FILE_NAME
    assert integrity(path) == "ok"
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


@pytest.mark.anyio
async def test_kill_9_during_a_burst_loses_no_acknowledged_write(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with RawServer(["todo", "--data-dir", str(data_dir)]) as server:
        server.initialize()
        burst = 400
        for index in range(1, burst + 1):
            arguments = {"workflow_id": "burst", "name": f"write {index}", "priority": index % 5 + 1}
            server.call_tool(index, "todo_create", arguments)
        server.wait_for(lambda responses: len(responses) > 60)  # writes are being acknowledged...
        server.kill_9()  # ...and the server dies in the middle of the burst
    acknowledged = {}
    for result in server.tool_results().values():
        assert not result.get("isError"), result
        acknowledged[result["structuredContent"]["task_id"]] = result["structuredContent"]["task"]["name"]
    assert 60 <= len(acknowledged) < burst, "the kill should land mid-burst"

    path = data_dir / FILE_NAME
    assert integrity(path) == "ok"
    async with section_client("todo", "--data-dir", str(data_dir)) as client:
        stored = {t["id"]: t["name"] for t in (await call(client, "todo_list", workflow_id="burst"))["tasks"]}
        assert acknowledged.items() <= stored.items()  # every acknowledged write survived
        assert len(stored) >= len(acknowledged)
        after = await call(client, "todo_create", workflow_id="burst", name="after the crash")
        assert after["task"]["status"] == "pending"

        # a storage failure under a running server reaches the client as DATABASE_ERROR
        with sqlite3.connect(path) as conn:
            conn.execute("ALTER TABLE tasks RENAME TO tasks_gone")
        code, message = error_of(await client.call_tool("todo_list", {"workflow_id": "burst"}))
        assert code == "DATABASE_ERROR" and "retry" in message
