"""Text fallback when the model cannot load (in memory), and durability across processes: restart, two processes on
one database, kill -9 (servers with embeddings off: these are about the database, and they start without a model)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_sections.shared.embeddings.embedder import default_model_runs
from tests.in_memory import section_in_memory
from tests.processes import RawServer
from tests.stdio import call, section_client

TEXT_ONLY = {"MCP_SECTIONS_MEMORY_EMBEDDINGS_ENABLED": "false"}
DB_FILE = "memory.sqlite3"
DEPLOYS = "Deployments to production happen every Friday"


def integrity(path: Path) -> tuple[str, int]:
    with sqlite3.connect(path) as connection:
        connection.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")  # raises if corrupt
        return connection.execute("PRAGMA integrity_check").fetchone()[0], connection.execute(
            "SELECT count(*) FROM memories"
        ).fetchone()[0]


@pytest.mark.anyio
@pytest.mark.skipif(
    not default_model_runs(),
    reason="needs the memory extra (pip install 'mcp-sections[memory]'): without it there is no model path to break",
)
async def test_text_fallback_when_the_model_cannot_load(tmp_path: Path) -> None:
    no_model = tmp_path / "not-a-model"  # a directory without a model in it
    no_model.mkdir()
    env = {"MCP_SECTIONS_MEMORY_EMBEDDING_MODEL": str(no_model)}
    async with section_in_memory("memory", "--data-dir", str(tmp_path / "data"), env=env) as client:
        await client.list_tools()
        # a search waits for the model's first load to end (here: to fail); an add made during that load would
        # rightly say "is loading" instead
        await call(client, "memory_search", query="anything")
        added = await call(client, "memory_add", type="knowledge", content=DEPLOYS)
        assert added["stored"] and added["embedding_generated"] is False
        assert "unavailable" in added["note"] and str(no_model) in added["note"] and "text" in added["note"]
        await call(client, "memory_add", type="knowledge", content="Invoices live in PostgreSQL")
        for mode in ("vector", "hybrid"):
            found = await call(client, "memory_search", query="which deployment day?", mode=mode)
            assert found["search_type"] == "text", found
            assert "text search" in found["notes"][0] and str(no_model) in found["notes"][0]
            assert [r["memory"]["content"] for r in found["results"]] == [DEPLOYS]
            assert found["results"][0]["similarity"] is None and found["results"][0]["matched_by"] == ["text"]
        assert (await call(client, "memory_search", query="kubernetes"))["count"] == 0
        twin = await call(client, "memory_add", type="knowledge", content=DEPLOYS)
        assert twin["duplicate_of"] == added["memory_id"], "identical text is a duplicate even without vectors"
        got = await call(client, "memory_get", memory_id=added["memory_id"])
        assert got["memory"]["embedded"] is False


@pytest.mark.anyio
async def test_persistence_across_restart(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "data")
    async with section_client("memory", "--data-dir", data_dir, env=TEXT_ONLY) as client:
        ids = [
            (await call(client, "memory_add", type="decision", content=f"Decision {n}: use plan {n}", workflow_id="w"))[
                "memory_id"
            ]
            for n in range(5)
        ]
        await call(client, "memory_update", memory_id=ids[0], tags=["kept"], metadata={"n": 0}, workflow_id="w")
        await call(client, "memory_delete", memory_id=ids[1], workflow_id="w")
        before = await call(client, "memory_list", workflow_id="w", limit=100)
    async with section_client("memory", "--data-dir", data_dir, env=TEXT_ONLY) as client:
        after = await call(client, "memory_list", workflow_id="w", limit=100)
        assert after == before and after["total"] == 4
        kept = (await call(client, "memory_get", memory_id=ids[0], workflow_id="w"))["memory"]
        assert kept["tags"] == ["kept"] and kept["metadata"] == {"n": 0}
        found = await call(client, "memory_search", query="plan 3", workflow_id="w")
        assert found["results"][0]["memory"]["id"] == ids[3]
    assert integrity(tmp_path / "data" / DB_FILE) == ("ok", 4)


@pytest.mark.anyio
async def test_two_processes_write_concurrently(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "data")
    per_client = 60
    results: list[dict[str, Any]] = []
    async with (
        section_client("memory", "--data-dir", data_dir, env=TEXT_ONLY) as one,
        section_client("memory", "--data-dir", data_dir, env=TEXT_ONLY) as two,
    ):

        async def add(client: Client, label: str, n: int) -> None:
            content = f"{label} wrote note {n}"
            results.append(await call(client, "memory_add", type="context", content=content, workflow_id="shared"))

        async with anyio.create_task_group() as group:
            for n in range(per_client):
                group.start_soon(add, one, "one", n)
                group.start_soon(add, two, "two", n)
        ids = {r["memory_id"] for r in results}  # every call succeeded: no "database is locked" reached us
        assert len(ids) == 2 * per_client
        for client in (one, two):
            listed = await call(client, "memory_list", workflow_id="shared", scope="workflow", limit=100)
            assert listed["total"] == 2 * per_client
            found = await call(client, "memory_search", query="two wrote", workflow_id="shared", limit=100)
            assert found["count"] == 100
    assert integrity(tmp_path / "data" / DB_FILE) == ("ok", 2 * per_client)


@pytest.mark.anyio
async def test_kill_9_mid_burst_loses_no_acknowledged_memory(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    burst = 400
    with RawServer(["memory", "--data-dir", str(data_dir)], env=TEXT_ONLY) as server:
        server.initialize()
        for index in range(1, burst + 1):
            arguments = {"type": "knowledge", "content": f"burst memory {index}", "workflow_id": "burst"}
            server.call_tool(index, "memory_add", arguments)
        server.wait_for(lambda responses: len(responses) > 60)  # adds are being acknowledged...
        server.kill_9()  # ...and the server dies in the middle of the burst
    acknowledged = {}
    for message_id, result in server.tool_results().items():
        assert not result.get("isError"), result
        acknowledged[result["structuredContent"]["memory_id"]] = f"burst memory {message_id}"
    assert 60 <= len(acknowledged) < burst, "the kill should land mid-burst"

    assert integrity(data_dir / DB_FILE)[0] == "ok"
    async with section_client("memory", "--data-dir", str(data_dir), env=TEXT_ONLY) as client:
        for memory_id, content in acknowledged.items():
            got = await call(client, "memory_get", memory_id=memory_id, workflow_id="burst")
            assert got["memory"]["content"] == content
        listed = await call(client, "memory_list", workflow_id="burst", scope="workflow", limit=1)
        assert listed["total"] >= len(acknowledged)
