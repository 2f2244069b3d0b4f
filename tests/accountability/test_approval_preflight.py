"""The person is never asked about a call that can never run (`shared/serving/preflight.py`): before a question, a
call is checked against its tool's policy — shell_ops' command guard (the allow-list, cwd inside the roots, protected
files), file_ops' path guard — and a refused call answers its coded error at once, unasked; a call that passes is
asked as before. Through the gateway the check is the section's own, asked of the section's process with a request
that runs nothing (only a server with approval off answers it). A tool's per-call annotations decide too: a plain
fetch_web_page reads (not asked), one that ingests writes (asked). Real processes over stdio, a client with
elicitation."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_sections.shared.serving import preflight
from mcp_sections.shared.serving.audit import read_records
from tests.orchestration.helpers import User
from tests.stdio import NO_WARM_UP, REPO, data_of, error_of, server_parameters

pytestmark = pytest.mark.anyio
APPROVAL = {"MCP_SECTIONS_APPROVAL": "destructive", "MCP_SECTIONS_CONFIG": os.devnull, **NO_WARM_UP}
NEVER = [  # (section, tool, arguments, what the refusal says): each refused by its policy whatever the person says
    ("shell_ops", "run_command", {"command": ["curl", "https://example.com"]}, "'curl' is not on the allow-list"),
    ("shell_ops", "run_command", {"command": ["rm", "-rf", "/"]}, "'rm' is not on the allow-list"),
    ("shell_ops", "run_npm_script", {"script": "test", "cwd": "/etc"}, "'/etc' is outside the allowed roots"),
    ("shell_ops", "run_command", {"command": ["cat", ".env"]}, "'.env' matches a protected pattern"),
    ("shell_ops", "start_process", {"command": ["nc", "-l", "8000"]}, "'nc' is never allowed"),
    ("file_ops", "write_file", {"path": "/etc/evil", "content": "x"}, "is outside the allowed roots"),
    ("file_ops", "delete_path", {"path": ".env"}, "'.env' matches a protected pattern"),
    ("file_ops", "move_file", {"source": "notes.txt", "destination": "/tmp/out"}, "is outside the allowed roots"),
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    (root / ".env").write_text("TOKEN=precious\n", encoding="utf-8")
    (root / "notes.txt").write_text("notes\n", encoding="utf-8")
    return root


@asynccontextmanager
async def connected(args: list[str], user: User | None, env: dict[str, str] | None = None) -> AsyncIterator[Client]:
    parameters = server_parameters(args, env={**APPROVAL, **(env or {})}, cwd=REPO)
    async with Client(parameters, mode="legacy", elicitation_callback=user, read_timeout_seconds=120) as client:  # type: ignore[arg-type]
        yield client


async def test_through_the_gateway_a_call_its_policy_refuses_is_answered_at_once_unasked(
    tmp_path: Path, root: Path
) -> None:
    user = User()
    args = ["gateway", "--data-dir", str(tmp_path / "data"), "--root", str(root)]  # every section in its process
    async with connected(args, user) as client:
        for section, tool, arguments, says in NEVER:
            forwarded = {"section": section, "tool": tool, "arguments": arguments}
            code, message = error_of(await client.call_tool("call_section_tool", forwarded))
            assert code == "PERMISSION_DENIED" and says in message, (tool, arguments, message)
        ending = {"section": "shell_ops", "tool": "start_process", "arguments": {"command": ["git", "status"]}}
        code, message = error_of(await client.call_tool("call_section_tool", ending))  # ends on its own: run_command
        assert code == "INVALID_INPUT" and "git commands end on their own" in message, message
        assert user.questions == [], [question.message for question in user.questions]
        user.will("accept", {"approve": True})  # a call its policy allows is asked about as before, then runs
        listed = {"section": "shell_ops", "tool": "run_command", "arguments": {"command": ["ls"]}}
        assert not (await client.call_tool("call_section_tool", listed)).is_error
        assert len(user.questions) == 1 and "run_command" in user.questions[0].message
    assert (root / ".env").read_text(encoding="utf-8") == "TOKEN=precious\n" and (root / "notes.txt").exists()
    audit = tmp_path / "data" / "audit"
    calls = [r["outcome"] for r in read_records(audit, "gateway") if r["tool"] == "call_section_tool"]
    assert calls == ["PERMISSION_DENIED"] * len(NEVER) + ["INVALID_INPUT", "OK"], calls
    assert [r["outcome"] for r in read_records(audit, "gateway.approvals")] == ["APPROVED"]


async def test_a_section_served_alone_refuses_such_a_call_before_asking(tmp_path: Path, root: Path) -> None:
    user = User()
    args = ["serve", "shell_ops", "--data-dir", str(tmp_path / "data"), "--root", str(root)]
    async with connected(args, user) as client:
        for section, tool, arguments, says in NEVER:
            if section == "shell_ops":
                code, message = error_of(await client.call_tool(tool, arguments))
                assert code == "PERMISSION_DENIED" and says in message, (tool, arguments, message)
        assert user.questions == []
        user.will("decline")
        code, message = error_of(await client.call_tool("run_command", {"command": ["ls"]}))
        assert code == "PERMISSION_DENIED" and "declined run_command" in message and len(user.questions) == 1


async def test_a_plain_fetch_is_a_read_and_is_not_asked_about_but_one_that_ingests_is(
    tmp_path: Path, root: Path
) -> None:
    for module in ("regex", "html_to_markdown"):  # web_ops refuses every fetch without its extra
        pytest.importorskip(module, reason="web_ops needs the `web` extra: pip install 'mcp-sections[web]'")
    user = User()
    args = ["gateway", "--data-dir", str(tmp_path / "data"), "--root", str(root)]
    fetch = {"url": "http://127.0.0.1:1/page"}  # loopback: web_ops refuses it when it runs, fetching nothing
    async with connected(args, user) as client:
        plain = {"section": "web_ops", "tool": "fetch_web_page", "arguments": fetch}
        code, message = error_of(await client.call_tool("call_section_tool", plain))
        assert code == "PERMISSION_DENIED" and "loopback" in message and user.questions == [], message
        user.will("decline")
        ingesting = {"section": "web_ops", "tool": "fetch_web_page", "arguments": {**fetch, "ingest": True}}
        code, message = error_of(await client.call_tool("call_section_tool", ingesting))
        assert code == "PERMISSION_DENIED" and "declined" in message and len(user.questions) == 1
        described = await client.call_tool("describe_section", {"section": "web_ops", "tools": ["fetch_web_page"]})
    (definition,) = data_of(described)["tools"]
    assert definition["annotations"]["readOnlyHint"] is False, "tools/list keeps the worst case of every call"


# -- the preflight request runs nothing, and only a server that does not ask answers it --------------------------


async def _preflight(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The gateway's own request and answer (`shared.serving.preflight`), sent to a section's process."""
    return (await client.session.send_request(preflight.request(tool, arguments), preflight.PreflightResult)).refused


async def test_the_preflight_request_runs_nothing_and_a_section_that_asks_does_not_answer_it(
    tmp_path: Path, root: Path
) -> None:
    args = ["serve", "file_ops", "--data-dir", str(tmp_path / "data"), "--root", str(root)]
    async with connected(args, None, {"MCP_SECTIONS_APPROVAL": "off"}) as client:  # as the gateway starts it
        assert await _preflight(client, "write_file", {"path": "new.txt", "content": "x"}) is None
        refused = await _preflight(client, "delete_path", {"path": ".env"})
        assert refused is not None and refused["error_code"] == "PERMISSION_DENIED", refused
        assert await _preflight(client, "read_file", {"path": "notes.txt"}) is None  # no preflight: nothing to say
    assert not (root / "new.txt").exists() and (root / ".env").exists(), "a preflight runs nothing"
    async with connected(args, None) as client:  # approval on: it asks its own client, after its own preflight
        with pytest.raises(MCPError):
            await _preflight(client, "write_file", {"path": "new.txt", "content": "x"})
