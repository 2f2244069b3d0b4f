"""The file_ops section over stdio, through the real CLI and the official `mcp` client: its tools/list snapshot
and a call (what the tools do is in test_tools.py, in memory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.stdio import call, check_tools_snapshot, section_client

TOOLS = {
    "read_file",
    "read_multiple_files",
    "write_file",
    "edit_file",
    "list_directory",
    "directory_tree",
    "glob_files",
    "search_files",
    "file_exists",
    "get_file_info",
    "create_directory",
    "delete_path",
    "move_file",
    "copy_file",
    "list_file_changes",
    "undo_file_change",
    "install_package",
    "list_allowed_roots",
}


@pytest.mark.anyio
async def test_tools_list_snapshot_and_annotations(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("over stdio\n")
    async with section_client("file_ops", "--root", str(tmp_path), "--data-dir", str(tmp_path / ".data")) as client:
        tools = (await client.list_tools()).tools
        assert (await call(client, "read_file", path="notes.txt"))["content"] == "over stdio\n"
    check_tools_snapshot("file_ops", tools)
    assert {t.name for t in tools} == TOOLS
    hints = {t.name: t.annotations for t in tools}
    for name in ("read_file", "read_multiple_files", "list_directory", "glob_files", "search_files", "file_exists"):
        assert hints[name].read_only_hint is True and hints[name].destructive_hint is False
    assert hints["write_file"].destructive_hint is True and hints["write_file"].idempotent_hint is True
    assert hints["delete_path"].destructive_hint is True
    assert hints["list_file_changes"].read_only_hint is True
    undo = hints["undo_file_change"]  # it overwrites what stands there now, and twice undoes two changes
    assert (undo.read_only_hint, undo.destructive_hint, undo.idempotent_hint) == (False, True, False)
    assert hints["install_package"].open_world_hint is True
    assert all(t.output_schema for t in tools)
