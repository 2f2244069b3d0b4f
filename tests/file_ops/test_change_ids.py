"""Undo journal ids follow each other: a call that changed nothing (an identical write, a failed call) takes none,
through the tools in memory on real files; an id a change was given is never given again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.in_memory import section_in_memory
from tests.stdio import call, fail


@pytest.mark.anyio
async def test_a_call_that_changed_nothing_takes_no_change_id(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    env = {
        "MCP_SECTIONS_CONFIG": str(tmp_path / "config.toml"),
        "MCP_SECTIONS_ROOTS": "",
        "MCP_SECTIONS_DATA_DIR": str(tmp_path / "data"),
    }
    async with section_in_memory("file_ops", "--root", str(root), env=env) as client:
        ids = [(await call(client, "write_file", path="notes.txt", content="one\n"))["change_id"]]
        same = await call(client, "write_file", path="notes.txt", content="one\n")  # identical: nothing changed
        assert same["change_id"] is None
        ids.append((await call(client, "write_file", path="notes.txt", content="two\n"))["change_id"])
        edit = {"old_text": "two", "new_text": "two"}  # an edit that changes nothing
        assert (await call(client, "edit_file", path="notes.txt", edits=[edit]))["change_id"] is None
        ids.append((await call(client, "create_directory", path="sub"))["change_id"])
        assert (await call(client, "create_directory", path="sub"))["change_id"] is None  # it exists
        ids.append(
            (await call(client, "edit_file", path="notes.txt", edits=[{"old_text": "two", "new_text": "3"}]))[
                "change_id"
            ]
        )
        assert ids == [1, 2, 3, 4]
        # an undone change's id stays taken: the undo gets the next one, and so does the change after it
        undone = await call(client, "undo_file_change")
        assert (undone["undone_id"], undone["change_id"]) == (4, 5)
        assert (await call(client, "write_file", path="other.txt", content="x"))["change_id"] == 6
        listed = await call(client, "list_file_changes")
        assert [change["id"] for change in listed["changes"]] == [6, 5, 4, 3, 2, 1]
        await fail(client, "write_file", "VALIDATION_FAILED", path="other.txt", content="y", overwrite=False)
        assert (await call(client, "write_file", path="other.txt", content="z"))["change_id"] == 7
