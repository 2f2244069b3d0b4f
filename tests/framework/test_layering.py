"""What may import what: `shared/` knows no section; a section imports `shared/` and itself, never another
section; only the composition root (cli, registry, doctor, healthcheck, gateway) knows every section."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMPOSITION_ROOT = {"cli", "registry", "doctor", "healthcheck", "gateway"}


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
        str(path.relative_to(ROOT)): sorted(m for m in imported_modules(path) if m.startswith("mcp_sections.servers"))
        for path in (ROOT / "shared").rglob("*.py")
    }
    assert not {path: mods for path, mods in offenders.items() if mods}


@pytest.mark.parametrize(
    "section", sorted(p.name for p in (ROOT / "servers").iterdir() if p.is_dir() and p.name not in COMPOSITION_ROOT)
)
def test_a_section_imports_no_other_section(section: str) -> None:
    if section.startswith("__"):
        return
    own = f"mcp_sections.servers.{section}"
    offenders = {}
    for path in (ROOT / "servers" / section).rglob("*.py"):
        foreign = [
            module
            for module in imported_modules(path)
            if module.startswith("mcp_sections.servers") and not (module == own or module.startswith(own + "."))
        ]
        allowed = {"mcp_sections.servers.gateway.core", "mcp_sections.servers.gateway.settings"}
        if section == "orchestration":  # served on its own, orchestration builds a gateway of its own
            foreign = [module for module in foreign if module not in allowed]
        if foreign:
            offenders[str(path.relative_to(ROOT))] = foreign
    assert not offenders
