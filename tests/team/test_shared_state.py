"""Tasks and result links shared by replicas through a real Redis server: two task stores in one process stand for
two replicas (each with its own heartbeat and cancel subscription, as in two processes); the gateway replicas
behind a load balancer are `test_replicas.py`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from mcp_sections.shared.framework.resources import Attachment, LinkOwners, ResultStore
from mcp_sections.shared.serving.tasks import STOPPED_REPLICA, TaskStore
from mcp_sections.shared.store import redis_state
from mcp_sections.shared.store.redis_state import RedisLinks, RedisTasks, SharedStateSettings
from tests.team.engines import Redis, redis_server
from tests.waiting import eventually

pytestmark = pytest.mark.anyio
OWNER = "local|client:tests/1"


def settings(url: str, prefix: str) -> SharedStateSettings:
    return SharedStateSettings(redis_url=url, redis_prefix=prefix)


@asynccontextmanager
async def replicas(url: str, prefix: str, count: int = 2) -> AsyncIterator[list[TaskStore]]:
    async with AsyncExitStack() as stack:
        stores = [TaskStore(60, 8, shared=RedisTasks(settings(url, prefix))) for _ in range(count)]
        for store in stores:
            await stack.enter_async_context(store.running())
        yield stores


class Work:
    """A task's work that runs until it is cancelled (or told to finish), and says which happened."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.finish = anyio.Event()
        self.cancelled = False

    async def __call__(self) -> dict[str, Any]:
        self.started.set()
        try:
            await self.finish.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        return {"content": [{"type": "text", "text": "done"}]}


async def test_a_task_started_on_one_replica_is_read_and_cancelled_on_another(redis: Redis, redis_prefix: str) -> None:
    async with replicas(redis.url, redis_prefix) as (a, b):
        work = Work()
        task = await a.start(OWNER, "slow_compute", work, modern=True)
        await work.started.wait()
        seen = await b.find(task.id, OWNER)
        assert seen is not task and seen.status == "working" and seen.tool == "slow_compute"
        assert [listed.id for listed in await b.owned(OWNER)] == [task.id]
        with pytest.raises(MCPError):
            await b.find(task.id, "token:someone-else|client:tests/1")  # another owner: as if it never existed
        assert await b.cancel(seen)
        await eventually(lambda: work.cancelled, timeout=10)  # the work stopped where it ran
        assert task.status == "cancelled"
        assert (await b.find(task.id, OWNER)).status == "cancelled"
        assert not await a.cancel(task)  # ended: nothing left to cancel, on either replica
        assert not await b.cancel(await b.find(task.id, OWNER))


async def test_a_replica_waits_for_the_result_of_another_replicas_task(redis: Redis, redis_prefix: str) -> None:
    async with replicas(redis.url, redis_prefix) as (a, b):
        work = Work()
        task = await a.start(OWNER, "slow_compute", work, modern=False)
        await work.started.wait()
        remote = await b.find(task.id, OWNER)
        work.finish.set()
        ended = await b.wait(remote)  # b reads it until it ended on a
        assert ended.status == "completed" and ended.result == {"content": [{"type": "text", "text": "done"}]}


async def test_the_tasks_of_a_replica_that_stopped_end_failed(
    redis: Redis, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_state, "HEARTBEAT_TTL_SECONDS", 1.0)
    async with replicas(redis.url, redis_prefix, count=1) as (b,):
        async with replicas(redis.url, redis_prefix, count=1) as (a,):
            work = Work()
            task = await a.start(OWNER, "slow_compute", work, modern=True)
            await work.started.wait()
        # a stopped on purpose: its working task was written failed on the way out
        stopped = await b.find(task.id, OWNER)
        assert stopped.status == "failed" and stopped.error is not None and stopped.error["message"] == STOPPED_REPLICA
        # a replica that crashed writes nothing: its heartbeat lapses, and the next replica to read the task fails it
        crashed = RedisTasks(settings(redis.url, redis_prefix), replica="crashed-replica")
        crashed.connect()
        fields = {**_fields_of(stopped), "id": "orphan", "status": "working", "error": None, "ended": None}
        await crashed.put({**fields, "replica": "crashed-replica"}, fields["created"] + 60, fields["created"] + 60)
        await crashed.close()
        orphan = await eventually(lambda: _failed(b, "orphan"), timeout=10)
        assert orphan.error is not None and orphan.error["message"] == STOPPED_REPLICA


async def _failed(store: TaskStore, task_id: str) -> Any:
    task = await store.find(task_id, OWNER)
    return task if task.status == "failed" else None


def _fields_of(task: Any) -> dict[str, Any]:
    from mcp_sections.shared.serving.tasks import _STORED

    return {name: getattr(task, name) for name in _STORED}


async def test_the_replicas_ride_through_a_restart_of_redis(tmp_path: Path, redis_prefix: str) -> None:
    with redis_server(tmp_path / "redis") as server:
        async with replicas(server.url, redis_prefix) as (a, b):
            work = Work()
            task = await a.start(OWNER, "slow_compute", work, modern=True)
            await work.started.wait()
            server.stop()
            server.start()  # same port, same append-only file
            assert (await b.find(task.id, OWNER)).status == "working"  # kept, and the client reconnected
            assert await b.cancel(await b.find(task.id, OWNER))
            await eventually(lambda: work.cancelled, timeout=15)  # the subscription came back too
            again = await a.start(OWNER, "slow_compute", Work(), modern=True)
            assert (await b.find(again.id, OWNER)).status == "working"


def test_links_and_their_owners_are_read_through_any_replica(redis: Redis, redis_prefix: str) -> None:
    one, two = RedisLinks(settings(redis.url, redis_prefix)), RedisLinks(settings(redis.url, redis_prefix))
    minting = ResultStore(ttl_seconds=60, shared=lambda: one)
    reading = ResultStore(ttl_seconds=60, shared=lambda: two)
    text = Attachment.new("# page\n" + "x" * 20_000, name="page.md", mime_type="text/markdown", description="A page")
    image = Attachment.new(b"\x89PNG fake", name="view.png", mime_type="image/png")
    for attachment in (text, image):
        minting.put(attachment)
    assert reading.get(text.uri) == text and reading.get(image.uri) == image
    minting.transform_text(text.uri, lambda body: f"<data>{body}</data>")
    assert reading.get(text.uri).data.startswith("<data># page")  # type: ignore[union-attr]
    assert reading.get("mcp-sections://gateway/results/gone/x") is None
    first, second = LinkOwners(shared=lambda: one), LinkOwners(shared=lambda: two)
    first.record(text.uri, OWNER)
    second.record(text.uri, "token:other|client:x/1")  # the first client keeps it
    assert second.owner(text.uri) == OWNER and first.owner(image.uri) is None
