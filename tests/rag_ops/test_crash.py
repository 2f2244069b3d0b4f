"""kill -9 in the middle of an ingest leaves a consistent brain, and the next ingest resumes it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from mcp_sections.servers.rag_ops.brain import Brain
from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore
from tests.rag_ops.trees import make_bulk_tree
from tests.stdio import NO_WARM_UP, cli_command

FILES = 1500


def _send(process: subprocess.Popen, message: dict) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message) + "\n")
    process.stdin.flush()


def _read(process: subprocess.Popen, deadline: float) -> dict:
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.strip():
            return json.loads(line)
    raise AssertionError("no message from the server in time")


def _kill_during_ingest(root: Path, data: Path) -> int:
    """Start a real server, ingest `root`, SIGKILL it at the first progress report past 100 files."""
    env = {
        **os.environ,
        "MCP_SECTIONS_DATA_DIR": str(data),
        "MCP_SECTIONS_RAG_OPS_EMBEDDINGS": "0",
        **NO_WARM_UP,
    }
    process = subprocess.Popen(
        [*cli_command(), "serve", "rag_ops", "--root", str(root.parent)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    try:
        _send(
            process,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            },
        )
        assert _read(process, deadline)["id"] == 1
        _send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(
            process,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "name": "ingest_directory",
                    "arguments": {"path": str(root)},
                    "_meta": {"progressToken": "p"},
                },
            },
        )
        while True:
            message = _read(process, deadline)
            assert message.get("id") != 2, f"ingest finished before the kill: {message}"
            if message.get("method") == "notifications/progress":
                done = int(message["params"]["progress"])
                assert done < FILES, "the ingest reached its end before it could be killed"
                if done >= 100:  # past a few committed batches (40 files each)
                    os.kill(process.pid, signal.SIGKILL)
                    return done
    finally:
        process.kill()
        process.wait(timeout=10)


def test_kill_during_ingest_leaves_a_consistent_resumable_brain(tmp_path: Path) -> None:
    root = make_bulk_tree(tmp_path / "roots" / "bulk", FILES)
    data = tmp_path / "data"
    progressed = _kill_during_ingest(root, data)
    assert progressed < FILES

    db = sqlite3.connect(data / "brain.sqlite3")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('integrity-check')")  # raises if FTS drifted
    files = db.execute("SELECT count(*) FROM files").fetchone()[0]
    file_nodes = db.execute("SELECT count(*) FROM nodes WHERE label = 'File'").fetchone()[0]
    assert 0 < files == file_nodes < FILES  # whole files only, committed with their records
    orphans = db.execute(
        "SELECT count(*) FROM nodes WHERE file_id IS NOT NULL AND file_id NOT IN (SELECT node_id FROM files)"
    ).fetchone()[0]
    assert orphans == 0
    # every committed file is complete: File + compute_i + helper_i + Thing_i + Thing_i.run
    assert db.execute("SELECT count(*) FROM nodes WHERE label = 'Scope'").fetchone()[0] == 4 * files
    status = db.execute("SELECT status FROM projects").fetchone()[0]
    db.close()
    assert status == "ingesting"

    brain = Brain(SQLiteBrainStore(data / "brain.sqlite3"), [root.parent], background_embeddings=False)
    try:
        resumed = brain.ingest_directory(str(root))
        assert resumed.context == "already-ingested"
        assert resumed.files_unchanged == files and len(resumed.files_added) == FILES - files
        schema = brain.store.schema()
    finally:
        brain.close()

    fresh = Brain(SQLiteBrainStore(tmp_path / "fresh" / "brain.sqlite3"), [root.parent], background_embeddings=False)
    try:
        clean = fresh.ingest_directory(str(root))
        assert clean.files_scanned == FILES
        assert fresh.store.schema() == schema  # same graph as an uninterrupted ingest
    finally:
        fresh.close()
