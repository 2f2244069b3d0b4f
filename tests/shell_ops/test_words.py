"""shell_ops' refusals and listings name its own tools, or another section's tool with its section: behind the
gateway a tool is called through its section (`call_section_tool(shell_ops, list_allowed_roots)` is NOT_FOUND)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from tests.in_memory import section_in_memory
from tests.shell_ops.repos import make_repo
from tests.stdio import REPO, call, fail


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("shell-ops-words")
    (base / "config.toml").write_text("")
    return make_repo(base / "root")


@pytest.fixture(scope="module")
async def shell(project: Path) -> AsyncIterator[Client]:
    env = {
        "MCP_SECTIONS_CONFIG": str(project.parent / "config.toml"),
        "MCP_SECTIONS_DATA_DIR": str(project.parent / "data"),
    }
    async with section_in_memory("shell_ops", "--root", str(project), env=env) as client:
        yield client


@pytest.mark.anyio
async def test_a_cwd_outside_the_roots_names_this_sections_list_of_roots(shell: Client, project: Path) -> None:
    for arguments in ({"cwd": "/tmp"}, {"cwd": ".."}, {"command": ["git", "-C", "/tmp", "status"]}):
        message = await fail(shell, "run_command", "PERMISSION_DENIED", **{"command": ["ls"], **arguments})
        assert "outside the allowed roots" in message and str(project) in message, message
        assert "list_safe_commands" in message and "list_allowed_roots" not in message, message


@pytest.mark.anyio
async def test_no_answer_names_another_sections_tool_without_its_section(shell: Client) -> None:
    """A tool of another section is reached through its section (`call_section_tool(file_ops, ...)` behind the
    gateway): shell_ops' words name the section with it (`file_ops' install_package`)."""
    others: dict[str, str] = {}
    for snapshot in (REPO / "tests" / "snapshots").glob("*.json"):
        if snapshot.stem != "shell_ops":
            others |= {tool["name"]: snapshot.stem for tool in json.loads(snapshot.read_text())}
    text = json.dumps(await call(shell, "list_safe_commands"))
    text += await fail(shell, "run_command", "PERMISSION_DENIED", command=["ls"], cwd="/tmp")
    for name, section in others.items():
        for found in re.finditer(rf"\b{re.escape(name)}\b", text):
            before = text[max(0, found.start() - len(section) - 2) : found.start()]
            assert before == f"{section}' ", (
                f"{name} (a {section} tool) named without its section: {text[found.start() - 80 : found.end() + 40]!r}"
            )
