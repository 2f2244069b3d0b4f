"""A gateway for a team on this machine: 1 and 2 replicas behind HAProxy, and what the shared stores cost.

Run: python -m benchmarks.bench_team [--clients 8] [--calls 40]

1. Throughput and latency through the load balancer: `--clients` concurrent 2026-07-28 clients each make `--calls`
   calls through HAProxy (docker/haproxy.cfg), alternately todo_create and memory_search (by words) through
   call_section_tool, with the replicas on one Redis and one PostgreSQL (the team profile), first with 1 replica,
   then with 2, in the same run. Calls per second over the whole burst, and each call's p50 and p95.
2. The cost of the shared stores against the embedded defaults, one replica called directly (no balancer), one
   client: todo_create, todo_get, memory_add, memory_search through the gateway, each on SQLite files (one person)
   and on PostgreSQL; a task started and read (2026 tasks extension; a 30 s shell command, cancelled) with tasks in
   the process and on Redis.
3. The same stores in process, without MCP (what the store itself adds): the board's create and get, the memory
   store's add and search by words, on SQLite and on PostgreSQL; a task's start and find in memory and on Redis.

Needs: redis-server, postgres (/usr/lib/postgresql/15/bin) and haproxy (scripts/setup.sh installs them), the `team`
extra. Not part of the tests. This machine's cores are shared by the clients, HAProxy, PostgreSQL, Redis and the
replicas: a second replica adds throughput only where a core is idle. Compare within one run.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from benchmarks.harness import compile_project, percentile, print_table
from tests.tasks_client import CreatedTask, call_for_task, cancel_task, get_task
from tests.team.engines import postgres_server, redis_server
from tests.team.team import client, forward, team

SAMPLES = 60


async def burst(url: str, clients: int, calls: int) -> tuple[float, list[float]]:
    """(calls per second, each call's milliseconds) of `clients` clients making `calls` calls each."""
    latencies: list[float] = []

    async def one(number: int) -> None:
        async with client(url, "bench") as connected:
            await forward(connected, "memory", "memory_add", type="knowledge", content=f"client {number} warmed up")
            for step in range(calls):
                started = time.perf_counter()
                if step % 2:
                    await forward(connected, "memory", "memory_search", query=f"client {number} step", mode="hybrid")
                else:
                    await forward(connected, "todo", "todo_create", name=f"c{number} s{step}", workflow_id="bench")
                latencies.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for number in range(clients):
            group.start_soon(one, number)
    return len(latencies) / (time.perf_counter() - started), latencies


async def throughput(base: Path, clients: int, calls: int) -> list[list[Any]]:
    rows = []
    for count in (1, 2):
        with team(base / f"throughput-{count}", replicas=count) as running:
            await burst(running.url, clients, 4)  # every replica's sections started, connections warm
            rate, latencies = await burst(running.url, clients, calls)
            rows.append(
                [f"{count} replica{'s' if count > 1 else ''}", len(latencies), rate,
                 percentile(latencies, 0.5), percentile(latencies, 0.95)]
            )  # fmt: skip
    return rows


async def timed(call: Callable[[], Awaitable[Any]], samples: int = SAMPLES) -> list[float]:
    for _ in range(3):
        await call()
    measured = []
    for _ in range(samples):
        started = time.perf_counter()
        await call()
        measured.append((time.perf_counter() - started) * 1000)
    return measured


async def through_the_gateway(base: Path) -> list[list[Any]]:
    """Per operation: p50/p95 on the embedded defaults, then on the shared stores (one replica, called directly)."""
    results: dict[str, dict[bool, list[float]]] = {}
    for shared in (False, True):
        with team(base / f"stores-{'shared' if shared else 'embedded'}", replicas=1, shared=shared) as running:
            (running.replicas[0].root / "wait.py").write_text("import time\ntime.sleep(30)\n")
            url = running.replicas[0].url
            async with client(url, "bench", tasks=True) as connected:
                created = await forward(connected, "todo", "todo_create", name="kept", workflow_id="stores")
                operations: dict[str, Callable[[], Awaitable[Any]]] = {
                    "todo_create": lambda c=connected: forward(c, "todo", "todo_create", name="x", workflow_id="s"),
                    "todo_get": lambda c=connected, i=created["task_id"]: forward(
                        c, "todo", "todo_get", task_id=i, workflow_id="stores"
                    ),
                    "memory_add": lambda c=connected: forward(
                        c, "memory", "memory_add", type="context", content=f"note {time.perf_counter_ns()}"
                    ),
                    "memory_search (words)": lambda c=connected: forward(
                        c, "memory", "memory_search", query="note about things", mode="hybrid"
                    ),
                    "task start + tasks/get": lambda c=connected: _task_round(c),
                }
                for name, operation in operations.items():
                    samples = SAMPLES // 3 if name.startswith("task") else SAMPLES
                    results.setdefault(name, {})[shared] = await timed(operation, samples)
    return [
        [name, percentile(by[False], 0.5), percentile(by[False], 0.95), percentile(by[True], 0.5),
         percentile(by[True], 0.95), percentile(by[True], 0.5) / percentile(by[False], 0.5)]
        for name, by in results.items()
    ]  # fmt: skip


async def _task_round(connected: Client) -> None:
    arguments = {"command": ["python3", "wait.py"], "timeout_seconds": 120}
    created = await call_for_task(
        connected, "call_section_tool", {"section": "shell_ops", "tool": "run_command", "arguments": arguments}
    )
    assert isinstance(created, CreatedTask), created
    await get_task(connected.session, created.task_id)
    await cancel_task(connected.session, created.task_id)


async def in_process(base: Path) -> list[list[Any]]:
    """Per store operation without MCP: microseconds on SQLite and on PostgreSQL (Redis for the tasks)."""
    from mcp_sections.servers.memory.store import MemoryStore
    from mcp_sections.servers.todo.board import Board

    rows = []
    with postgres_server(base / "postgres") as postgres:
        url = postgres.create_database("bench")
        boards = {False: Board(base / "todo.sqlite3"), True: Board(None, postgres_url=url)}
        memories = {
            False: MemoryStore(base / "memory.sqlite3", None),
            True: MemoryStore(None, None, postgres_url=url),  # type: ignore[arg-type]
        }
        kept = {shared: board.create("w", "kept").id for shared, board in boards.items()}
        operations: dict[str, Callable[[bool], Any]] = {
            "board.create": lambda s: boards[s].create("w", "task"),
            "board.get": lambda s: boards[s].get("w", kept[s]),
            "memory.add": lambda s: memories[s].add("context", f"note {time.perf_counter_ns()}", workflow_id=None),
            "memory.search (words)": lambda s: memories[s].search("note things", workflow_id=None),
        }
        for name, operation in operations.items():
            by = {shared: _sync_timed(lambda s=shared, o=operation: o(s)) for shared in (False, True)}
            rows.append(_row(name, by))
        for store in (*boards.values(), *memories.values()):
            store.close()
    with redis_server(base / "redis") as redis:
        rows.append(_row("task start + find", await _task_store_costs(redis.url)))
    return rows


def _row(name: str, by: dict[bool, list[float]]) -> list[Any]:
    embedded, shared = (sorted(by[flag]) for flag in (False, True))
    return [name, percentile(embedded, 0.5) * 1000, percentile(embedded, 0.95) * 1000,
            percentile(shared, 0.5) * 1000, percentile(shared, 0.95) * 1000,
            percentile(shared, 0.5) / percentile(embedded, 0.5)]  # fmt: skip


def _sync_timed(call: Callable[[], Any], samples: int = 300) -> list[float]:
    for _ in range(10):
        call()
    measured = []
    for _ in range(samples):
        started = time.perf_counter()
        call()
        measured.append((time.perf_counter() - started) * 1000)
    return measured


async def _task_store_costs(url: str) -> dict[bool, list[float]]:
    from mcp_sections.shared.serving.tasks import TaskStore
    from mcp_sections.shared.store.redis_state import RedisTasks, SharedStateSettings

    async def work() -> dict[str, Any]:
        return {"content": []}

    by: dict[bool, list[float]] = {}
    for shared in (False, True):
        backend = RedisTasks(SharedStateSettings(redis_url=url, redis_prefix="bench")) if shared else None
        store = TaskStore(600, 100_000, shared=backend or False)
        measured = []
        async with store.running():
            for number in range(310):
                started = time.perf_counter()
                task = await store.start(f"owner{number % 50}", "tool", work, modern=True)
                await store.find(task.id, task.owner)
                if number >= 10:
                    measured.append((time.perf_counter() - started) * 1000)
        by[shared] = measured
    return by


async def main(clients: int, calls: int) -> None:
    compile_project()
    with tempfile.TemporaryDirectory(prefix="bench-team-") as directory:
        base = Path(directory)
        os.chmod(base, 0o755)  # PostgreSQL runs as its own user when this runs as root
        print(f"cores: {len(os.sched_getaffinity(0))}, load: {os.getloadavg()[0]:.2f}\n")
        print(f"1. Through HAProxy: {clients} clients x {calls} calls (todo_create / memory_search by words)")
        print_table(["replicas", "calls", "calls/s", "p50 ms", "p95 ms"], await throughput(base, clients, calls))
        print("\n2. One replica, one client, through the gateway: embedded defaults against the shared stores (ms)")
        headers = ["operation", "SQLite/in-process p50", "p95", "PostgreSQL/Redis p50", "p95", "x p50"]
        print_table(headers, await through_the_gateway(base))
        print("\n3. The stores in process, without MCP (µs)")
        print_table(headers, await in_process(base / "in-process"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=40)
    options = parser.parse_args()
    anyio.run(main, options.clients, options.calls)
