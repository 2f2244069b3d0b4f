"""A deleted memory's tombstone: a memory_delete repeated after its answer was lost (a 502, a timeout) is still
NOT_FOUND, but says when the memory was deleted, so the caller knows its delete is done. On SQLite and on a real
PostgreSQL server (the team's store), through the tools, and a store created before tombstones gets their table."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sections.servers.memory.dialects import POSTGRES, SQLITE
from mcp_sections.servers.memory.store import MemoryStore
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.serving.provenance import unwrap
from mcp_sections.shared.store.postgres import PostgresDatabase
from mcp_sections.shared.store.sqlite import Database
from tests.in_memory import section_in_memory
from tests.stdio import call, error_of, fail, text_of
from tests.team.engines import Postgres, postgres_server

TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"
TEXT_ONLY = {"MCP_SECTIONS_MEMORY_EMBEDDINGS_ENABLED": "false"}
OpenStore = Callable[..., MemoryStore]
_databases = iter(range(1_000_000))
#: A memory as 965c919's store kept it.
OLD_MEMORY = (
    "INSERT INTO memories (id, type, content, content_hash, workflow_id, created_at, updated_at)"
    " VALUES (?, 'knowledge', 'kept from before', 'h', '', ?, ?)",
    ("mem_" + "0" * 32, "2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:00.000000Z"),
)


@pytest.fixture(scope="module")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Postgres]:
    with postgres_server(tmp_path_factory.mktemp("postgres")) as server:
        yield server


@pytest.fixture(params=["sqlite", "postgres"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenStore]:
    """Opens text-only stores of one database (a file, or a database of the module's PostgreSQL server), closed after
    the test: `open_store(tombstones_kept=...)`."""
    opened: list[MemoryStore] = []
    url = None
    if request.param == "postgres":
        url = request.getfixturevalue("postgres").create_database(f"memory_tombstones_{next(_databases)}")

    def open_store(tombstones_kept: int | None = None) -> MemoryStore:
        store = MemoryStore(tmp_path / "memory.sqlite3", None, postgres_url=url)
        if tombstones_kept is not None:
            store.tombstones_kept = tombstones_kept
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: OpenStore) -> MemoryStore:
    return open_store()


def fails(function: Callable[..., Any], *args: Any, **kwargs: Any) -> ToolFailure:
    with pytest.raises(ToolFailure) as caught:
        function(*args, **kwargs)
    assert caught.value.code == ErrorCode.NOT_FOUND, caught.value.message
    return caught.value


def deleted_at(failure: ToolFailure) -> str:
    """The time the message names, checked against the details."""
    found = re.search(rf"was already deleted at ({TIME})", failure.message)
    assert found is not None, failure.message
    assert failure.details["deleted_at"] == found.group(1)
    return found.group(1)


def add(store: MemoryStore, content: str, workflow_id: str | None = None, kind: str = "knowledge") -> str:
    return store.add(kind, content, workflow_id=workflow_id).memory.id


def test_a_repeated_delete_says_when_the_first_one_deleted_the_memory(store: MemoryStore) -> None:
    memory_id = add(store, "the build server is called hopper", "w")
    assert store.delete(memory_id, workflow_id="w").id == memory_id
    again = fails(store.delete, memory_id, workflow_id="w")
    assert again.message.startswith(f"memory {memory_id} was already deleted at ")
    assert again.message.endswith("; if this call repeats an earlier delete, that delete is done — nothing to do.")
    when = deleted_at(again)
    assert again.details == {"deleted_at": when}
    for failure in (
        fails(store.get, memory_id, workflow_id="w"),
        fails(store.update, memory_id, workflow_id="w", content="changed"),
    ):
        assert deleted_at(failure) == when and "nothing to do" not in failure.message
        assert "memory_list" in failure.message
    # the same content stored again is a new memory (ids are random UUIDs, never reissued): the old id stays deleted
    renewed = add(store, "the build server is called hopper", "w")
    assert renewed != memory_id and deleted_at(fails(store.get, memory_id, workflow_id="w")) == when


def test_memories_a_clear_took_name_it(store: MemoryStore) -> None:
    decisions = [add(store, f"decision {index}", "w", "decision") for index in range(2)]
    kept = add(store, "a piece of knowledge", "w")
    general = add(store, "a general decision", None, "decision")
    assert store.clear_by_type("decision", workflow_id="w") == 2
    for memory_id in decisions:
        failure = fails(store.delete, memory_id, workflow_id="w")
        assert "(by memory_clear_by_type, with every decision memory of workflow w)" in failure.message
        assert failure.details["cleared_type"] == "decision" and "nothing to do" in failure.message
    assert store.get(kept, workflow_id="w").id == kept and store.get(general, workflow_id=None).id == general
    store.clear_by_type("decision", workflow_id=None)
    assert "every decision memory of the general scope" in fails(store.get, general, workflow_id="w").message


def test_a_tombstone_is_seen_only_where_its_memory_was(store: MemoryStore) -> None:
    mine = add(store, "private to workflow a", "a")
    store.delete(mine, workflow_id="a")
    for workflow_id in ("b", None):
        failure = fails(store.delete, mine, workflow_id=workflow_id)
        assert "already deleted" not in failure.message and not failure.details
    deleted_at(fails(store.delete, mine, workflow_id="a"))
    general = add(store, "seen by every workflow")
    store.delete(general, workflow_id="b")  # a general memory, deleted from a workflow's call
    for workflow_id in ("a", "b", None):
        deleted_at(fails(store.get, general, workflow_id=workflow_id))
    assert "already deleted" not in fails(store.get, "mem_" + "f" * 32, workflow_id="a").message


def test_the_newest_tombstones_of_each_scope_are_kept(open_store: OpenStore) -> None:
    assert open_store().tombstones_kept == 1000  # by default; 3 here
    store = open_store(tombstones_kept=3)
    ids = [add(store, f"memory {index}", "w") for index in range(5)]
    general = add(store, "general")
    store.delete(general, workflow_id=None)
    for memory_id in ids:
        store.delete(memory_id, workflow_id="w")
    for forgotten in ids[:2]:
        assert "already deleted" not in fails(store.delete, forgotten, workflow_id="w").message
    for kept in ids[2:]:
        deleted_at(fails(store.delete, kept, workflow_id="w"))
    deleted_at(fails(store.delete, general, workflow_id="w"))  # the general scope's are its own
    cleared = [add(store, f"context {index}", "w", "context") for index in range(5)]
    assert store.clear_by_type("context", workflow_id="w") == 5
    for forgotten in [*ids[2:], *cleared[:2]]:  # the clear's newest memories are remembered, the rest forgotten
        assert "already deleted" not in fails(store.get, forgotten, workflow_id="w").message
    for kept in cleared[2:]:
        assert fails(store.get, kept, workflow_id="w").details["cleared_type"] == "context"
    with store.db.read() as connection:
        rows = connection.execute("SELECT workflow_id, count(*) FROM deleted_memories GROUP BY workflow_id").fetchall()
    assert {row[0]: row[1] for row in rows} == {"w": 3, "": 1}


def test_a_store_created_before_tombstones_gets_their_table(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    Database(path, SQLITE.migrations[:2]).close()  # what 965c919 created
    with sqlite3.connect(path) as connection:
        connection.execute(*OLD_MEMORY)
    store = MemoryStore(path, None)
    old_id = OLD_MEMORY[1][0]
    assert store.get(old_id, workflow_id=None).content == "kept from before"
    store.delete(old_id, workflow_id=None)
    deleted_at(fails(store.delete, old_id, workflow_id=None))
    store.close()
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == len(SQLITE.migrations) == 3


def test_a_postgres_store_created_before_tombstones_gets_their_table(postgres: Postgres) -> None:
    url = postgres.create_database(f"memory_tombstones_{next(_databases)}")
    old = PostgresDatabase(url, POSTGRES.migrations[:2], name="memory")
    with old.write() as connection:
        connection.execute(*OLD_MEMORY)
    old.close()
    store = MemoryStore(None, None, postgres_url=url)  # type: ignore[arg-type]
    old_id = OLD_MEMORY[1][0]
    store.delete(old_id, workflow_id=None)
    deleted_at(fails(store.delete, old_id, workflow_id=None))
    with store.db.read() as connection:
        assert connection.execute("SELECT version FROM schema_versions WHERE store = 'memory'").fetchone()[0] == 3
    store.close()


@pytest.mark.anyio
async def test_a_repeated_memory_delete_through_the_tool(tmp_path: Path) -> None:
    """The client calls memory_delete again after losing its answer: NOT_FOUND, saying when (details deleted_at)."""
    async with section_in_memory("memory", "--data-dir", str(tmp_path / "data"), env=TEXT_ONLY) as client:
        memory_id = (await call(client, "memory_add", type="decision", content="ship on Friday", workflow_id="w"))[
            "memory_id"
        ]
        await call(client, "memory_delete", memory_id=memory_id, workflow_id="w")
        result = await client.call_tool("memory_delete", {"memory_id": memory_id, "workflow_id": "w"})
        code, message = error_of(result)
        when = unwrap(result.structured_content["details"]["deleted_at"])  # type: ignore[index]
        assert code == "NOT_FOUND" and re.fullmatch(TIME, when)
        assert message == (
            f"memory {memory_id} was already deleted at {when}; if this call repeats an earlier delete, that delete "
            "is done — nothing to do."
        )
        assert text_of(result) == f"[NOT_FOUND] {message}"
        message = await fail(client, "memory_get", "NOT_FOUND", memory_id=memory_id, workflow_id="w")
        assert f"was already deleted at {when}" in message and "nothing to do" not in message
        message = await fail(client, "memory_get", "NOT_FOUND", memory_id=memory_id, workflow_id="other")
        assert "already deleted" not in message
