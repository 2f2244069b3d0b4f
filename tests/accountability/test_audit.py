"""The audit log: every tool call of a real server (in memory) leaves one JSON line; `mcp-sections audit` (the CLI, a
process) shows them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mcp_sections.shared.serving.audit import AuditLog, AuditRecord, argument_digest, read_records
from tests.in_memory import section_in_memory
from tests.stdio import NO_WARM_UP, call, cli_command, fail


@pytest.mark.anyio
async def test_calls_are_audited_without_their_arguments(tmp_path: Path) -> None:
    # no sympy process: calculator_binary runs in the server's own process
    async with section_in_memory("calculator", "--data-dir", str(tmp_path), env=NO_WARM_UP) as client:
        await call(client, "calculator_binary", operation="add", a=40417, b=2)
        await fail(client, "calculator_binary", "VALIDATION_FAILED", operation="divide", a=1, b=0)
    records = list(read_records(tmp_path / "audit"))
    assert [(r["server"], r["tool"], r["outcome"]) for r in records] == [
        ("calculator", "calculator_binary", "OK"),
        ("calculator", "calculator_binary", "VALIDATION_FAILED"),
    ]
    assert records[0]["arguments_digest"] == argument_digest({"operation": "add", "a": 40417, "b": 2})
    assert "add" not in json.dumps(records[0]) and "40417" not in json.dumps(records[0])
    assert set(records[0]) == {
        "time",
        "phase",
        "call",
        "server",
        "tool",
        "depth",
        "agent_id",
        "arguments_digest",
        "outcome",
        "duration_ms",
    }
    assert records[0]["duration_ms"] >= 0
    shown = subprocess.run(
        [*cli_command(), "audit", "--data-dir", str(tmp_path), "--json"], capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0 and len(shown.stdout.splitlines()) == 2


def test_the_log_rotates_and_an_unwritable_directory_never_fails_a_call(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit", "todo", max_bytes=400, backups=2)
    record = AuditRecord(server="todo", tool="todo_list", outcome="OK", duration_ms=1.0, arguments_digest="sha256:x")
    for _ in range(20):
        log.write(record)
    files = sorted(path.name for path in (tmp_path / "audit").iterdir())
    assert files == ["todo.jsonl", "todo.jsonl.1", "todo.jsonl.2"]
    assert len(list(read_records(tmp_path / "audit"))) <= 3 * (400 // 150 + 1)
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("", encoding="utf-8")
    AuditLog(blocked / "audit", "todo").write(record)  # logged once, never raised


def test_the_caller_claimed_in_meta_is_read_defensively() -> None:
    from mcp_sections.shared.serving.audit import caller_meta, caller_of

    assert caller_of(caller_meta(2, "agent-7")) == (2, "agent-7")
    assert caller_of(None) == (0, None) and caller_of({}) == (0, None)
    for forged in ({"mcp-sections/depth": True}, {"mcp-sections/depth": -1}, {"mcp-sections/depth": "3"}):
        assert caller_of(forged) == (0, None)
    assert caller_of({"mcp-sections/depth": 1, "mcp-sections/agent-id": "x" * 500}) == (1, "x" * 64)


def test_a_log_file_removed_while_the_server_runs_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The descriptor stays open between calls; a file deleted (or rotated away) behind it gets a new one at the
    next check (at most a second later; at once here)."""
    from mcp_sections.shared.serving import audit

    monkeypatch.setattr(audit, "REMOVAL_CHECK_SECONDS", 0.0)
    log = AuditLog(tmp_path / "audit", "todo")
    record = AuditRecord(server="todo", tool="todo_list", outcome="OK", duration_ms=1.0, arguments_digest="sha256:x")
    log.write(record)
    (tmp_path / "audit" / "todo.jsonl").unlink()
    log.write(record)
    log.write(record)
    assert len(list(read_records(tmp_path / "audit"))) == 2


def test_records_wait_for_the_reply_inside_written_after_replies(tmp_path: Path) -> None:
    """The stdio transport writes a call's record once its reply is out (the log costs the call no latency)."""
    from mcp_types import CallToolResult

    from mcp_sections.shared.serving.audit import written_after_replies

    log = AuditLog(tmp_path / "audit", "todo")

    def outcomes() -> list[str]:
        return [record["outcome"] for record in read_records(tmp_path / "audit")]

    with written_after_replies() as flush:
        log.start("todo_list", {"limit": 1}).end(CallToolResult(content=[]))
        log.start("todo_get", {"id": 2}).end(CallToolResult(content=[]))
        assert outcomes() == ["UNFINISHED", "UNFINISHED"]  # the intent lines are written at once
        flush()  # the transport sent a reply
        assert [record["tool"] for record in read_records(tmp_path / "audit")] == ["todo_list", "todo_get"]
        assert outcomes() == ["OK", "OK"]
        log.start("todo_add", {}).end(CallToolResult(content=[]))
    assert outcomes() == ["OK"] * 3  # the rest on the way out
    log.start("todo_done", {}).end(CallToolResult(content=[]))  # outside: at once
    assert outcomes() == ["OK"] * 4


def test_a_cancelled_call_still_leaves_its_lines(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit", "todo")
    log.start("todo_delete", {"task_id": "t"}).cancelled()
    log.start("todo_update", {"task_id": "t"})  # never ended: the server died mid-call
    assert [(record["tool"], record["outcome"]) for record in read_records(tmp_path / "audit")] == [
        ("todo_delete", "CANCELLED"),
        ("todo_update", "UNFINISHED"),
    ]


def test_a_record_that_fails_never_stops_the_writer(tmp_path: Path) -> None:
    """A record is written by the transport's writer after the reply: one that raises is logged, the next ones
    are still written."""
    from mcp_types import CallToolResult

    from mcp_sections.shared.serving.audit import written_after_replies

    class Unreadable:
        @property
        def structured_content(self) -> dict[str, object]:
            raise RuntimeError("broken result")

    log = AuditLog(tmp_path / "audit", "todo")
    with written_after_replies() as flush:
        log.start("todo_list", {}).end(Unreadable())
        log.start("todo_get", {}).end(CallToolResult(content=[]))
        flush()
    records = list(read_records(tmp_path / "audit"))
    assert [(record["tool"], record["outcome"]) for record in records] == [
        ("todo_list", "UNFINISHED"),
        ("todo_get", "OK"),
    ]
