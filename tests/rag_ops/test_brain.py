"""The brain manager directly (no MCP): context resolution, incremental ingest, forgetting, secrets, gc."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_sections.servers.rag_ops.brain import Brain
from mcp_sections.shared.brain.model import EntityFilter
from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from tests.rag_ops.trees import EXPECTED_FILES, SECRET_MARKER, make_bulk_tree, make_tree


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root").mkdir()
    return tmp_path / "root"


@pytest.fixture
def brain(tmp_path: Path, root: Path) -> Iterator[Brain]:
    instance = Brain(SQLiteBrainStore(tmp_path / "data" / "brain.sqlite3"), [root], background_embeddings=False)
    yield instance
    instance.close()


def files_of(brain: Brain, project: str) -> set[str]:
    nodes, _ = brain.store.query_entities(EntityFilter(label="File", project_ids=[project], limit=1000))
    return {n.path for n in nodes}


def test_quick_ingest_then_refresh_then_subdir(brain: Brain, root: Path) -> None:
    make_tree(root / "shop")
    report = brain.ingest_directory(str(root / "shop"))
    assert report.context == "quick-ingest" and report.project_type == "quick-ingest"
    assert report.project_id.startswith("shop-") and len(report.project_id) == len("shop-") + 6
    assert files_of(brain, report.project_id) == set(EXPECTED_FILES)
    assert report.skipped["skipped_secret"] >= 5 and report.skipped["skipped_binary"] == 1
    project = brain.project(report.project_id)
    assert project.auto_cleanup and project.node_count == report.node_count > 30

    again = brain.ingest_directory(str(root / "shop"))
    assert again.context == "already-ingested" and again.project_id == report.project_id
    assert again.files_unchanged == len(EXPECTED_FILES) and not again.files_added and not again.files_changed

    sub = brain.ingest_directory("shop/web")  # relative to the first root
    assert sub.context == "subdir-of-project" and sub.project_id == report.project_id
    assert sub.files_scanned == 3 and sub.files_unchanged == 3


def test_secrets_never_ingested(brain: Brain, root: Path) -> None:
    make_tree(root / "shop")
    report = brain.ingest_directory(str(root / "shop"))
    assert brain.store.text_search(SECRET_MARKER, None, None, 10) == []
    nodes, _ = brain.store.query_entities(EntityFilter(name=SECRET_MARKER.lower(), name_match="contains"))
    assert nodes == []
    assert not any(".env" in p or "deploy/" in p or "node_modules" in p for p in files_of(brain, report.project_id))
    with pytest.raises(ToolFailure) as failure:
        brain.ingest_code("-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----\n", "notes.txt")
    assert failure.value.code is ErrorCode.PERMISSION_DENIED
    with pytest.raises(ToolFailure):
        brain.ingest_code("API_KEY=1", ".env")


def test_incremental_reingest_touches_only_changed_files(brain: Brain, root: Path) -> None:
    tree = make_bulk_tree(root / "bulk", 60)
    first = brain.ingest_directory(str(tree))
    assert len(first.files_added) == 60
    before = {n.id: n for n in brain.store.query_entities(EntityFilter(project_ids=[first.project_id], limit=1000))[0]}

    (tree / "pkg0" / "mod_3.py").write_text('"""Changed."""\n\n\ndef brand_new():\n    return 1\n')
    (tree / "pkg0" / "mod_4.py").unlink()
    (tree / "pkg0" / "mod_new.py").write_text("def added():\n    return 2\n")
    same = tree / "pkg0" / "mod_5.py"
    same.write_text(same.read_text())  # same content, new mtime: re-hashed, not re-parsed
    os.utime(same, ns=(time.time_ns(), time.time_ns() + 10_000_000))

    second = brain.ingest_directory(str(tree))
    assert second.files_changed == ["pkg0/mod_3.py"]
    assert second.files_added == ["pkg0/mod_new.py"]
    assert second.files_removed == ["pkg0/mod_4.py"]
    assert second.files_unchanged == 58
    assert second.nodes_written == 2 + 2  # mod_3 (File + 1 scope) + mod_new (File + 1 scope)
    names = {
        n.name
        for n in brain.store.query_entities(EntityFilter(label="Scope", project_ids=[first.project_id], limit=1000))[0]
    }
    assert "brand_new" in names and "added" in names and "compute_4" not in names and "compute_3" not in names
    # nodes of untouched files are the very same rows
    after = {n.id: n for n in brain.store.query_entities(EntityFilter(path_prefix="pkg0/mod_7.py", limit=50))[0]}
    assert after and all(before[i].content == n.content for i, n in after.items())
    third = brain.ingest_directory(str(tree))
    assert third.files_unchanged == 60 and third.nodes_written == 0


def test_child_project_is_excluded_from_parent(brain: Brain, root: Path) -> None:
    make_tree(root / "mono")
    brain.ingest_directory(str(root / "mono"), project_name="Mono")
    assert "web/cart.ts" in files_of(brain, "mono")
    project, created = brain.create_project("Web App", str(root / "mono" / "web"))
    assert created and project.id == "web-app"
    assert not any(p.startswith("web/") for p in files_of(brain, "mono"))  # left the parent
    child = brain.ingest_directory(str(root / "mono" / "web"))
    assert child.project_id == "web-app" and child.context == "already-ingested"
    assert files_of(brain, "web-app") == {"cart.ts", "invoice.js", "server.js"}
    parent = brain.ingest_directory(str(root / "mono"))
    assert parent.excluded_projects == ["web"] and not any(p.startswith("web/") for p in files_of(brain, "mono"))


def test_forget_path_removes_exactly_that_path(brain: Brain, root: Path) -> None:
    make_tree(root / "shop")
    (root / "shop" / "web2").mkdir()
    (root / "shop" / "web2" / "keep.js").write_text("function keep() {}\n")
    pid = brain.ingest_directory(str(root / "shop")).project_id
    before = files_of(brain, pid)
    result = brain.forget_path(str(root / "shop" / "web"))
    assert result["projects_changed"] == [pid] and result["removed_nodes"] > 3
    assert files_of(brain, pid) == {p for p in before if not p.startswith("web/")}
    assert "web2/keep.js" in files_of(brain, pid)
    brain.forget_path(str(root / "shop" / "auth" / "tokens.py"))
    assert "auth/tokens.py" not in files_of(brain, pid) and "auth/passwords.py" in files_of(brain, pid)
    assert brain.store.text_search("issue_token", [pid], ["Scope"], 5) == [] or all(
        brain.store.get_nodes([h[0]])[0].path != "auth/tokens.py"
        for h in brain.store.text_search("issue_token", [pid], None, 5)
    )
    for refused in ("", "   ", "*", str(root), "/", "shop/*.py"):
        with pytest.raises(ToolFailure):
            brain.forget_path(refused)
    with pytest.raises(ToolFailure) as outside:
        brain.forget_path("/etc/passwd")
    assert outside.value.code is ErrorCode.PERMISSION_DENIED
    deleted = brain.forget_path(str(root / "shop"))
    assert deleted["projects_deleted"] == [pid] and brain.store.get_project(pid) is None


def test_paths_are_confined_to_roots(brain: Brain, tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    for path in (str(tmp_path / "outside"), "../outside", "/etc"):
        with pytest.raises(ToolFailure) as failure:
            brain.ingest_directory(path)
        assert failure.value.code is ErrorCode.PERMISSION_DENIED


def test_ingest_code_and_web_pages(brain: Brain) -> None:
    project, parsed = brain.ingest_code("def snippet_fn(x):\n    '''Doubles.'''\n    return x * 2\n", "lib/snip.py")
    assert project.id == "snippets" and [n.name for n in parsed.nodes if n.label == "Scope"] == ["snippet_fn"]
    project, parsed = brain.ingest_code("fn main() {}\n", "tool", language="rust")
    assert parsed.record.path == "tool.rs" and parsed.nodes[0].props["language"] == "rust"
    with pytest.raises(ToolFailure):
        brain.ingest_code("x", "../escape.py")
    page, _ = brain.ingest_web_page(
        "https://docs.example.com/a", "Page A", "All about widgets.", ["https://docs.example.com/b"]
    )
    brain.ingest_web_page("https://docs.example.com/b", "Page B", "More widgets " * 600, [])
    assert page.type == "web-crawl" and page.id == "web-docs-example-com"
    hits = brain.search("widgets", project_ids=None, types=["WebPage"], semantic=False, limit=5)["results"]
    assert {h["path"] for h in hits} == {"https://docs.example.com/a", "https://docs.example.com/b"}
    a = hits[0]["id"] if hits[0]["name"] == "Page A" else hits[1]["id"]
    _nodes, edges = brain.store.neighbors(a, ["LINKS_TO"], "out", 1, 10)
    assert [e.type for e in edges] == ["LINKS_TO"]
    assert brain.forget_path("https://docs.example.com/b")["removed_nodes"] >= 2


def test_cross_project_text_search_and_types(brain: Brain, root: Path) -> None:
    make_tree(root / "one")
    make_bulk_tree(root / "two", 5, words="password hashing")
    one = brain.ingest_directory(str(root / "one")).project_id
    two = brain.ingest_directory(str(root / "two")).project_id
    result = brain.search("password", project_ids=None, types=["function"], semantic=False, limit=20)
    projects = {r["project_id"] for r in result["results"]}
    assert projects == {one, two} and result["mode"] == "text"
    assert all(r["kind"] == "function" for r in result["results"])
    assert result["results"][0]["path"].startswith(str(root))
    only = brain.search("password", project_ids=[two], types=None, semantic=False, limit=5, text_match="mod_1")
    assert only["results"] and all(r["project_id"] == two and "mod_1" in r["path"] for r in only["results"])
    page2 = brain.search("password", project_ids=None, types=None, semantic=False, limit=3, offset=3)
    page1 = brain.search("password", project_ids=None, types=None, semantic=False, limit=3)
    assert not {r["id"] for r in page1["results"]} & {r["id"] for r in page2["results"]}


def test_a_start_node_is_found_by_id_or_by_name_and_ambiguity_lists_the_choices(brain: Brain, root: Path) -> None:
    """Issue #23: explore_relationships(node_id="password_option") only said the id must match a 24-hex pattern."""
    make_tree(root / "one")
    make_bulk_tree(root / "two", 3)
    one = brain.ingest_directory(str(root / "one")).project_id
    two = brain.ingest_directory(str(root / "two")).project_id
    login = brain.resolve_node("login")
    assert (login.name, login.label, login.path) == ("login", "Scope", "auth/passwords.py")
    assert brain.resolve_node(login.id) == login
    with pytest.raises(ToolFailure) as caught:
        brain.resolve_node("run")  # Thing0.run, Thing1.run, Thing2.run
    assert caught.value.code == ErrorCode.INVALID_INPUT
    runs, _ = brain.store.query_entities(EntityFilter(name="run", limit=10))
    assert len(runs) == 3 and all(f"id={n.id}" in caught.value.message for n in runs)
    assert caught.value.message.startswith("3 nodes are named 'run': Thing0.run ([Scope method] pkg0/mod_0.py:")
    assert "Pass one of these as node_id, e.g. 'Thing0.run'" in caught.value.message
    assert brain.resolve_node("Thing1.run").path == "pkg0/mod_1.py"
    assert brain.resolve_node("mod_1.py", two, "File").path == "pkg0/mod_1.py"
    with pytest.raises(ToolFailure) as caught:
        brain.resolve_node("password_option")
    assert caught.value.code == ErrorCode.NOT_FOUND and "query_entities" in caught.value.message
    with pytest.raises(ToolFailure) as caught:
        brain.resolve_node("passw", one)
    assert "Names that contain 'passw': [File] passwords.py at auth/passwords.py" in caught.value.message
    assert "[Scope] hash_password at auth/passwords.py:" in caught.value.message
    with pytest.raises(ToolFailure) as caught:
        brain.resolve_node("0" * 24)  # an id no node has, and no such name
    assert caught.value.code == ErrorCode.NOT_FOUND


def test_gc_removes_expired_quick_ingests_only(brain: Brain, root: Path) -> None:
    make_bulk_tree(root / "old", 3)
    make_bulk_tree(root / "kept", 3)
    old = brain.ingest_directory(str(root / "old")).project_id
    kept = brain.ingest_directory(str(root / "kept"), project_name="Kept").project_id
    long_ago = time.time() - 90 * 86400
    brain.store.update_project(old, last_accessed=long_ago)
    brain.store.update_project(kept, last_accessed=long_ago)
    assert brain.gc(dry_run=True)["expired_projects"] == [old] and brain.store.get_project(old) is not None
    result = brain.gc()
    assert result["expired_projects"] == [old] and result["removed_nodes"] > 0
    assert brain.store.get_project(old) is None and brain.store.get_project(kept) is not None


def test_sessions_load_switch_unload(brain: Brain, root: Path) -> None:
    make_bulk_tree(root / "a", 3)
    pid = brain.ingest_directory(str(root / "a")).project_id
    loaded = brain.load_project(pid)
    assert loaded["stale_files"] == 0 and brain.active == pid
    (root / "a" / "pkg0" / "mod_0.py").write_text("x = 1\n")
    assert brain.load_project(pid)["stale_files"] == 1
    brain.unload_project(pid)
    assert brain.active is None and pid not in brain.loaded
    brain.switch_project(pid)
    assert brain.active == pid
    with pytest.raises(ToolFailure) as failure:
        brain.switch_project("nope")
    assert failure.value.code is ErrorCode.NOT_FOUND
