"""The todo section over stdio, through the real CLI and the official `mcp` client: its tools/list snapshot and a
call (what the tools do is in test_tools.py, in memory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.stdio import annotation_hints, call, check_tools_snapshot, section_client

TOOLS = {
    "todo_create",
    "todo_get",
    "todo_update_status",
    "todo_complete",
    "todo_update",
    "todo_list",
    "todo_next",
    "todo_delete",
}


@pytest.mark.anyio
async def test_tools_list_snapshot_and_annotations(tmp_path: Path) -> None:
    async with section_client("todo", "--data-dir", str(tmp_path / "data")) as client:
        tools = (await client.list_tools()).tools
        assert (await call(client, "todo_create", workflow_id="w", name="Over stdio"))["task_id"]
    check_tools_snapshot("todo", tools)
    assert {t.name for t in tools} == TOOLS
    hints = annotation_hints(tools)
    for name in ("todo_get", "todo_list", "todo_next"):
        assert hints[name] == (True, False, True, False)
    assert hints["todo_create"] == (False, False, False, False)
    assert hints["todo_delete"] == (False, True, True, False)
    assert hints["todo_complete"] == (False, False, True, False)
    for name in ("todo_update_status", "todo_update"):
        assert hints[name] == (False, True, True, False)
    for t in tools:
        assert t.output_schema is not None and t.description and len(t.description) > 80
