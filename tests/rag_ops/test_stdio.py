"""rag_ops end to end over stdio: one server (one model load) for the whole module."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.shared.brain.parsing import tree_sitter_available
from mcp_sections.shared.embeddings.embedder import default_model_runs
from tests.rag_ops.trees import EXPECTED_FILES, SECRET_MARKER, make_tree
from tests.stdio import call, check_tools_snapshot, data_of, fail, section_client

HAS_MODEL = default_model_runs()
TREE_SITTER = all(tree_sitter_available().values())  # without the grammars, non-Python code is indexed as text
needs_model = pytest.mark.skipif(not HAS_MODEL, reason="the default embedding model cannot run: the rag extra")

MAILER = {
    "mailer/send.py": '''"""Outgoing e-mail."""


def send_email(to: str, subject: str, body: str) -> None:
    """Send an e-mail notification message to a customer through the SMTP relay."""
    relay().deliver(to, subject, body)


def relay():
    """The SMTP connection."""
    return None
''',
    "mailer/passwords.py": '''def reset_password_link(user: str) -> str:
    """Build the link of a password reset e-mail."""
    return f"https://shop/reset/{user}"
''',
}


GARDEN = {
    "garden/watering.py": '''def water_tomatoes(litres: float) -> None:
    """Give the tomato plants their evening water."""
''',
    "garden/NOTES.md": "# Garden\n\nCompost goes on the beds in October.\n",
}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("rag-ops")
    root = base / "root"
    make_tree(root / "shop")
    make_tree(root / "mailer", MAILER)
    make_tree(root / "garden", GARDEN)
    (base / "absent.toml").write_text("")
    return root


@pytest.fixture(scope="module")
async def client(root: Path) -> AsyncIterator[Client]:
    env = {"MCP_SECTIONS_CONFIG": str(root.parent / "absent.toml"), "MCP_SECTIONS_DATA_DIR": str(root.parent / "data")}
    async with section_client("rag_ops", "--root", str(root), env=env) as connected:
        yield connected


@pytest.mark.anyio
async def test_tools_list_snapshot(client: Client) -> None:
    tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == {
        "ingest_directory",
        "setup_project",
        "ingest_code",
        "generate_embeddings",
        "create_project",
        "load_project",
        "switch_project",
        "unload_project",
        "list_projects",
        "forget_path",
        "gc",
        "get_schema",
        "query_entities",
        "explore_relationships",
        "semantic_search",
        "brain_search",
        "run_cypher",
    }
    check_tools_snapshot("rag_ops", tools)


@pytest.mark.anyio
async def test_ingest_with_progress_then_schema(client: Client, root: Path) -> None:
    updates: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        updates.append((done, total, message))

    result = await client.call_tool(
        "ingest_directory", {"path": str(root / "shop"), "project_name": "Shop"}, progress_callback=progress
    )
    report = data_of(result)
    assert report["project_id"] == "shop" and report["context"] == "new-project"
    assert report["files_added"] == len(EXPECTED_FILES) and report["files_scanned"] == len(EXPECTED_FILES) + 2
    # the files, then (with a model) the embedding before the answer: one count going up to its total
    assert (report["files_scanned"], report["files_scanned"]) in [(done, total) for done, total, _ in updates]
    assert updates[-1][0] == updates[-1][1] and [u[0] for u in updates] == sorted(u[0] for u in updates)
    assert report["searchable"]["ingest"] == "complete"
    if HAS_MODEL:  # a plain call embeds what it wrote before answering
        assert report["searchable"]["complete"] is True and report["embeddings_pending"] == 0
    schema = await call(client, "get_schema", project="shop")
    assert schema["labels"]["File"] == len(EXPECTED_FILES) and schema["labels"]["DocumentSection"] == 3
    assert schema["labels"]["Scope"] >= (25 if TREE_SITTER else 6)
    for rel in ("DEFINES", "CONTAINS", "IMPORTS", "CALLS", "LINKS_TO", "IN_PROJECT"):
        assert schema["relationships"][rel] > 0, rel
    assert "signature" in schema["properties"]["Scope"] and schema["backend"] == "sqlite"
    # text search works at once, whatever the embeddings
    found = await call(client, "brain_search", query="renderInvoice", semantic=False)
    assert found["results"][0]["relative_path"] == "web/invoice.js" and found["results"][0]["project_id"] == "shop"
    if TREE_SITTER:
        assert found["results"][0]["name"] == "renderInvoice" and found["results"][0]["kind"] == "function"
    # secrets were never ingested
    assert (await call(client, "brain_search", query=SECRET_MARKER, semantic=False))["results"] == []


@pytest.mark.anyio
async def test_query_entities_and_explore(client: Client) -> None:
    found = await call(client, "query_entities", label="Scope", name="login", project="shop")
    [login] = found["entities"]
    assert login["path"].endswith("shop/auth/passwords.py") and login["kind"] == "method"
    graph = await call(client, "explore_relationships", node_id=login["id"], types=["CALLS"], direction="out")
    assert {n["name"] for n in graph["nodes"]} == {"verify_password", "issue_token"}
    by_name = await call(client, "explore_relationships", node_id="login", types=["CALLS"], direction="out")
    assert by_name == graph  # a name is resolved as query_entities would
    message = await fail(client, "explore_relationships", "NOT_FOUND", node_id="password_option")
    assert "query_entities" in message and "24-hex" not in message and "pattern" not in message
    up = await call(client, "explore_relationships", node_id=login["id"], direction="in", depth=3, types=["DEFINES"])
    assert [(n["label"], n["depth"]) for n in up["nodes"]] == [("Scope", 1), ("File", 2)]
    if TREE_SITTER:
        go = await call(client, "query_entities", properties={"language": "go", "kind": "method"})
        assert [e["name"] for e in go["entities"]] == ["Push"]
    await fail(client, "query_entities", "INVALID_INPUT", properties={"bogus": 1})
    await fail(client, "query_entities", "INVALID_INPUT", label="Nope")
    await fail(client, "explore_relationships", "INVALID_INPUT", node_id=login["id"], depth=6)
    await fail(client, "explore_relationships", "NOT_FOUND", node_id="0" * 24)
    await fail(client, "explore_relationships", "INVALID_INPUT", node_id="x" * 201)


@needs_model
@pytest.mark.anyio
async def test_semantic_search_finds_functions(client: Client) -> None:
    done = await call(client, "generate_embeddings", project="shop", max_seconds=120)
    assert done["complete"] and done["pending"] == 0
    cases = {
        "where is the user's password hashed securely": "hash_password",
        "compute the price of the shopping cart with tax": "cartTotal",
        "distance between two points": "distance",
        "apply a percentage discount on an amount": "applyDiscount",
        "run all background jobs in the queue": "Drain",
    }
    if not TREE_SITTER:  # only the Python functions are scopes then
        cases = {q: name for q, name in cases.items() if name == "hash_password"}
    for query, expected in cases.items():
        result = await call(client, "semantic_search", query=query, project="shop", limit=3, node_types=["Scope"])
        assert result["mode"] == "semantic"
        names = [r["name"] for r in result["results"]]
        assert expected in names, (query, names)
        assert result["results"][0]["start_line"] and result["results"][0]["score"] > 0.2  # the cosine similarity


@needs_model
@pytest.mark.anyio
async def test_cross_project_ranking(client: Client, root: Path) -> None:
    mailer = data_of(await client.call_tool("ingest_directory", {"path": str(root / "mailer")}))
    assert mailer["context"] == "quick-ingest" and mailer["project_type"] == "quick-ingest"
    assert (await call(client, "generate_embeddings", project=mailer["project_id"]))["complete"]
    mail = await call(client, "brain_search", query="send an email notification to a customer", limit=5)
    assert mail["mode"] == "hybrid" and mail["results"][0]["name"] == "send_email"
    assert mail["results"][0]["project_id"] == mailer["project_id"]
    assert mail["results"][0]["project_type"] == "quick-ingest"
    both = await call(client, "brain_search", query="password", types=["function"], limit=10)
    projects = [r["project_id"] for r in both["results"]]
    assert {"shop", mailer["project_id"]} <= set(projects)
    scores = [r["score"] for r in both["results"]]
    assert scores == sorted(scores, reverse=True) and 0 < scores[-1] <= scores[0] <= 1
    only = await call(client, "brain_search", query="password", projects=[mailer["project_id"]])
    assert {r["project_id"] for r in only["results"]} == {mailer["project_id"]}
    listed = await call(client, "list_projects")
    assert {p["id"]: p["type"] for p in listed["projects"]}[mailer["project_id"]] == "quick-ingest"


@pytest.mark.anyio
async def test_incremental_reingest_and_embeddings_of_changes_only(client: Client, root: Path) -> None:
    target = root / "shop" / "auth" / "tokens.py"
    target.write_text(
        target.read_text() + '\n\ndef revoke_token(token: str) -> None:\n    """Revoke a session token."""\n'
    )
    report = data_of(await client.call_tool("ingest_directory", {"path": str(root / "shop")}))
    assert report["context"] == "already-ingested"
    assert (report["files_changed"], report["files_added"], report["files_removed"]) == (1, 0, 0)
    assert report["changed_paths"] == ["auth/tokens.py"]
    if HAS_MODEL:
        done = await call(client, "generate_embeddings", project="shop")
        # only the new function and the (unchanged-text) file summary are pending; the summary is a cache hit
        assert done["computed_by_model"] <= 1 and done["complete"]
    assert (await call(client, "query_entities", name="revoke_token"))["total_count"] == 1


@pytest.mark.anyio
@pytest.mark.skipif(
    importlib.util.find_spec("numpy") is None, reason="needs the rag extra: pip install 'mcp-sections[rag]'"
)
async def test_sessions_and_ingest_code(client: Client) -> None:
    loaded = await call(client, "load_project", project="shop")
    assert loaded["project"]["active"] and loaded["stale_files"] == 0
    snippet = await call(
        client, "ingest_code", content="def tiny_helper():\n    return 42\n", file_path="scratch/tiny.py"
    )
    assert snippet["project_id"] == "shop" and [s["name"] for s in snippet["scopes"]] == ["tiny_helper"]
    assert (await call(client, "unload_project", project="shop"))["project"]["active"] is False
    await fail(client, "switch_project", "NOT_FOUND", project="missing")
    await fail(client, "ingest_code", "INVALID_INPUT", content="x", file_path="../../etc/passwd")


@pytest.mark.anyio
async def test_forget_path_over_stdio(client: Client, root: Path) -> None:
    before = await call(client, "query_entities", label="File", project="shop", limit=200)
    forgotten = await call(client, "forget_path", path=str(root / "shop" / "web"))
    assert forgotten["projects_changed"] == ["shop"]
    after = await call(client, "query_entities", label="File", project="shop", limit=200)
    assert {e["relative_path"] for e in after["entities"]} == {
        e["relative_path"] for e in before["entities"] if not e["relative_path"].startswith("web/")
    }
    await fail(client, "forget_path", "PERMISSION_DENIED", path=str(root))
    await fail(client, "forget_path", "INVALID_INPUT", path="")
    await fail(client, "forget_path", "INVALID_INPUT", path="shop/*.py")
    await fail(client, "ingest_directory", "PERMISSION_DENIED", path="/etc")
    needs_neo4j = await fail(client, "run_cypher", "DEPENDENCY_ERROR", query="MATCH (n) RETURN n")
    for advice in ("embedded SQLite backend", "query_entities", "explore_relationships", "backend = 'neo4j'"):
        assert advice in needs_neo4j, advice
    assert "MCP_SECTIONS_RAG_OPS_BACKEND=neo4j" in needs_neo4j and "NEO4J_URI" in needs_neo4j


@pytest.mark.anyio
async def test_setup_project_registers_ingests_activates_and_embeds_in_one_call(client: Client, root: Path) -> None:
    updates: list[str | None] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        updates.append(message)

    result = await client.call_tool(
        "setup_project", {"path": str(root / "garden"), "embed_seconds": 120}, progress_callback=progress
    )
    setup = data_of(result)
    assert setup["created"] is True and setup["project"]["id"] == "garden"
    assert setup["ingest"]["context"] == "new-project" and setup["ingest"]["files_added"] >= 2
    assert updates
    if HAS_MODEL:
        assert setup["embeddings"]["complete"] is True and setup["embeddings"]["pending"] == 0
        assert "by meaning: all" in setup["message"] and setup["ingest"]["searchable"]["complete"] is True
        found = await call(client, "semantic_search", query="when should the vegetables get water?")
        assert found["results"][0]["name"] == "water_tomatoes"
    again = await call(client, "setup_project", path=str(root / "garden"), embed_seconds=0)
    assert again["created"] is False and again["ingest"]["context"] == "already-ingested"
    assert again["ingest"]["files_unchanged"] == setup["ingest"]["files_added"]


@pytest.mark.anyio
async def test_secret_values_in_indexed_content_come_back_masked(client: Client, root: Path) -> None:
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    (root / "secrets-demo").mkdir(exist_ok=True)
    await call(client, "create_project", name="secrets-demo", path=str(root / "secrets-demo"))
    await call(
        client,
        "ingest_code",
        content=f'def deploy_settings():\n    """The deploy robot logs in with {token}."""\n',
        file_path="scratch/deploy.py",
        project="secrets-demo",
    )
    found = await client.call_tool(
        "brain_search", {"query": "deploy_settings", "projects": ["secrets-demo"], "semantic": False}
    )
    shown = str(found.structured_content) + "".join(getattr(block, "text", "") for block in found.content)
    assert "deploy_settings" in shown and token not in shown
    assert "***MASKED***" in shown


@pytest.mark.anyio
async def test_ingest_skips_hard_linked_files(client: Client, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside-secret.py"
    outside.write_text('def leaked():\n    """Outside the roots."""\n')
    project = root / "linked"
    project.mkdir()
    (project / "ok.py").write_text('def fine():\n    """Inside."""\n')
    try:
        os.link(outside, project / "alias.py")
    except OSError:
        pytest.skip("the temporary directory and the root are on different file systems")
    await call(client, "ingest_directory", path=str(project), project_name="linked")
    files = await call(client, "query_entities", label="File", project="linked", limit=50)
    assert {entity["relative_path"] for entity in files["entities"]} == {"ok.py"}
