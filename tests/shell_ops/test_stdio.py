"""shell_ops over stdio, through the real CLI and the official `mcp` client: its tools/list snapshot and a call (what
the tools do is in test_tools.py, in memory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.processes import RawServer
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


def _answered(server: RawServer, request_id: int, tool: str, arguments: dict[str, object]) -> None:
    server.call_tool(request_id, tool, arguments)
    server.wait_for(lambda responses: request_id in responses)
    assert not server.tool_results()[request_id].get("isError"), server.tool_results()[request_id]


def test_the_homes_of_a_killed_server_are_removed_by_the_next_one(tmp_path: Path) -> None:
    """A server killed while its program runs cannot remove that program's home (HOME and TMPDIR, where the program
    may have written much): the next server removes it when it makes a home, and its own when it exits."""
    temporary, root = tmp_path / "tmp", tmp_path / "root"
    temporary.mkdir()
    root.mkdir()
    (root / "notes.txt").write_text("kept\n")
    args, env = ["shell_ops", "--root", str(root), "--data-dir", str(tmp_path / "data")], {"TMPDIR": str(temporary)}
    with RawServer(args, env) as first:
        first.initialize()
        _answered(first, 1, "start_process", {"command": ["cat"]})  # runs until its stdin closes
        [left] = temporary.glob("mcp-sections-homes-*")
        assert len(list(left.glob("call-*/tmp"))) == 1
        first.kill_9()
    assert left.is_dir()
    with RawServer(args, env) as second:
        second.initialize()
        _answered(second, 1, "run_command", {"command": ["cat", "notes.txt"]})
        assert not left.exists()
        assert len(list(temporary.glob("mcp-sections-homes-*"))) == 1  # the second server's own
        assert second.process.stdin is not None
        second.process.stdin.close()
        assert second.process.wait(timeout=30) == 0
    assert list(temporary.iterdir()) == []
