"""One contract for every brain backend: SQLite, and the Neo4j backend over a real Bolt server — a Neo4j 5 when
NEO4J_URI is set, else ArcadeDB started here (tests/rag_ops/bolt_server.py). Every test that needs the Bolt server
lives in this file, so that one worker starts its JVM once per run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sections.shared.brain.model import EntityFilter, Project, node_id
from mcp_sections.shared.brain.parsing import parse_file
from mcp_sections.shared.brain.store import BrainStore
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from tests.rag_ops.bolt_server import neo4j_store
from tests.rag_ops.trees import FILES

np = pytest.importorskip("numpy")


@pytest.fixture(params=["sqlite", "neo4j"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BrainStore]:
    if request.param == "sqlite":
        from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore

        backend: BrainStore = SQLiteBrainStore(tmp_path / "brain.sqlite3")
    else:
        backend = neo4j_store(request.getfixturevalue("bolt_server"))
        backend.reset_for_tests()
    assert isinstance(backend, BrainStore)
    yield backend
    backend.close()


def ingest(store: BrainStore, project: str, files: dict[str, str]) -> None:
    store.upsert_project(Project(id=project, name=project, root=f"/src/{project}"))
    store.replace_files(project, [parse_file(project, rel, text.encode(), 1) for rel, text in files.items()])
    store.relink(project)
    store.refresh_counts(project)


def unit(vector: list[float]) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    return array / np.linalg.norm(array)


AUTH = {k: FILES[k] for k in ("auth/passwords.py", "auth/tokens.py", "auth/__init__.py", "docs/guide.md")}


def test_replace_is_idempotent_and_ids_deterministic(store: BrainStore) -> None:
    ingest(store, "p1", AUTH)
    first = store.schema(["p1"])
    ingest(store, "p1", AUTH)
    assert store.schema(["p1"]) == first
    login = node_id("p1", "Scope", "auth/passwords.py", "LoginService.login")
    [node] = store.get_nodes([login])
    assert node.name == "login" and node.props["kind"] == "method" and node.start_line == 24
    assert first["labels"]["File"] == 4 and first["labels"]["Scope"] >= 5 and first["labels"]["DocumentSection"] == 3
    assert store.get_project("p1").node_count == sum(first["labels"].values())


def test_derived_edges_calls_imports_links(store: BrainStore) -> None:
    ingest(store, "p1", AUTH)
    login = node_id("p1", "Scope", "auth/passwords.py", "LoginService.login")
    nodes, edges = store.neighbors(login, ["CALLS"], "out", 1, 50)
    assert {n.name for n, depth in nodes if depth == 1} == {"verify_password", "issue_token"}
    passwords = node_id("p1", "File", "auth/passwords.py")
    tokens = node_id("p1", "File", "auth/tokens.py")
    nodes, edges = store.neighbors(passwords, ["IMPORTS"], "out", 1, 50)
    assert any(e.dst == tokens and e.type == "IMPORTS" for e in edges)
    guide = node_id("p1", "DocumentSection", "docs/guide.md", "User guide")
    nodes, _ = store.neighbors(guide, ["LINKS_TO"], "out", 1, 10)
    assert tokens in {n.id for n, _ in nodes}
    # depth: file → DEFINES class → DEFINES method → CALLS function
    nodes, _ = store.neighbors(passwords, ["DEFINES", "CALLS"], "out", 3, 100)
    depths = {n.name: d for n, d in nodes}
    assert depths["LoginService"] == 1 and depths["login"] == 2 and depths["issue_token"] == 3
    # a changed callee file: CALLS edges are recomputed, never left dangling
    store.replace_files("p1", [parse_file("p1", "auth/tokens.py", b"def other():\n    pass\n", 2)])
    store.relink("p1")
    nodes, _ = store.neighbors(login, ["CALLS"], "out", 1, 50)
    assert {n.name for n, _ in nodes if n.id != login} == {"verify_password"}


def test_remove_paths_is_component_wise(store: BrainStore) -> None:
    files = {"a/b/x.py": "def x():\n    pass\n", "a/bc/y.py": "def y():\n    pass\n", "a/b.py": "def z():\n    pass\n"}
    ingest(store, "p1", files)
    removed = store.remove_paths("p1", [], prefixes=["a/b"])
    assert removed == 2  # the File and its one Scope
    remaining = {n.path for n in store.query_entities(EntityFilter(label="File", project_ids=["p1"]))[0]}
    assert remaining == {"a/bc/y.py", "a/b.py"}
    assert set(store.file_records("p1")) == {"a/bc/y.py", "a/b.py"}
    assert store.remove_paths("p1", ["a/b.py"]) == 2
    assert set(store.file_records("p1")) == {"a/bc/y.py"}


def test_query_entities_filters_and_allow_list(store: BrainStore) -> None:
    ingest(store, "p1", AUTH)
    ingest(store, "p2", {"x.py": "def login():\n    pass\n"})
    nodes, total = store.query_entities(EntityFilter(label="Scope", name="login"))
    assert total == 2 and {n.project_id for n in nodes} == {"p1", "p2"}
    nodes, total = store.query_entities(EntityFilter(label="Scope", properties={"kind": "method"}, project_ids=["p1"]))
    assert [n.name for n in nodes] == ["login"]
    nodes, total = store.query_entities(EntityFilter(name="pass", name_match="contains", project_ids=["p1"]))
    assert {n.name for n in nodes} >= {"hash_password", "verify_password", "passwords.py"}
    nodes, total = store.query_entities(EntityFilter(path_prefix="auth", project_ids=["p1"], limit=2, offset=1))
    assert len(nodes) == 2 and total > 3
    with pytest.raises(ValueError):
        store.query_entities(EntityFilter(properties={"x') OR 1=1 --": 1}))
    with pytest.raises(ValueError):
        store.query_entities(EntityFilter(label="Scope; DROP TABLE nodes"))


def test_a_qualified_name_is_read_over_every_backend(store: BrainStore) -> None:
    """rag_ops reads Class.method, module.function and path::qualname over the store's own filters."""
    from mcp_sections.servers.rag_ops.names import qualified_nodes

    ingest(store, "p1", AUTH)
    ingest(store, "p2", {"x.py": "class LoginService:\n    def login(self):\n        pass\n"})
    every = EntityFilter()
    for name in ("LoginService.login", "auth.passwords.LoginService.login", "passwords.py::LoginService.login"):
        found = qualified_nodes(store, name, EntityFilter(project_ids=["p1"]))
        assert [(n.path, n.props["qualname"]) for n in found] == [("auth/passwords.py", "LoginService.login")], name
    assert {n.project_id for n in qualified_nodes(store, "LoginService.login", every)} == {"p1", "p2"}
    assert [n.path for n in qualified_nodes(store, "x.LoginService.login", every)] == ["x.py"]
    assert [n.name for n in qualified_nodes(store, "auth.tokens.issue_token", every)] == ["issue_token"]
    assert [n.label for n in qualified_nodes(store, "auth/tokens.py", every)] == ["File"]
    assert qualified_nodes(store, "tokens.LoginService.login", every) == []


def test_text_search_ranks_names_and_is_injection_safe(store: BrainStore) -> None:
    ingest(store, "p1", AUTH)
    hits = store.text_search("verify password", ["p1"], None, 5)
    top = store.get_nodes([hits[0][0]])[0]
    assert top.name == "verify_password"
    for hostile in ['"', "NEAR(a b)", "a OR", "*", "content:x", "') DROP", "\x00"]:
        store.text_search(hostile, None, None, 5)  # never raises
    assert store.text_search("verify", ["p2"], None, 5) == []
    assert all(
        store.get_nodes([h[0]])[0].label == "DocumentSection"
        for h in store.text_search("deployment", None, ["DocumentSection"], 5)
    )


def test_vectors_pending_kept_and_invalidated(store: BrainStore) -> None:
    ingest(
        store, "p1", {"m.py": "def a():\n    '''Alpha.'''\n    return 1\n\n\ndef b():\n    '''Beta.'''\n    return 2\n"}
    )
    pending = store.pending_embeddings("m", 100)
    assert len(pending) == store.count_pending("m") >= 2
    vectors = {nid: unit([1.0, i, 0.0]) for i, (nid, _, _) in enumerate(pending)}
    assert store.put_vectors("m", [(nid, h, vectors[nid]) for nid, _, h in pending]) == len(pending)
    assert store.count_pending("m") == 0 and store.count_pending("other-model") == len(pending)
    a = node_id("p1", "Scope", "m.py", "a")
    hits = store.vector_search("m", unit([1.0, 0.0, 0.0]), ["p1"], None, 1)
    assert hits[0][0] == a and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    # change b only: a keeps its vector, b is pending again
    store.replace_files(
        "p1",
        [
            parse_file(
                "p1",
                "m.py",
                b"def a():\n    '''Alpha.'''\n    return 1\n\n\ndef b():\n    '''Beta changed.'''\n    return 3\n",
                2,
            )
        ],
    )
    assert [p[0] for p in store.pending_embeddings("m", 100)] == [node_id("p1", "Scope", "m.py", "b")]
    # a stale vector (text changed meanwhile) is refused
    assert store.put_vectors("m", [(node_id("p1", "Scope", "m.py", "b"), "0" * 64, unit([0, 1, 0]))]) == 0
    assert store.vector_search("m", unit([1.0, 0.0, 0.0]), None, ["File"], 5) == []


def test_delete_project_and_gc(store: BrainStore) -> None:
    ingest(store, "p1", AUTH)
    ingest(store, "p2", AUTH)
    assert store.delete_project("p1") > 0
    assert store.get_project("p1") is None and store.schema(["p1"])["labels"]["Scope"] == 0
    assert store.schema(["p2"])["labels"]["Scope"] > 0
    stats = store.gc()
    assert stats["nodes"] == 0 and stats["edges"] == 0


# The Neo4j backend's own read guard, on the same live server.


def test_on_a_real_bolt_server_run_cypher_never_writes(bolt_server: Any) -> None:
    """Against the Bolt server: the token guard refuses before the server is asked, and a write the guard lets
    through (plain SET, CREATE) is refused by EXPLAIN and never runs. (ArcadeDB's EXPLAIN reports every query as
    a write, so the read path itself is confirmed only on a real Neo4j; see the README.)"""
    store = neo4j_store(bolt_server)
    try:
        store.reset_for_tests()
        store.upsert_project(Project(id="p", name="p", root="/src/p"))
        before = store.schema(["p"])
        for query in ("MATCH (n:BrainNode) SET n.pwned = true RETURN n", "CREATE (n:BrainNode {id: 'x'}) RETURN n"):
            with pytest.raises(ToolFailure) as failure:
                store.run_read_query(query, {}, timeout=5, limit=5)
            assert failure.value.code is ErrorCode.PERMISSION_DENIED
        with pytest.raises(ToolFailure) as failure:
            store.run_read_query("CALL `apoc`.`load`.json('http://x') YIELD value RETURN value", {}, timeout=5, limit=5)
        assert "apoc.load.json" in failure.value.message
        assert store.schema(["p"]) == before
        again = neo4j_store(bolt_server)  # the schema statements are idempotent on a live server
        again.close()
    finally:
        store.close()
