"""Who a section's audit line names: the user the gateway that launched the section names in the request's `_meta`,
presenting the key it gave the section's process — never a user any other client claims — and the user column of
`mcp-sections audit`'s human view. (The gateway's side, with OAuth users over HTTP: tests/team/test_scope_challenge.py.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_sections.shared.serving.audit import (
    LAUNCHER_ENV,
    META_LAUNCHER,
    META_USER,
    AuditLog,
    AuditRecord,
    caller_meta,
    caller_of,
    launch_key,
    read_lines,
)
from tests.stdio import NO_WARM_UP, cli_command, section_client

ADD = {"operation": "add", "a": 1, "b": 2}


def test_a_user_is_read_from_meta_only_with_the_launching_gateways_key(monkeypatch: pytest.MonkeyPatch) -> None:
    claimed = {"mcp-sections/depth": 0, META_USER: "alice", META_LAUNCHER: "k" * 43}
    monkeypatch.delenv(LAUNCHER_ENV, raising=False)
    assert caller_of(claimed).user is None  # nobody launched this process with a key: nobody names a user
    monkeypatch.setenv(LAUNCHER_ENV, "k" * 43)
    assert caller_of(claimed).user == "alice" and caller_of(claimed) == (0, None)
    assert caller_of({**claimed, META_LAUNCHER: "x" * 43}).user is None
    assert caller_of({META_USER: "alice"}).user is None
    assert caller_of({**claimed, META_USER: 7}).user is None
    assert caller_of({**claimed, META_USER: "a" * 500}).user == "a" * 200
    monkeypatch.setenv(LAUNCHER_ENV, launch_key())
    assert caller_of(caller_meta(2, "agent-7", "bob")) == (2, "agent-7")
    assert caller_of(caller_meta(2, "agent-7", "bob")).user == "bob"
    assert META_USER not in caller_meta(2, "agent-7") and META_LAUNCHER not in caller_meta(2, "agent-7")


@pytest.mark.anyio
async def test_a_section_records_the_user_its_launcher_names_and_no_one_elses(tmp_path: Path) -> None:
    """A section process started with a key (as the gateway starts its sections) records the user of a request that
    presents it; a request that names a user without it, or with another key, names none."""
    key = "launcher-key-" + "7" * 30
    env = {**NO_WARM_UP, LAUNCHER_ENV: key}
    async with section_client("calculator", "--data-dir", str(tmp_path), env=env) as client:
        for meta in (
            {META_USER: "alice (alice-id)", META_LAUNCHER: key},
            {META_USER: "mallory"},
            {META_USER: "mallory", META_LAUNCHER: "a-guess-" + "0" * 35},
        ):
            result = await client.call_tool("calculator_binary", ADD, meta=meta)  # type: ignore[arg-type]
            assert not result.is_error, result.content
    ends = [line for line in read_lines(tmp_path / "audit", "calculator") if line["phase"] == "end"]
    assert [line.get("user") for line in ends] == ["alice (alice-id)", None, None]
    starts = [line for line in read_lines(tmp_path / "audit", "calculator") if line["phase"] == "start"]
    assert starts[0]["user"] == "alice (alice-id)"  # the intent line too


def test_the_human_view_of_the_audit_log_has_a_user_column(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit", "todo")
    for call, user in (("1", "alice"), ("2", None)):
        log.write(AuditRecord("todo", "todo_list", "OK", 1.5, "sha256:00", call=call, user=user))
    command = [*cli_command(), "audit", "--data-dir", str(tmp_path), "--tail", "2"]
    shown = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert len(lines) == 2 and "todo.todo_list" in lines[0]
    assert "  user alice  depth 0  " in lines[0], lines[0]
    assert "  user -  depth 0  " in lines[1], lines[1]
