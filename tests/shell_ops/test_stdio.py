"""shell_ops over stdio, through the real CLI and the official `mcp` client: its tools/list snapshot and a call (what
the tools do is in test_tools.py, in memory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.stdio import annotation_hints, call, check_tools_snapshot, section_client

TOOLS = {
    "run_command",
    "run_npm_script",
    "git_status",
    "git_diff",
    "git_log",
    "list_safe_commands",
    "start_process",
    "read_process_output",
    "write_process_input",
    "stop_process",
    "list_processes",
}


@pytest.mark.anyio
async def test_tools_list_snapshot_and_annotations(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("over stdio\n")
    async with section_client("shell_ops", "--root", str(tmp_path), "--data-dir", str(tmp_path / ".data")) as client:
        tools = (await client.list_tools()).tools
        assert (await call(client, "run_command", command=["cat", "notes.txt"]))["stdout"] == "over stdio\n"
    check_tools_snapshot("shell_ops", tools)
    assert {t.name for t in tools} == TOOLS
    hints = annotation_hints(tools)
    for name in ("git_status", "git_diff", "git_log", "list_safe_commands", "list_processes"):
        assert hints[name] == (True, False, True, False)
    for name in ("run_command", "run_npm_script", "start_process", "write_process_input"):
        assert hints[name] == (False, True, False, True)
    assert hints["read_process_output"] == (True, False, False, False)  # moves the read position
    assert hints["stop_process"] == (False, True, True, False)
    for t in tools:
        assert t.output_schema is not None and t.description and len(t.description) > 80
