"""The `mcp-sections` command line: list (table and JSON), tools, errors."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from mcp_sections.servers.registry import BUILTIN_SECTIONS
from tests.stdio import cli_command


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cli_command(), *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def listed() -> list[dict[str, Any]]:
    """`mcp-sections list --json`, run once for the module's tests that read it."""
    result = _run("list", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["sections"]


def test_list_json_has_every_section_with_its_tools(listed: list[dict[str, Any]]) -> None:
    assert [section["id"] for section in listed] == list(BUILTIN_SECTIONS)
    for section in listed:
        assert set(section) == {"id", "name", "description", "tools", "tool_count"}
        assert section["tool_count"] == len(section["tools"]) > 0


def test_list_table_names_every_section() -> None:
    result = _run("list")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].split()[:2] == ["SECTION", "TOOLS"]
    for section_id in BUILTIN_SECTIONS:
        assert any(line.startswith(section_id + " ") for line in result.stdout.splitlines())


def test_tool_names_are_unique_across_the_suite(listed: list[dict[str, Any]]) -> None:
    names = [name for section in listed for name in section["tools"]]
    assert len(names) == len(set(names))


def test_tools_prints_the_served_definitions() -> None:
    result = _run("tools", "todo")
    assert result.returncode == 0, result.stderr
    tools = json.loads(result.stdout)
    assert all({"name", "inputSchema", "outputSchema", "annotations"} <= set(tool) for tool in tools)


def test_unknown_section_and_bad_config_exit_with_a_message(tmp_path) -> None:
    unknown = _run("serve", "nope")
    assert unknown.returncode == 2 and "invalid choice" in unknown.stderr
    missing = _run("serve", "todo", "--config", str(tmp_path / "missing.toml"))
    assert missing.returncode == 2 and "config file not found" in missing.stderr
