"""Text fallback and durability: servers whose model cannot load (fast to start), restart, concurrency, kill -9."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.stdio import cli_command, data_of, section_client

NO_MODEL = {"MCP_SECTIONS_MEMORY_EMBEDDING_MODEL": "/nonexistent"}
DB_FILE = "memory.sqlite3"
DEPLOYS = "Deployments to production happen every Friday"


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    return data_of(await client.call_tool(tool, arguments))


def integrity(path: Path) -> tuple[str, int]:
    with sqlite3.connect(path) as connection:
        connection.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")  # raises if corrupt
        return connection.execute("PRAGMA integrity_check").fetchone()[0], connection.execute(
            "SELECT count(*) FROM memories"
        ).fetchone()[0]


@pytest.mark.anyio
async def test_text_fallback_when_the_model_cannot_load(tmp_path: Path) -> None:
    async with section_client("memory", "--data-dir", str(tmp_path / "data"), env=NO_MODEL) as client:
        await client.list_tools()
        added = await call(client, "memory_add", type="knowledge", content=DEPLOYS)
        assert added["stored"] and added["embedding_generated"] is False
        assert "unavailable" in added["note"] and "/nonexistent" in added["note"] and "text" in added["note"]
        await call(client, "memory_add", type="knowledge", content="Invoices live in PostgreSQL")
        for mode in ("vector", "hybrid"):
            found = await call(client, "memory_search", query="which deployment day?", mode=mode)
            assert found["search_type"] == "text", found
            assert "text search" in found["notes"][0] and "/nonexistent" in found["notes"][0]
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
    async with section_client("memory", "--data-dir", data_dir, env=NO_MODEL) as client:
        ids = [
            (await call(client, "memory_add", type="decision", content=f"Decision {n}: use plan {n}", workflow_id="w"))[
                "memory_id"
            ]
            for n in range(5)
        ]
        await call(client, "memory_update", memory_id=ids[0], tags=["kept"], metadata={"n": 0}, workflow_id="w")
        await call(client, "memory_delete", memory_id=ids[1], workflow_id="w")
        before = await call(client, "memory_list", workflow_id="w", limit=100)
    async with section_client("memory", "--data-dir", data_dir, env=NO_MODEL) as client:
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
        section_client("memory", "--data-dir", data_dir, env=NO_MODEL) as one,
        section_client("memory", "--data-dir", data_dir, env=NO_MODEL) as two,
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


class RawServer:
    """`mcp-sections serve memory` driven with raw JSON-RPC lines, so the test owns (and can kill) the process."""

    def __init__(self, data_dir: Path) -> None:
        command = [*cli_command(), "serve", "memory", "--data-dir", str(data_dir)]
        env = {key: value for key, value in os.environ.items() if key.startswith(("MCP_SECTIONS_", "PATH", "HOME"))}
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**env, **NO_MODEL},
        )
        self.responses: dict[int, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            if "id" in message:
                with self.lock:
                    self.responses[message["id"]] = message

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def wait_for(self, predicate: Any, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if predicate(self.responses):
                    return
            time.sleep(0.005)
        raise AssertionError(f"server did not answer in time ({len(self.responses)} responses)")

    def initialize(self) -> None:
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "kill", "version": "0"}}
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        self.wait_for(lambda responses: 0 in responses)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


@pytest.mark.anyio
async def test_kill_9_mid_burst_loses_no_acknowledged_memory(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    server = RawServer(data_dir)
    burst = 400
    try:
        server.initialize()
        for index in range(1, burst + 1):
            arguments = {"type": "knowledge", "content": f"burst memory {index}", "workflow_id": "burst"}
            params = {"name": "memory_add", "arguments": arguments}
            server.send({"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": params})
        server.wait_for(lambda responses: len(responses) > 60)  # adds are being acknowledged...
        server.process.send_signal(signal.SIGKILL)  # ...and the server dies in the middle of the burst
        server.process.wait(timeout=10)
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()
    server.reader.join(timeout=5)
    acknowledged = {}
    for message_id, message in server.responses.items():
        if message_id == 0:
            continue
        result = message["result"]
        assert not result.get("isError"), result
        acknowledged[result["structuredContent"]["memory_id"]] = f"burst memory {message_id}"
    assert 60 <= len(acknowledged) < burst, "the kill should land mid-burst"

    assert integrity(data_dir / DB_FILE)[0] == "ok"
    async with section_client("memory", "--data-dir", str(data_dir), env=NO_MODEL) as client:
        for memory_id, content in acknowledged.items():
            got = await call(client, "memory_get", memory_id=memory_id, workflow_id="burst")
            assert got["memory"]["content"] == content
        listed = await call(client, "memory_list", workflow_id="burst", scope="workflow", limit=1)
        assert listed["total"] >= len(acknowledged)
