"""A team's gateway (OAuth users over Streamable HTTP, `tests/team/users.py`) names each call's user in the audit lines
of the sections it launched, not only in its own (`audit/gateway.jsonl`); `mcp-sections audit` shows the user."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytest.importorskip("joserfc")

from mcp_sections.shared.serving.audit import read_lines
from tests.gateway.helpers import FORWARD, forward
from tests.stdio import cli_command
from tests.team.users import as_user, team_gateway
from tests.waiting import eventually

pytestmark = pytest.mark.anyio


async def test_the_sections_a_gateway_launched_record_the_user_of_each_call(tmp_path: Path) -> None:
    with team_gateway(tmp_path) as team:
        for user in ("alice", "bob"):
            async with as_user(team, team.token(user)) as client:
                added = await client.call_tool(
                    FORWARD, forward("calculator", "calculator_binary", operation="add", a=1, b=2)
                )
                assert not added.is_error, added.content
        audit = team.workdir / "data" / "audit"

        def section_users() -> list[str | None]:
            lines = read_lines(audit, "calculator")
            return [line.get("user") for line in lines if line.get("phase") == "end"]

        await eventually(lambda: len(section_users()) == 2)
        assert section_users() == ["alice (alice-id)", "bob (bob-id)"]
        gateway = [line.get("user") for line in read_lines(audit, "gateway") if line.get("tool") == FORWARD]
        assert "alice (alice-id)" in gateway and "bob (bob-id)" in gateway  # the gateway's view names them alike
        command = [*cli_command(), "audit", "--data-dir", str(audit.parent), "--server", "calculator", "--tail", "5"]
        shown = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert len(lines) == 2 and "user alice (alice-id)" in lines[0] and "user bob (bob-id)" in lines[1], lines
