"""What a search covers (README, "What a brain search covers"): semantic_search and brain_search without a project
answer from the project the caller works in, take all_projects=true, and say in `scope` which projects they searched,
why, and the exact argument that widens or narrows it. Two projects ingested, the real server in memory, the real
embedding model, real SQLite; the client offers its MCP roots and changes them as a client changes workspace."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import ListRootsResult, Root

from mcp_sections.servers.rag_ops.models import SearchResult
from mcp_sections.shared.embeddings.embedder import default_model_runs
from tests.in_memory import section_in_memory
from tests.rag_ops.trees import make_bulk_tree
from tests.stdio import data_of
from tests.waiting import eventually

pytestmark = [
    pytest.mark.skipif(not default_model_runs(), reason="needs the rag extra: pip install 'mcp-sections[rag]'"),
    # the server asks for roots (deprecated in the 2026-07-28 protocol, in use before it): its warning is ours
    pytest.mark.filterwarnings("ignore:The roots capability is deprecated"),
]
QUERY = "compute the value"


class Roots:
    """What the test client answers to roots/list (no roots: the server's stand in), and how many times it was asked."""

    def __init__(self) -> None:
        self.paths: list[Path] = []
        self.asked = 0

    async def __call__(self, context: Any) -> ListRootsResult:
        self.asked += 1
        return ListRootsResult(roots=[Root(uri=path.as_uri()) for path in self.paths])  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("search-scope").resolve()
    make_bulk_tree(base / "roots" / "alpha", 3, words="gardening")
    make_bulk_tree(base / "roots" / "beta", 3, words="astronomy")
    (base / "roots" / "notes").mkdir()  # a directory no project holds nor lies inside
    return base


@pytest.fixture(scope="module")
def roots() -> Roots:
    return Roots()


@pytest.fixture(scope="module")
async def client(tree: Path, roots: Roots) -> AsyncIterator[Client]:
    env = {"MCP_SECTIONS_DATA_DIR": str(tree / "data")}
    async with section_in_memory(
        "rag_ops", "--root", str(tree / "roots"), env=env, mode="legacy", list_roots_callback=roots
    ) as connected:
        for name in ("alpha", "beta"):  # ingest_directory makes no project active
            ingested = data_of(
                await connected.call_tool(
                    "ingest_directory", {"path": str(tree / "roots" / name), "project_name": name}
                )
            )
            assert ingested["searchable"]["complete"], ingested["searchable"]
        yield connected


async def working_in(client: Client, roots: Roots, *paths: Path) -> None:
    """The client's roots become `paths` (none: it offers none), and the server has read them."""
    asked = roots.asked
    roots.paths = list(paths)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # roots are deprecated in the 2026-07-28 protocol, still in use before it
        await client.send_roots_list_changed()

    async def read_again() -> bool:  # the notification is handled concurrently with the next request
        await client.call_tool("brain_search", {"query": QUERY, "limit": 1, "semantic": False})
        return roots.asked > asked

    await eventually(read_again)


async def search(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    return data_of(await client.call_tool(tool, {"query": QUERY, "limit": 50, **arguments}))


def projects_of(found: dict[str, Any]) -> set[str]:
    return {result["project_id"] for result in found["results"]}


@pytest.mark.anyio
async def test_all_projects_is_one_argument_away_in_both_searches(client: Client, tree: Path, roots: Roots) -> None:
    await working_in(client, roots, tree / "roots" / "beta" / "pkg0")
    for tool in ("semantic_search", "brain_search"):
        found = await search(client, tool, all_projects=True)
        assert found["searched_projects"] == ["alpha", "beta"] and projects_of(found) == {"alpha", "beta"}, tool
        assert "every project, as all_projects=true asks" in found["scope"], found["scope"]
    assert "Narrow it with project='" in (await search(client, "semantic_search", all_projects=True))["scope"]
    assert "Narrow it with projects=['" in (await search(client, "brain_search", all_projects=True))["scope"]
    found = await search(client, "brain_search", all_projects=True, projects=["alpha"])  # all_projects wins
    assert found["searched_projects"] == ["alpha", "beta"] and "(projects ignored)" in found["scope"]


@pytest.mark.anyio
async def test_without_a_project_a_search_answers_from_the_project_holding_the_callers_root(
    client: Client, tree: Path, roots: Roots
) -> None:
    root = tree / "roots" / "beta" / "pkg0"
    await working_in(client, roots, root)
    for tool, other in (("semantic_search", "project='alpha'"), ("brain_search", "projects=['alpha']")):
        found = await search(client, tool)
        assert found["searched_projects"] == ["beta"] and projects_of(found) == {"beta"}, tool
        scope = found["scope"]
        assert scope.startswith("Searched beta: the project you work in") and f"beta holds {root}, your root" in scope
        assert f"Widen it with all_projects=true (all 2 projects), or search another with {other}." in scope, scope
        assert scope in SearchResult(**found).render_text()  # what a client reading the text sees


@pytest.mark.anyio
async def test_a_root_no_project_holds_searches_every_project_and_says_so(
    client: Client, tree: Path, roots: Roots
) -> None:
    notes = tree / "roots" / "notes"
    await working_in(client, roots, notes)
    for tool, narrow in (("semantic_search", "project='alpha'"), ("brain_search", "projects=['alpha']")):
        found = await search(client, tool)
        assert found["searched_projects"] == ["alpha", "beta"] and projects_of(found) == {"alpha", "beta"}, tool
        assert found["scope"] == (
            f"Searched alpha, beta: every project, as none holds your root {notes} nor lies inside it. "
            f"Narrow it with {narrow}."
        )


@pytest.mark.anyio
async def test_a_root_above_the_projects_searches_those_inside_it(client: Client, tree: Path, roots: Roots) -> None:
    await working_in(client, roots, tree / "roots")
    found = await search(client, "brain_search")
    assert found["searched_projects"] == ["alpha", "beta"] and projects_of(found) == {"alpha", "beta"}
    assert found["scope"] == (
        f"Searched alpha, beta: the projects inside your root {tree / 'roots'}. Narrow it with projects=['alpha']."
    )
    await working_in(client, roots)  # a client that offers no roots: the server's stand in
    found = await search(client, "semantic_search")
    assert found["searched_projects"] == ["alpha", "beta"]
    assert f"the projects inside the server's root {tree / 'roots'}" in found["scope"], found["scope"]


@pytest.mark.anyio
async def test_projects_asked_for_and_the_active_project_are_said(client: Client, tree: Path, roots: Roots) -> None:
    await working_in(client, roots, tree / "roots" / "beta")
    found = await search(client, "semantic_search", project="alpha")
    assert found["searched_projects"] == ["alpha"] and projects_of(found) == {"alpha"}
    assert found["scope"].startswith("Searched alpha: as project='alpha' asks. Widen it with all_projects=true")
    found = await search(client, "brain_search", projects=["beta", "alpha"])
    assert found["searched_projects"] == ["beta", "alpha"]
    assert (
        found["scope"] == "Searched beta, alpha: as projects=['beta', 'alpha'] asks. Narrow it with projects=['beta']."
    )
    data_of(await client.call_tool("switch_project", {"project": "alpha"}))  # the project named by context
    try:
        for tool in ("semantic_search", "brain_search"):
            found = await search(client, tool)
            assert found["searched_projects"] == ["alpha"] and projects_of(found) == {"alpha"}, tool
            assert found["scope"].startswith("Searched alpha: the active project (made so by switch_project"), tool
            assert "all_projects=true" in found["scope"]
    finally:
        data_of(await client.call_tool("unload_project", {"project": "alpha"}))


@pytest.mark.anyio
async def test_project_types_narrow_the_scope_and_say_so(client: Client, tree: Path, roots: Roots) -> None:
    await working_in(client, roots, tree / "roots" / "notes")
    found = await search(client, "brain_search", project_types=["web-crawl"])
    assert found["searched_projects"] == [] and found["results"] == []
    assert found["scope"] == (
        "Searched no project: every project, as none holds your root "
        f"{tree / 'roots' / 'notes'} nor lies inside it, of the types web-crawl (project_types). "
        "Drop project_types to search the projects of every type."
    )


@pytest.mark.anyio
async def test_an_empty_brain_and_a_brain_of_one_project_say_so(tmp_path: Path) -> None:
    root = make_bulk_tree(tmp_path.resolve() / "roots" / "alpha", 2, words="gardening")
    env = {"MCP_SECTIONS_RAG_OPS_EMBEDDINGS": "0"}
    async with section_in_memory("rag_ops", "--root", str(root.parent), env=env) as client:
        for tool in ("semantic_search", "brain_search"):
            found = await search(client, tool)
            assert found["results"] == [] and found["searched_projects"] == []
            assert found["scope"].startswith("Searched nothing: the brain holds no project yet. setup_project"), tool
        data_of(await client.call_tool("ingest_directory", {"path": str(root), "project_name": "alpha"}))
        for tool in ("semantic_search", "brain_search"):
            found = await search(client, tool)
            assert found["searched_projects"] == ["alpha"] and projects_of(found) == {"alpha"}
            assert found["scope"] == (
                f"Searched alpha: the projects inside the server's root {root.parent}. It is the brain's only "
                "project: all_projects=true searches the same."
            )
