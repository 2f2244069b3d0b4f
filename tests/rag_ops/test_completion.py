"""'Done' means searchable (issue #41): an ingest answers with exactly what is searchable now, an ingest run as an MCP
task completes when everything is searchable by meaning, and an ingest cut short (cancelled, its client gone, the
process stopped) is finished by the next start."""

from __future__ import annotations

import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_sections.servers.rag_ops.brain import Brain
from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore
from mcp_sections.shared.embeddings.embedder import default_model_runs
from tests.in_memory import section_in_memory
from tests.rag_ops.raw_server import RagServer
from tests.rag_ops.trees import make_bulk_tree
from tests.stdio import data_of
from tests.tasks_client import Tasks, call_for_task, get_task

HAS_MODEL = default_model_runs()
needs_model = pytest.mark.skipif(not HAS_MODEL, reason="needs the rag extra: pip install 'mcp-sections[rag]'")


class Cut(Exception):
    pass


def test_an_interrupted_ingest_is_marked_and_the_next_start_finishes_it(tmp_path: Path) -> None:
    root = make_bulk_tree(tmp_path / "roots" / "bulk", 300)
    store = tmp_path / "data" / "brain.sqlite3"
    brain = Brain(SQLiteBrainStore(store), [root.parent], background_embeddings=False)
    seen = []

    def cut(done: int, total: int, message: str) -> None:
        seen.append(done)
        if done >= 100:
            raise Cut  # what a cancelled call's progress callback raises

    with pytest.raises(Cut):
        brain.ingest_tree(brain.create_project("bulk", str(root))[0], "", "new-project", progress=cut)
    assert brain.store.get_project("bulk").status == "interrupted"
    assert brain.searchable("bulk").ingest == "interrupted" and not brain.searchable("bulk").complete
    assert "resumes at the next start" in brain.searchable("bulk").message()
    brain.close()

    again = Brain(SQLiteBrainStore(store), [root.parent], background_embeddings=False)
    try:
        assert [p.id for p in again.interrupted()] == ["bulk"]
        assert again.resume_interrupted() == ["bulk"]
        assert again.store.get_project("bulk").status == "ready" and again.interrupted() == []
        assert len(again.store.file_records("bulk")) == 300
        searchable = again.searchable("bulk")
        assert searchable.ingest == "complete" and searchable.meaning == "disabled" and searchable.complete
    finally:
        again.close()


def test_a_search_answers_from_the_callers_project_and_says_how_to_widen(tmp_path: Path) -> None:
    roots = tmp_path / "roots"
    for name in ("alpha", "beta"):
        make_bulk_tree(roots / name, 3, words="gardening")
    brain = Brain(SQLiteBrainStore(tmp_path / "brain.sqlite3"), [roots], background_embeddings=False)
    try:
        for name in ("alpha", "beta"):
            brain.ingest_directory(str(roots / name), name)
        mine = brain.scope_of_search(None, roots=[str(roots / "beta" / "pkg0")])
        assert mine.project_ids == ["beta"] and "all_projects=true" in mine.note
        found = brain.search("gardening value", project_ids=mine.project_ids, types=None, semantic=False)
        assert found["results"] and {r["project_id"] for r in found["results"]} == {"beta"}
        assert brain.scope_of_search(None, all_projects=True).project_ids is None  # one argument away
        assert brain.scope_of_search(["alpha"]).project_ids == ["alpha"]
        # a root above both projects: both of them
        assert brain.scope_of_search(None, roots=[str(roots)]).project_ids == ["alpha", "beta"]
        brain.switch_project("alpha")  # the project named by context comes first
        assert brain.scope_of_search(None, roots=[str(roots / "beta")]).project_ids == ["alpha"]
    finally:
        brain.close()


@pytest.mark.anyio
async def test_brain_search_without_projects_stays_in_the_active_project(tmp_path: Path) -> None:
    roots = tmp_path / "roots"
    for name in ("alpha", "beta"):
        make_bulk_tree(roots / name, 3, words="gardening")
    env = {"MCP_SECTIONS_RAG_OPS_EMBEDDINGS": "0"}
    async with section_in_memory("rag_ops", "--root", str(roots), env=env) as client:
        for name in ("beta", "alpha"):  # setup_project makes the last one active
            data_of(await client.call_tool("setup_project", {"path": str(roots / name)}))
        found = data_of(await client.call_tool("brain_search", {"query": "gardening value"}))
        assert found["searched_projects"] == ["alpha"] and "all_projects=true" in found["scope"]
        assert {r["project_id"] for r in found["results"]} == {"alpha"}
        everything = data_of(await client.call_tool("brain_search", {"query": "gardening value", "all_projects": True}))
        assert {r["project_id"] for r in everything["results"]} == {"alpha", "beta"}
        listed = data_of(await client.call_tool("list_projects", {}))
        assert all(p["searchable"]["meaning"] == "disabled" and p["searchable"]["complete"] for p in listed["projects"])


@needs_model
@pytest.mark.slow  # the real model embeds 600 texts
@pytest.mark.anyio
async def test_an_ingest_task_completes_when_everything_is_searchable_by_meaning(tmp_path: Path) -> None:
    root = make_bulk_tree(tmp_path / "roots" / "bulk", 300, words="orchard")
    async with section_in_memory("rag_ops", "--root", str(root.parent), extensions=[Tasks()]) as client:
        created = await call_for_task(client, "setup_project", {"path": str(root)})
        task_id = getattr(created, "task_id", None)
        assert task_id is not None, f"the call did not run as a task: {created}"
        messages = []
        while True:
            task = await get_task(client.session, task_id)
            messages.append(task.status_message)
            if task.status in ("completed", "failed", "cancelled"):
                break
            await anyio.sleep(0.1)
        assert task.status == "completed", task.error
        setup = task.result["structuredContent"] if task.result else {}
        searchable = setup["ingest"]["searchable"]
        assert searchable["complete"] is True and searchable["pending"] == 0 and searchable["embedded"] == 600
        assert any(m and "searchable by text; embedding" in m for m in messages), messages  # tasks/get says it
        listed = data_of(await client.call_tool("list_projects", {}))
        assert listed["projects"][0]["searchable"]["complete"] is True


@needs_model
@pytest.mark.anyio
async def test_a_plain_ingest_says_exactly_what_is_searchable_now(tmp_path: Path) -> None:
    root = make_bulk_tree(tmp_path / "roots" / "bulk", 200, words="meadow")
    async with section_in_memory("rag_ops", "--root", str(root.parent)) as client:
        report = data_of(await client.call_tool("ingest_directory", {"path": str(root), "embed_seconds": 0}))
        searchable = report["searchable"]
        assert searchable["ingest"] == "complete" and searchable["embeddable"] == 400
        assert (
            searchable["embedded"] + searchable["pending"] == 400
            and report["embeddings_pending"] == searchable["pending"]
        )
        if searchable["pending"]:  # the background worker may already have done some
            assert searchable["meaning"] == "partial" and not searchable["complete"]
            assert f"text only for {searchable['pending']:,} of 400 nodes" in searchable["message"]


def _progressed(message: dict[str, Any], files: int) -> bool:
    return message.get("method") == "notifications/progress" and message["params"]["progress"] >= files


@needs_model
@pytest.mark.slow  # two servers, the real model embeds 1,600 texts
def test_a_client_that_disconnects_mid_ingest_finds_it_finished_after_a_restart(
    tmp_path: Path, shared_cache_dir: Path
) -> None:
    files = 800
    roots = tmp_path / "roots"
    make_bulk_tree(roots / "bulk", files, words="vineyard")
    data = tmp_path / "data"
    first = RagServer(roots, data, shared_cache_dir, tmp_path / "first.log")
    try:
        first.start_session()
        arguments = {"name": "setup_project", "arguments": {"path": str(roots / "bulk")}, "_meta": {"progressToken": 7}}
        call = first.start("tools/call", arguments)
        progress = first.read(lambda m: m.get("id") == call or _progressed(m, 100))
        assert progress.get("id") != call, "the ingest ended before the client could leave"
        assert first.process.stdin is not None
        first.process.stdin.close()  # the client is gone, and its server stopped at once (SIGTERM) mid-parse
        first.process.send_signal(signal.SIGTERM)
        first.process.wait(timeout=150)
    finally:
        if first.process.poll() is None:
            first.process.kill()
            first.process.wait()
    with sqlite3.connect(data / "brain.sqlite3") as db:
        assert db.execute("SELECT status FROM projects").fetchone()[0] == "ingesting"
        assert db.execute("SELECT count(*) FROM files").fetchone()[0] < files

    second = RagServer(roots, data, shared_cache_dir, tmp_path / "second.log")
    try:
        second.start_session()
        deadline = time.monotonic() + 600
        state: dict[str, Any] = {}
        while time.monotonic() < deadline:
            answer = second.request("tools/call", {"name": "list_projects", "arguments": {}})
            [project] = answer["result"]["structuredContent"]["projects"]
            state = project["searchable"]
            if state["complete"]:
                break
            time.sleep(1)
        assert state["complete"] is True, state
        assert state["ingest"] == "complete" and state["embedded"] == files * 2 and state["pending"] == 0
        assert project["status"] == "ready"
    finally:
        assert second.process.stdin is not None
        second.process.stdin.close()
        second.process.wait(timeout=150)


def test_the_status_page_summary_says_what_is_searchable(tmp_path: Path) -> None:
    from mcp_sections.shared.brain.summary import brain_summary

    root = make_bulk_tree(tmp_path / "roots" / "bulk", 20)
    brain = Brain(SQLiteBrainStore(tmp_path / "data" / "brain.sqlite3"), [root.parent], background_embeddings=False)
    try:
        brain.ingest_directory(str(root), "bulk")
    finally:
        brain.close()
    [project] = brain_summary(tmp_path / "data").projects
    assert project.embeddable == 40 and project.pending_embeddings == 40  # no model here: nothing embedded
    assert project.searchable == "text only for 40 of 40 nodes (0 embedded)"
