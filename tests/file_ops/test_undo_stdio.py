"""Undo end to end: two file_ops servers over real stdio sharing one data directory. What one server's agent
did, the other lists and undoes (as a user asking "undo what the agent just did" in another session would)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from tests.processes import RawServer
from tests.stdio import call, fail, section_client


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("undo-stdio").resolve()
    (base / "root").mkdir()
    (base / "config.toml").write_text("", encoding="utf-8")
    return base / "root", base / "data"


@pytest.fixture(scope="module")
async def servers(places: tuple[Path, Path]) -> AsyncIterator[tuple[Client, Client]]:
    root, data = places
    env = {"MCP_SECTIONS_CONFIG": str(root.parent / "config.toml"), "MCP_SECTIONS_ROOTS": ""}
    arguments = ("--root", str(root), "--data-dir", str(data))
    async with (
        section_client("file_ops", *arguments, env=env) as agent,
        section_client("file_ops", *arguments, env=env) as user,
    ):
        yield agent, user


@pytest.mark.anyio
async def test_undo_what_the_agent_just_did(servers: tuple[Client, Client], places: tuple[Path, Path]) -> None:
    agent, user = servers
    root, data = places
    (root / "notes.md").write_text("# Notes\nkeep me\n", encoding="utf-8")
    edit = await call(agent, "edit_file", path="notes.md", edits=[{"old_text": "keep me", "new_text": "overwritten"}])
    created = await call(agent, "write_file", path="src/new.py", content="print(1)\n", create_parents=True)
    deleted = await call(agent, "delete_path", path="notes.md")
    assert None not in (edit["change_id"], created["change_id"], deleted["change_id"])

    listing = await call(user, "list_file_changes")
    assert [(item["id"], item["tool"]) for item in listing["changes"]] == [
        (deleted["change_id"], "delete_path"),
        (created["change_id"], "write_file"),
        (edit["change_id"], "edit_file"),
    ]
    assert listing["changes"][0]["path"] == str(root / "notes.md") and listing["changes"][0]["status"] == "done"

    undone = await call(user, "undo_file_change")  # the newest: the delete
    assert undone["undone_id"] == deleted["change_id"] and undone["actions"] == [
        {"path": str(root / "notes.md"), "action": "created"}
    ]
    assert (root / "notes.md").read_text(encoding="utf-8") == "# Notes\noverwritten\n"
    await call(user, "undo_file_change")  # the new file, and the directory made for it
    assert not (root / "src").exists()
    await call(user, "undo_file_change", change_id=edit["change_id"])
    assert (root / "notes.md").read_text(encoding="utf-8") == "# Notes\nkeep me\n"
    assert "no change left to undo" in await fail(user, "undo_file_change", "NOT_FOUND")

    # changed since: refused with how to proceed; force undoes and keeps what it overwrote
    again = await call(agent, "write_file", path="notes.md", content="agent text\n")
    (root / "notes.md").write_text("user text\n", encoding="utf-8")
    message = await fail(user, "undo_file_change", "VALIDATION_FAILED", change_id=again["change_id"])
    assert "changed since" in message and "force=true" in message
    forced = await call(user, "undo_file_change", change_id=again["change_id"], force=True)
    assert forced["forced"] == ["notes.md"]
    assert (root / "notes.md").read_text(encoding="utf-8") == "# Notes\nkeep me\n"
    await call(agent, "undo_file_change", change_id=forced["change_id"])  # the user's text comes back
    assert (root / "notes.md").read_text(encoding="utf-8") == "user text\n"

    statuses = {item["id"]: item["status"] for item in (await call(agent, "list_file_changes", limit=200))["changes"]}
    assert statuses[again["change_id"]] == "done" and statuses[forced["change_id"]] == "undone"
    assert (data / "file_changes.sqlite3").exists()
    await fail(agent, "read_file", "PERMISSION_DENIED", path=str(data / "file_changes.sqlite3"))


@pytest.mark.anyio
async def test_moves_copies_and_bounded_inputs(servers: tuple[Client, Client], places: tuple[Path, Path]) -> None:
    agent, user = servers
    root, _ = places
    (root / "m").mkdir()
    (root / "m" / "a.txt").write_text("a", encoding="utf-8")
    moved = await call(agent, "move_file", source="m/a.txt", destination="m/b.txt")
    copied = await call(agent, "copy_file", source="m/b.txt", destination="m/c.txt")
    listing = (await call(user, "list_file_changes", limit=2))["changes"]
    assert [item["source"] for item in listing] == [str(root / "m" / "b.txt"), str(root / "m" / "a.txt")]
    await call(user, "undo_file_change", change_id=copied["change_id"])
    await call(user, "undo_file_change", change_id=moved["change_id"])
    assert sorted(path.name for path in (root / "m").iterdir()) == ["a.txt"]
    await fail(user, "undo_file_change", "INVALID_INPUT", change_id=0)
    await fail(user, "list_file_changes", "INVALID_INPUT", limit=100_000)
    await fail(agent, "read_multiple_files", "INVALID_INPUT", paths=["x" * 5000])
    await fail(agent, "directory_tree", "INVALID_INPUT", exclude=["*" * 1001])


@pytest.mark.anyio
async def test_a_server_killed_mid_burst_loses_no_original(tmp_path: Path) -> None:
    """kill -9 while writes are in flight: every file either kept its original or has a record whose undo
    (force, for a change interrupted half-way) gives the original back."""
    root, data = tmp_path / "root", tmp_path / "data"
    root.mkdir()
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    count = 60
    for number in range(count):
        (root / f"f{number}.txt").write_text(f"original {number}\n", encoding="utf-8")
    env = {"MCP_SECTIONS_CONFIG": str(tmp_path / "config.toml"), "MCP_SECTIONS_ROOTS": ""}
    arguments = ("file_ops", "--root", str(root), "--data-dir", str(data))
    with RawServer(arguments, env=env) as server:
        server.initialize()
        for number in range(count):
            content = f"replaced {number}\n" * 20_000  # ~250 KB: the kill lands inside some change
            server.call_tool(number + 1, "write_file", {"path": f"f{number}.txt", "content": content})
        server.wait_for(lambda responses: len(responses) > 8)
        server.kill_9()
    with sqlite3.connect(data / "file_changes.sqlite3") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    async with section_client(*arguments, env=env) as user:
        listed = (await call(user, "list_file_changes", limit=200))["changes"]
        assert len(listed) >= 8 and {item["status"] for item in listed} <= {"done", "interrupted"}
        for _ in listed:
            await call(user, "undo_file_change", force=True)
        await fail(user, "undo_file_change", "NOT_FOUND")
    for number in range(count):
        assert (root / f"f{number}.txt").read_text(encoding="utf-8") == f"original {number}\n"
