"""How a caller names what the brain holds, through the rag_ops tools in process (the in-memory client): a node by
its qualified name (Class.method, module.function, path::Class.method), and a project by the name its manifest
declares — an outside tester's findings on sqlparse 0.6.1 (a hatch project whose version is dynamic)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.in_memory import section_in_memory
from tests.rag_ops.trees import sqlparse_tree
from tests.stdio import call, data_of, fail

pytestmark = pytest.mark.anyio

ENV = {"MCP_SECTIONS_RAG_OPS_EMBEDDINGS": "0"}


async def test_a_node_is_found_by_its_qualified_name_and_an_ambiguous_name_lists_them(tmp_path: Path) -> None:
    """`StatementSplitter.process` gave NOT_FOUND (explore_relationships) and [] (query_entities), and `process` said
    "narrow with project or label", which cannot tell 13 methods of one project and label apart."""
    project = sqlparse_tree(tmp_path / "roots")
    async with section_in_memory("rag_ops", "--root", str(project.parent), env=ENV) as client:
        await call(client, "setup_project", path=str(project))
        explored = await call(client, "explore_relationships", node_id="StatementSplitter.process", direction="in")
        start = explored["start"]
        assert (start["relative_path"], start["properties"]["qualname"]) == (
            "sqlparse/engine/statement_splitter.py",
            "StatementSplitter.process",
        )
        assert "StatementSplitter" in {n["name"] for n in explored["nodes"]}  # the class DEFINES it
        for name in (
            "StatementSplitter.process",
            "sqlparse.engine.statement_splitter.StatementSplitter.process",  # module-qualified
            "statement_splitter.StatementSplitter.process",  # the module's tail
            "sqlparse/engine/statement_splitter.py::StatementSplitter.process",  # path-qualified
            "statement_splitter.py:StatementSplitter.process",
        ):
            found = await call(client, "query_entities", name=name)
            assert [e["id"] for e in found["entities"]] == [start["id"]] and found["total_count"] == 1, name
        module_level = await call(client, "query_entities", name="sqlparse.filters.filter3.process")
        assert [e["properties"]["qualname"] for e in module_level["entities"]] == ["process"]
        assert module_level["entities"][0]["relative_path"] == "sqlparse/filters/filter3.py"
        file = await call(client, "query_entities", name="engine/statement_splitter.py")
        assert [e["label"] for e in file["entities"]] == ["File"]
        assert (await call(client, "query_entities", name="Nowhere.process"))["entities"] == []

        message = await fail(
            client, "explore_relationships", "INVALID_INPUT", node_id="process", project="sqlparse", label="Scope"
        )
        assert message.startswith("13 nodes in project 'sqlparse' with label Scope are named 'process': ")
        assert "StatementSplitter.process ([Scope method] sqlparse/engine/statement_splitter.py:10" in message
        for n in range(6):
            assert f"Filter{n}.process ([Scope method] sqlparse/filters/filter{n}.py:5" in message
            assert (
                f"sqlparse/filters/filter{n}.py::process ([Scope function] sqlparse/filters/filter{n}.py:9" in message
            )
        assert "narrow with project or label" not in message and "Pass one of these as node_id" in message
        # what the message lists is what a caller passes
        chosen = await call(client, "explore_relationships", node_id="sqlparse/filters/filter2.py::process")
        assert chosen["start"]["relative_path"] == "sqlparse/filters/filter2.py"
        assert (await call(client, "explore_relationships", node_id="Filter2.process"))["start"]["start_line"] == 5

        message = await fail(client, "explore_relationships", "NOT_FOUND", node_id="Splitter.proces")
        assert "Names that contain 'proces'" in message and "StatementSplitter.process at" in message


async def test_a_new_project_is_named_after_its_manifest(tmp_path: Path) -> None:
    """setup_project named the project `proj` (its directory) while get_project_info said `sqlparse` (its
    pyproject), so brain_search projects=["sqlparse"] gave NOT_FOUND."""
    roots = tmp_path / "roots"
    project = sqlparse_tree(roots)
    async with section_in_memory("rag_ops", "--root", str(roots), env=ENV) as client:
        setup = await call(client, "setup_project", path=str(project))
        assert (setup["project"]["id"], setup["project"]["name"]) == ("sqlparse", "sqlparse")
        found = await call(client, "brain_search", query="statement splitter", projects=["sqlparse"], semantic=False)
        assert found["searched_projects"] == ["sqlparse"] and found["results"]


async def test_a_project_named_before_keeps_its_name_and_answers_under_its_manifest_name_too(tmp_path: Path) -> None:
    old = sqlparse_tree(tmp_path / "old")  # a brain whose project was named after its directory before
    async with section_in_memory("rag_ops", "--root", str(old.parent), env=ENV) as client:
        await call(client, "create_project", name="proj", path=str(old))
        again = await call(client, "setup_project", path=str(old))  # refreshed: it keeps its id and its name
        assert (again["project"]["id"], again["project"]["name"], again["created"]) == ("proj", "proj", False)
        for name in ("proj", "sqlparse"):  # its old name, and the one get_project_info reports
            found = await call(client, "brain_search", query="statement splitter", projects=[name], semantic=False)
            assert found["searched_projects"] == ["proj"] and found["results"], name
        assert (await call(client, "get_schema", project="sqlparse"))["labels"]["File"] == 11
        message = await fail(client, "brain_search", "NOT_FOUND", query="x", projects=["sqlglot"])
        assert "known projects: proj (" + str(old) + ")" in message
        assert f"proj holds the root {old.parent}" not in message  # the root is the parent: no project holds it
    async with section_in_memory("rag_ops", "--root", str(old), env=ENV) as client:
        message = await fail(client, "semantic_search", "NOT_FOUND", query="x", project="sqlglot")
        assert f"proj holds the root {old}" in message and "list_projects" in message


async def test_quick_ingest_is_named_after_its_manifest(tmp_path: Path) -> None:
    project = sqlparse_tree(tmp_path / "roots")
    async with section_in_memory("rag_ops", "--root", str(project.parent), env=ENV) as client:
        report = data_of(await client.call_tool("ingest_directory", {"path": str(project)}))
        assert report["project_type"] == "quick-ingest" and report["project_id"].startswith("proj-")
        listed = await call(client, "list_projects")
        assert [p["name"] for p in listed["projects"]] == ["sqlparse"]
        found = await call(client, "query_entities", name="StatementSplitter", project="sqlparse")
        assert found["total_count"] == 1 and found["entities"][0]["project_id"] == report["project_id"]
