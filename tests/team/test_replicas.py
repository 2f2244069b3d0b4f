"""Two gateway replicas behind HAProxy, sharing one Redis and one PostgreSQL: the real programs on free ports of this
machine (`team.py`). A task started through replica A is polled and cancelled through B (its program stops on A);
a memory and a todo written through A are read through B; a 2025-11-25 session sticks to its replica and starts
again once that replica is gone; a replica killed mid-burst loses no acknowledged write and its task ends failed;
the replicas reconnect after Redis and PostgreSQL restart."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_sections.shared.serving.tasks import STOPPED_REPLICA
from tests.processes import running_with, unique_seconds
from tests.stdio import data_of
from tests.tasks_client import CreatedTask, call_for_task, cancel_task, get_task
from tests.team.team import Team, client, forward, team
from tests.waiting import eventually

pytestmark = pytest.mark.anyio
WAITER = "import sys, time\ntime.sleep(float(sys.argv[1]))\n"


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    directory = tmp_path_factory.mktemp("team")
    with team(directory) as running:
        (running.replicas[0].root / "wait.py").write_text(WAITER)
        yield running


async def test_a_2026_request_is_served_by_any_replica(replicas: Team) -> None:
    before = replicas.served()
    async with client(replicas.url, "any-replica") as connected:
        assert connected.session.protocol_version == "2026-07-28"
        created = [(await forward(connected, "todo", "todo_create", name=f"step {n}"))["task_id"] for n in range(6)]
        for task_id in created:  # each read lands on either replica: every write is there
            assert (await forward(connected, "todo", "todo_get", task_id=task_id))["task"]["id"] == task_id
    after = replicas.served()
    assert all(after[name] - before.get(name, 0) >= 3 for name in ("a", "b")), (before, after)


async def test_a_memory_and_a_todo_written_through_a_are_read_through_b(replicas: Team) -> None:
    a, b = replicas.replica("a"), replicas.replica("b")
    async with client(a.url, "writer") as on_a, client(b.url, "reader") as on_b:
        memory = await forward(on_a, "memory", "memory_add", type="decision", content="Releases ship on Thursdays")
        found = await forward(on_b, "memory", "memory_search", query="when do releases ship", mode="hybrid")
        assert [hit["memory"]["id"] for hit in found["results"]] == [memory["memory_id"]]
        todo = await forward(on_a, "todo", "todo_create", name="write the release notes", workflow_id="release")
        await forward(on_b, "todo", "todo_update_status", task_id=todo["task_id"], status="in_progress",
                      workflow_id="release")  # fmt: skip
        again = await forward(on_a, "todo", "todo_get", task_id=todo["task_id"], workflow_id="release")
        assert again["task"]["status"] == "in_progress"


async def start_waiting_task(connected: Client, seconds: str) -> str:
    """run_command of a program that sleeps `seconds`, allowed 120 s: long work, a task; its id."""
    arguments = {"command": ["python3", "wait.py", seconds], "timeout_seconds": 120}
    created = await call_for_task(
        connected, "call_section_tool", {"section": "shell_ops", "tool": "run_command", "arguments": arguments}
    )
    assert isinstance(created, CreatedTask), created
    return created.task_id


async def test_a_task_started_through_a_is_polled_and_cancelled_through_b(replicas: Team) -> None:
    a, b = replicas.replica("a"), replicas.replica("b")
    seconds = unique_seconds(300)  # found by its command line
    async with client(a.url, "tasks", tasks=True) as on_a, client(b.url, "tasks", tasks=True) as on_b:
        task_id = await start_waiting_task(on_a, seconds)
        await eventually(lambda: running_with(f"wait.py {seconds}"), timeout=30)
        polled = await get_task(on_b.session, task_id)
        assert polled.status == "working"
        await cancel_task(on_b.session, task_id)
        await eventually(lambda: not running_with(f"wait.py {seconds}"), timeout=15)  # stopped where it ran, on A
        assert (await get_task(on_a.session, task_id)).status == "cancelled"
        assert (await get_task(on_b.session, task_id)).status == "cancelled"
        async with client(b.url, "someone-else", tasks=True) as other:
            with pytest.raises(MCPError):  # another client program: not its task
                await get_task(other.session, task_id)


async def test_a_2025_session_sticks_to_its_replica_and_starts_again_once_it_is_gone(replicas: Team) -> None:
    known = set(replicas.sticky())
    async with client(replicas.url, "sticky", legacy=True) as session:
        table = replicas.sticky()
        (session_id,) = set(table) - known  # stored from the initialize response's Mcp-Session-Id
        name = table[session_id]
        before = replicas.served()
        for _ in range(4):
            assert not (await session.call_tool("get_working_directory", {})).is_error
        after = replicas.served()
        assert after[name] - before[name] >= 4, (before, after)  # all on its replica
        assert all(after[other] == before[other] for other in ("a", "b") if other != name)
        replicas.replica(name).kill()
        try:
            with pytest.raises(MCPError) as gone:  # redispatched to the other replica, which does not know it
                await session.call_tool("get_working_directory", {})
            assert "Session not found" in gone.value.message
            async with client(replicas.url, "sticky", legacy=True) as again:  # the client starts a new session
                assert not (await again.call_tool("get_working_directory", {})).is_error
        finally:
            replicas.replica(name).start()
            await anyio.sleep(1.5)  # HAProxy sees it healthy again (checks every 0.5 s)


@pytest.mark.slow
async def test_a_replica_killed_mid_burst_loses_no_acknowledged_write_and_its_task_ends_failed(
    replicas: Team,
) -> None:
    a = replicas.replica("a")
    seconds = unique_seconds(400)
    async with client(a.url, "burst", tasks=True) as on_a:
        orphan = await start_waiting_task(on_a, seconds)
    acknowledged: list[str] = []
    retried = 0

    async def writer(number: int) -> None:
        """25 todos, each called again until acknowledged (a new client after the connection broke)."""
        nonlocal retried
        step, attempts = 0, 0
        while step < 25 and attempts < 50:
            try:
                async with client(replicas.url, "burst") as connected:
                    while step < 25 and attempts < 50:
                        arguments = {"name": f"w{number} s{step}", "workflow_id": "burst"}
                        result = await connected.call_tool(
                            "call_section_tool", {"section": "todo", "tool": "todo_create", "arguments": arguments}
                        )
                        if result.is_error:  # the todo section of the dying replica: not acknowledged, call again
                            retried, attempts = retried + 1, attempts + 1
                            await anyio.sleep(0.2)
                            continue
                        acknowledged.append(data_of(result)["task_id"])
                        step += 1
            except Exception:  # the replica died under the request (a 502, a cut stream): not acknowledged
                retried, attempts = retried + 1, attempts + 1
                await anyio.sleep(0.2)

    try:
        async with anyio.create_task_group() as group:
            for number in range(8):
                group.start_soon(writer, number)
            await eventually(lambda: len(acknowledged) >= 40, timeout=60)
            a.kill()  # mid-burst: the replica and its sections, at once
        async with client(replicas.url, "burst") as reader:
            listed = await forward(reader, "todo", "todo_list", workflow_id="burst", limit=1000)
            stored = {task["id"] for task in listed["tasks"]}
            assert len(acknowledged) == 200 and set(acknowledged) <= stored, (len(acknowledged), retried)
            # the task a was running: failed once its heartbeat lapsed, read through b
            b = replicas.replica("b")
            async with client(b.url, "burst", tasks=True) as on_b:
                ended = await eventually(lambda: _ended(on_b, orphan), timeout=40)
                assert ended.status == "failed" and ended.status_message == STOPPED_REPLICA
    finally:
        a.start()
        await anyio.sleep(1.5)


async def _ended(connected: Client, task_id: str) -> Any:
    task = await get_task(connected.session, task_id)
    return task if task.status != "working" else None


@pytest.mark.slow
async def test_the_replicas_reconnect_after_redis_and_postgresql_restart(replicas: Team) -> None:
    assert replicas.postgres is not None and replicas.redis is not None
    a, b = replicas.replica("a"), replicas.replica("b")
    async with client(a.url, "restarts") as on_a, client(b.url, "restarts") as on_b:
        before = await forward(on_a, "todo", "todo_create", name="before the restarts", workflow_id="restarts")
        replicas.postgres.stop()
        replicas.postgres.start()  # same port, same data
        replicas.redis.stop()
        replicas.redis.start()  # same port, its append-only file
        after = await forward(on_b, "todo", "todo_create", name="after the restarts", workflow_id="restarts")
        listed = await forward(on_a, "todo", "todo_list", workflow_id="restarts")
        assert {task["id"] for task in listed["tasks"]} == {before["task_id"], after["task_id"]}
    seconds = unique_seconds(500)
    async with client(a.url, "restarts", tasks=True) as on_a, client(b.url, "restarts", tasks=True) as on_b:
        task_id = await start_waiting_task(on_a, seconds)
        assert (await get_task(on_b.session, task_id)).status == "working"
        await cancel_task(on_b.session, task_id)
        await eventually(lambda: not running_with(f"wait.py {seconds}"), timeout=20)
