"""What may import what: `shared/` knows no section; a section imports `shared/` and itself, never another
section; only the composition root (cli, registry, doctor, healthcheck, gateway, and the section pool both agent
hosts use) knows every section."""

from __future__ import annotations

import ast
from collections.abc import Container
from pathlib import Path

import pytest

from tests.stdio import REPO

COMPOSITION_ROOT = {"cli", "registry", "doctor", "healthcheck", "gateway", "pool"}


def imported_modules(path: Path, known: Container[str] = ()) -> set[str]:
    """The modules `path` imports, wherever the import stands (in a function, under TYPE_CHECKING): each
    `from package import name` counts as the module `package.name` when `known` holds it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in known else node.module)
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
    """`gateway/core → pool/hosted → orchestration` (`Section.hosted`) must not lead back to the gateway: the pool both
    use is its own package, which imports neither."""
    for path in (REPO / "servers" / "pool").rglob("*.py"):
        imported = imported_modules(path)
        assert not any(
            m.startswith(("mcp_sections.servers.gateway", "mcp_sections.servers.orchestration")) for m in imported
        ), path
    for path in (REPO / "servers" / "orchestration").rglob("*.py"):
        assert not any(m.startswith("mcp_sections.servers.gateway") for m in imported_modules(path)), path


#: The floors of `shared/`, lowest first (CONTRIBUTING.md, "The floors of shared/"): each imports only floors below.
FLOORS = (
    "ground",
    "text",
    "confinement",
    "settings",
    "store",
    "net",
    "framework",
    "serving",
    "embeddings",
    "brain",
    "agents",
)


def module_name(path: Path) -> str:
    relative = path.relative_to(REPO).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return "mcp_sections." + ".".join(parts)


def project_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for top in ("shared", "servers")
        for path in (REPO / top).rglob("*.py")
        if "__pycache__" not in path.parts
    }


def imports_of(path: Path, known: dict[str, Path]) -> set[str]:
    """The project's modules `path` imports (`imported_modules` among `known`)."""
    return imported_modules(path, known) & known.keys()


def floor_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "shared" else None


def test_shared_is_floors_and_at_most_ten_modules_beside_them() -> None:
    top = sorted(p.name for p in (REPO / "shared").iterdir() if p.suffix == ".py" and p.name != "__init__.py")
    packages = sorted(p.name for p in (REPO / "shared").iterdir() if (p / "__init__.py").is_file())
    assert len(top) <= 10, top
    assert set(packages) == set(FLOORS), packages


def test_a_floor_imports_only_the_floors_below_it() -> None:
    known = project_modules()
    upward = {}
    for module, path in known.items():
        floor = floor_of(module)
        if floor is None:
            continue
        above = [
            imported
            for imported in imports_of(path, known)
            if (other := floor_of(imported)) is not None and FLOORS.index(other) > FLOORS.index(floor)
        ]
        if above:
            upward[module] = sorted(above)
    assert not upward


def test_no_import_cycle_in_the_project() -> None:
    """No cycle among the modules of shared/ and servers/, function-level and TYPE_CHECKING imports included: a cycle
    hidden by an import inside a function is still a cycle a reader has to untangle."""
    import sys

    known = project_modules()
    graph = {module: imports_of(path, known) - {module} for module, path in known.items()}
    # a package's __init__ is imported by every import of its modules: not an edge of its own
    graph = {
        m: {i for i in edges if not (known[i].name == "__init__.py" and m.startswith(i + "."))}
        for m, edges in graph.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not cycles, cycles
