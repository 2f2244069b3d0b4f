"""Each server's first `tools/list`, seen by an outside client: portable schemas and a light start-up.

One start of `mcp-sections serve <section>` per section serves both checks:
- the MCP Inspector (`@modelcontextprotocol/inspector`, pinned in tests/node/package-lock.json; tests/node_tools.py
  says where it comes from) runs as the client over stdio with `--strict`, which prints every schema-portability
  finding (path, issue, suggestion) on stderr; there must be none. The gateway gets the same check.
- the server runs with Python's import-time log (`PYTHONPROFILEIMPORTTIME`, forwarded on the client's stderr) and
  no warm-up: initialize + tools/list must not import torch, sentence-transformers, playwright, neo4j or sympy.
Without Node (an install without the dev extra), the portability checks skip and the official `mcp` client lists
the tools for the import check instead.
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from mcp_sections.servers.registry import BUILTIN_SECTIONS
from tests.node_tools import node_and_npm, node_tools
from tests.stdio import NO_WARM_UP, cli_command, section_client

HEAVY_MODULES = ("torch", "sentence_transformers", "playwright", "neo4j", "sympy", "transformers")
SERVER_ENVIRONMENT = {"PYTHONPROFILEIMPORTTIME": "1", **NO_WARM_UP}


@dataclass(frozen=True)
class Listing:
    """What one server start showed: the Inspector's exit code and findings (None without Node), and the top-level
    packages it imported up to its answer."""

    inspector_code: int | None
    findings: str | None
    imported: frozenset[str]


def _imported(stderr: str) -> frozenset[str]:
    lines = (line for line in stderr.splitlines() if line.startswith("import time:"))
    return frozenset(line.rsplit("|", 1)[-1].strip().split(".")[0] for line in lines)


def _inspect(inspector: list[str], server_argv: list[str], directory: Path, env: dict[str, str]) -> Listing:
    environment = {
        **os.environ,
        **env,
        "MCP_SECTIONS_DATA_DIR": str(directory / "data"),
        "MCP_CATALOG_PATH": str(directory / "c.json"),
    }
    result = subprocess.run(
        [*inspector, "--method", "tools/list", "--strict", *server_argv],
        capture_output=True,
        text=True,
        timeout=180,
        env=environment,
        stdin=subprocess.DEVNULL,
    )
    assert '"tools"' in result.stdout, f"no tools/list answer: {result.stderr[-2000:]}"
    findings = "\n".join(
        line for line in result.stderr.splitlines() if line.startswith(("Warning:", "Error:", "  Path:"))
    )
    return Listing(result.returncode, findings, _imported(result.stderr))


def _list_with_the_sdk(section: str, directory: Path) -> Listing:
    log = directory / "imports.log"

    async def listed() -> None:
        with log.open("w") as errlog:
            async with section_client(section, env=SERVER_ENVIRONMENT, errlog=errlog) as client:
                assert (await client.list_tools()).tools

    anyio.run(listed)
    return Listing(None, None, _imported(log.read_text()))


@dataclass(frozen=True)
class Inspector:
    """The Inspector's command line, or why there is none here (no Node, or its tools could not be installed)."""

    argv: list[str] | None
    missing: str = ""


@pytest.fixture(scope="module")
def inspector(shared_cache_dir: Path) -> Inspector:
    try:
        node, _ = node_and_npm()
        entry = Path("node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js")
        return Inspector([node, str(node_tools(shared_cache_dir) / entry)])
    except pytest.skip.Exception as skipped:
        return Inspector(None, str(skipped))


@pytest.fixture(scope="module")
def first_listing(inspector: Inspector, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Listing]:
    """`first_listing(section)`: what the one start of that section showed (started at the first test asking)."""

    @functools.cache
    def listing(section: str) -> Listing:
        directory = tmp_path_factory.mktemp(section)
        if inspector.argv is None:
            return _list_with_the_sdk(section, directory)
        return _inspect(inspector.argv, [*cli_command(), "serve", section], directory, SERVER_ENVIRONMENT)

    return listing


@pytest.mark.slow  # a Node client per server
@pytest.mark.parametrize("section_id", sorted(BUILTIN_SECTIONS))
def test_section_schemas_are_portable(
    inspector: Inspector, first_listing: Callable[[str], Listing], section_id: str
) -> None:
    if inspector.argv is None:
        pytest.skip(inspector.missing)
    listing = first_listing(section_id)
    assert (listing.inspector_code, listing.findings) == (0, ""), listing.findings


@pytest.mark.parametrize("section_id", sorted(BUILTIN_SECTIONS))
def test_start_up_does_not_import_heavy_libraries(first_listing: Callable[[str], Listing], section_id: str) -> None:
    """initialize + tools/list never import torch, sentence-transformers, playwright, neo4j or sympy."""
    imported = first_listing(section_id).imported
    assert imported, "the import-time log was not written"
    assert not imported.intersection(HEAVY_MODULES)


@pytest.mark.slow
def test_gateway_schemas_are_portable(inspector: Inspector, tmp_path: Path) -> None:
    if inspector.argv is None:
        pytest.skip(inspector.missing)
    listing = _inspect(inspector.argv, [*cli_command(), "gateway", "--root", str(tmp_path)], tmp_path, {})
    assert (listing.inspector_code, listing.findings) == (0, ""), listing.findings
