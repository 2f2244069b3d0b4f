"""Every server's `tools/list` passes the MCP Inspector's schema-portability check with no finding.

The Inspector (`@modelcontextprotocol/inspector`, pinned in tests/node/package-lock.json; tests/node_tools.py says
where it comes from) runs as a real client against `mcp-sections serve <section>` and
`mcp-sections gateway` over stdio with `--strict`, which prints every finding (path, issue, suggestion) on stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_sections.servers.registry import BUILTIN_SECTIONS
from tests.node_tools import node_and_npm, node_tools

pytestmark = pytest.mark.slow  # a Node client per server
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def inspector(shared_cache_dir: Path) -> list[str]:
    node, _ = node_and_npm()
    entry = Path("node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js")
    return [node, str(node_tools(shared_cache_dir) / entry)]


def _strict_findings(inspector: list[str], server_argv: list[str], tmp_path: Path) -> tuple[int, str]:
    env = {**os.environ, "MCP_SECTIONS_DATA_DIR": str(tmp_path / "data"), "MCP_CATALOG_PATH": str(tmp_path / "c.json")}
    result = subprocess.run(
        [*inspector, "--method", "tools/list", "--strict", *server_argv],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    findings = "\n".join(
        line for line in result.stderr.splitlines() if line.startswith(("Warning:", "Error:", "  Path:"))
    )
    assert '"tools"' in result.stdout, f"no tools/list answer: {result.stderr[-2000:]}"
    return result.returncode, findings


@pytest.mark.parametrize("section_id", sorted(BUILTIN_SECTIONS))
def test_section_schemas_are_portable(inspector: list[str], section_id: str, tmp_path: Path) -> None:
    code, findings = _strict_findings(inspector, [str(BIN / "mcp-sections"), "serve", section_id], tmp_path)
    assert (code, findings) == (0, ""), findings


def test_gateway_schemas_are_portable(inspector: list[str], tmp_path: Path) -> None:
    code, findings = _strict_findings(
        inspector, [str(BIN / "mcp-sections"), "gateway", "--root", str(tmp_path)], tmp_path
    )
    assert (code, findings) == (0, ""), findings
