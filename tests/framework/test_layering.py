"""What may import what: `shared/` knows no section; a section imports `shared/` and itself, never another
section; only the composition root (cli, registry, doctor, healthcheck, gateway, and the section pool both agent
hosts use) knows every section."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.stdio import REPO

COMPOSITION_ROOT = {"cli", "registry", "doctor", "healthcheck", "gateway", "pool"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_shared_imports_no_section() -> None:
    offenders = {
        str(path.relative_to(REPO)): sorted(m for m in imported_modules(path) if m.startswith("mcp_sections.servers"))
        for path in (REPO / "shared").rglob("*.py")
    }
    assert not {path: mods for path, mods in offenders.items() if mods}


@pytest.mark.parametrize(
    "section",
    sorted(
        p.name for p in (REPO / "servers").iterdir() if (p / "__init__.py").is_file() and p.name not in COMPOSITION_ROOT
    ),
)
def test_a_section_imports_no_other_section(section: str) -> None:
    own = f"mcp_sections.servers.{section}"
    offenders = {}
    for path in (REPO / "servers" / section).rglob("*.py"):
        foreign = [
            module
            for module in imported_modules(path)
            if module.startswith("mcp_sections.servers") and not (module == own or module.startswith(own + "."))
        ]
        if section == "orchestration":  # it runs sub-agents over the section pool (its own when served alone)
            foreign = [module for module in foreign if not module.startswith("mcp_sections.servers.pool.")]
        if foreign:
            offenders[str(path.relative_to(REPO))] = foreign
    assert not offenders


def test_the_gateway_and_orchestration_share_the_pool_without_a_cycle() -> None:
    """`gateway/core → gateway/hosted → orchestration/orchestrator` must not lead back to the gateway: the pool both
    use is its own package, which imports neither."""
    for path in (REPO / "servers" / "pool").rglob("*.py"):
        imported = imported_modules(path)
        assert not any(
            m.startswith(("mcp_sections.servers.gateway", "mcp_sections.servers.orchestration")) for m in imported
        ), path
    for path in (REPO / "servers" / "orchestration").rglob("*.py"):
        assert not any(m.startswith("mcp_sections.servers.gateway") for m in imported_modules(path)), path
