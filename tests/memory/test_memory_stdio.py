"""The memory section over stdio with the real all-MiniLM-L6-v2 model (one server for the module, plus one more).

Each server that loads the model costs ~12 s here, so every test shares `client`; each test works in its
own workflow so that scopes keep them apart.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_sections.shared.embeddings.embedder import default_model_runs
from tests.stdio import call, check_tools_snapshot, error_of, fail, section_client

# Checked without importing the libraries: the model runs in the server processes.
if not default_model_runs():
    pytest.skip("the default embedding model cannot run: pip install 'mcp-sections[memory]'", allow_module_level=True)

TOOLS = {
    "memory_activate_workflow",
    "memory_activate_general",
    "memory_add",
    "memory_get",
    "memory_list",
    "memory_search",
    "memory_update",
    "memory_delete",
    "memory_clear_by_type",
}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("memory-stdio") / "data"


@pytest.fixture(scope="module")
def server_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    config = tmp_path_factory.mktemp("memory-config") / "config.toml"
    config.write_text("", encoding="utf-8")
    return {"MCP_SECTIONS_CONFIG": str(config), "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
async def started(data_dir: Path, server_env: dict[str, str]) -> AsyncIterator[tuple[Client, dict[str, Any]]]:
    """The server, plus a memory added right after tools/list, while the model is still loading."""
    async with section_client("memory", "--data-dir", str(data_dir), env=server_env) as connected:
        tools = (await connected.list_tools()).tools  # starts the background model load
        early = await call(
            connected, "memory_add", type="user_pref", content="Always answer in British English spelling."
        )
        yield connected, {"tools": tools, "early": early}


@pytest.fixture
def client(started: tuple[Client, dict[str, Any]]) -> Client:
    return started[0]


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


@pytest.mark.anyio
async def test_tools_list_snapshot_and_annotations(started: tuple[Client, dict[str, Any]]) -> None:
    tools = started[1]["tools"]
    check_tools_snapshot("memory", tools)
    assert {t.name for t in tools} == TOOLS
    hints = {t.name: t.annotations for t in tools}
    for name in ("memory_get", "memory_list", "memory_search"):
        assert hints[name].read_only_hint and not hints[name].destructive_hint
    for name in ("memory_update", "memory_delete", "memory_clear_by_type"):
        assert not hints[name].read_only_hint and hints[name].destructive_hint
    assert not hints["memory_add"].idempotent_hint and not hints["memory_add"].destructive_hint
    assert all(t.annotations.open_world_hint is False for t in tools)
    assert all(t.output_schema for t in tools)


@pytest.mark.anyio
async def test_memory_added_while_loading_gets_embedded(started: tuple[Client, dict[str, Any]]) -> None:
    client, early = started[0], started[1]["early"]
    assert early["stored"] and early["embedding_generated"] is False, early
    assert "embedded in the background" in early["note"]
    found = await call(client, "memory_search", query="UK English spelling", threshold=0.3)  # waits for the model
    assert found["search_type"] == "vector"
    assert [r["memory"]["id"] for r in found["results"]] == [early["memory_id"]]
    assert (await call(client, "memory_get", memory_id=early["memory_id"]))["memory"]["embedded"] is True


@pytest.mark.anyio
async def test_semantic_search_finds_paraphrases_that_share_no_words(client: Client) -> None:
    wf = {"workflow_id": "semantic"}
    docs = {
        "deploy": "Deployments to production happen every Friday afternoon",
        "style": "The user prefers short answers without emojis",
        "db": "Invoices are stored in PostgreSQL",
    }
    ids = {}
    for key, content in docs.items():
        added = await call(client, "memory_add", type="knowledge", content=content, **wf)
        assert added["stored"] and added["embedding_generated"] is True
        ids[key] = added["memory_id"]
    for query, key in (("When do we ship releases live?", "deploy"), ("keep replies brief", "style")):
        assert not words(query) & words(docs[key]), "the query must share no word with the memory"
        found = await call(client, "memory_search", query=query, threshold=0.3, scope="workflow", **wf)
        assert found["search_type"] == "vector"
        clearing = [r["memory"]["id"] for r in found["results"] if not r["below_threshold"]]
        assert clearing == [ids[key]] and found["results"][0]["memory"]["id"] == ids[key], found
        assert 0.3 <= found["results"][0]["similarity"] < 0.7
        assert all(r["below_threshold"] for r in found["results"][1:])  # the nearest others, marked

    # by default results are judged by their calibrated confidence, each on its own (standing out of a store of
    # three is no evidence): the paraphrase comes first, worth reading; the others are unrelated
    default = await call(client, "memory_search", query="When do we ship releases live?", scope="workflow", **wf)
    first = default["results"][0]
    assert first["memory"]["id"] == ids["deploy"] and first["verdict"] in ("match", "possible"), default
    assert [r["verdict"] for r in default["results"][1:]] == ["unrelated", "unrelated"], default
    assert default["threshold"] == pytest.approx(0.3635, abs=1e-3)
    assert all(r["below_threshold"] == (r["confidence"] < 0.5) for r in default["results"])
    # a strict threshold keeps nothing above it: the nearest are still offered, marked, and a note says so
    strict = await call(client, "memory_search", query="When do we ship releases live?", threshold=0.9, **wf)
    assert strict["count"] == 3 and all(r["below_threshold"] for r in strict["results"])
    assert strict["results"][0]["memory"]["id"] == ids["deploy"] and "no memory reached" in strict["notes"][0]
    loose = await call(client, "memory_search", query="When do we ship releases live?", threshold=0.0, **wf)
    sims = [r["similarity"] for r in loose["results"]]
    assert sims == sorted(sims, reverse=True) and loose["results"][0]["memory"]["id"] == ids["deploy"]
    limited = await call(client, "memory_search", query="database", threshold=0.0, limit=1, **wf)
    assert limited["count"] == 1 and limited["results"][0]["memory"]["id"] == ids["db"]
    typed = await call(client, "memory_search", query="database", threshold=0.0, type_filter="decision", **wf)
    assert typed["count"] == 0


@pytest.mark.anyio
async def test_hybrid_search_adds_keyword_matches(client: Client) -> None:
    wf = {"workflow_id": "hybrid"}
    bug = await call(client, "memory_add", type="knowledge", content="ZX-4471 came from a race in the cache", **wf)
    await call(client, "memory_add", type="knowledge", content="Invoices are stored in PostgreSQL", **wf)
    vector = await call(client, "memory_search", query="ticket ZX-4471", **wf)
    assert vector["search_type"] == "vector" and vector["results"][0]["memory"]["id"] == bug["memory_id"]
    hybrid = await call(client, "memory_search", query="ticket ZX-4471", mode="hybrid", **wf)
    assert hybrid["search_type"] == "hybrid"
    top = hybrid["results"][0]
    assert top["memory"]["id"] == bug["memory_id"] and "text" in top["matched_by"]
    assert top["similarity"] is not None and top["score"] > 0


@pytest.mark.anyio
async def test_scopes_are_isolated(client: Client) -> None:
    alpha = await call(
        client, "memory_add", type="context", content="Alpha uses Rust for the parser", workflow_id="alpha"
    )
    beta = await call(client, "memory_add", type="context", content="Beta uses Go for the parser", workflow_id="beta")
    general = await call(client, "memory_add", type="context", content="The parser team meets on Mondays")
    assert general["scope"] == "general" and alpha["scope"] == "workflow"

    found = await call(client, "memory_search", query="parser language", threshold=0.0, workflow_id="alpha")
    ids = {r["memory"]["id"] for r in found["results"]}
    assert alpha["memory_id"] in ids and general["memory_id"] in ids and beta["memory_id"] not in ids
    only = await call(client, "memory_list", scope="workflow", workflow_id="alpha")
    assert [m["id"] for m in only["memories"]] == [alpha["memory_id"]]
    gen = await call(client, "memory_list", scope="general", workflow_id="alpha", limit=100)
    assert general["memory_id"] in {m["id"] for m in gen["memories"]}
    assert not {m["workflow_id"] for m in gen["memories"]} - {None}

    for tool in ("memory_get", "memory_delete"):
        await fail(client, tool, "NOT_FOUND", memory_id=beta["memory_id"], workflow_id="alpha")
    await fail(client, "memory_update", "NOT_FOUND", memory_id=beta["memory_id"], tags=["x"], workflow_id="alpha")
    await fail(client, "memory_get", "NOT_FOUND", memory_id=beta["memory_id"])  # general mode sees no workflow's
    assert (await call(client, "memory_get", memory_id=beta["memory_id"], workflow_id="beta"))["memory"]["id"]
    message = await fail(client, "memory_list", "INVALID_INPUT", scope="workflow")
    assert "workflow_id" in message

    # activation (per process) sets the default; an explicit workflow_id wins for that call
    activated = await call(client, "memory_activate_workflow", workflow_id="beta")
    assert activated["scope"] == "workflow" and activated["memory_count"] >= 2
    try:
        added = await call(client, "memory_add", type="decision", content="Beta will switch to Zig next year")
        assert added["workflow_id"] == "beta"
        listed = await call(client, "memory_list", scope="workflow")
        assert {m["id"] for m in listed["memories"]} == {beta["memory_id"], added["memory_id"]}
        assert (await call(client, "memory_get", memory_id=alpha["memory_id"], workflow_id="alpha"))["memory"]
        await fail(client, "memory_get", "NOT_FOUND", memory_id=alpha["memory_id"])
        cleared = await call(client, "memory_clear_by_type", type="context")
        assert cleared["count"] == 1 and cleared["workflow_id"] == "beta"
    finally:
        general_mode = await call(client, "memory_activate_general")
    assert general_mode["scope"] == "general"
    assert (await call(client, "memory_get", memory_id=alpha["memory_id"], workflow_id="alpha"))["memory"]
    assert (await call(client, "memory_get", memory_id=general["memory_id"]))["memory"]["scope"] == "general"
    await fail(client, "memory_get", "NOT_FOUND", memory_id=beta["memory_id"], workflow_id="beta")  # cleared


@pytest.mark.anyio
async def test_near_duplicates_are_not_stored_twice(client: Client) -> None:
    wf = {"workflow_id": "dupes"}
    content = "The team chose PostgreSQL for billing because of strong transactional guarantees"
    first = await call(client, "memory_add", type="decision", content=content, **wf)
    same = await call(client, "memory_add", type="decision", content=content, **wf)
    assert not same["stored"] and same["duplicate_of"] == first["memory_id"] == same["memory_id"]
    near = await call(client, "memory_add", type="decision", content=content + "!", **wf)
    assert near["duplicate_of"] == first["memory_id"] and near["duplicate_similarity"] >= 0.97
    assert "force=true" in near["message"]
    forced = await call(client, "memory_add", type="decision", content=content + "!", force=True, **wf)
    assert forced["stored"] and forced["duplicate_of"] is None
    other = await call(client, "memory_add", type="decision", content=content, workflow_id="dupes-2")
    assert other["stored"], "another workflow is another scope"
    different = await call(client, "memory_add", type="decision", content="The team chose MySQL for billing", **wf)
    assert different["stored"]
    assert (await call(client, "memory_list", **wf, scope="workflow"))["total"] == 3


@pytest.mark.anyio
async def test_update_re_embeds_and_list_filters(client: Client) -> None:
    wf = {"workflow_id": "updates"}
    added = await call(
        client,
        "memory_add",
        type="knowledge",
        content="The office coffee machine is broken",
        tags=["Office", "office", " facilities "],
        metadata={"source": "chat"},
        **wf,
    )
    memory = (await call(client, "memory_get", memory_id=added["memory_id"], **wf))["memory"]
    assert memory["tags"] == ["office", "facilities"] and memory["metadata"] == {"source": "chat"}
    updated = await call(
        client,
        "memory_update",
        memory_id=added["memory_id"],
        content="Quarterly revenue grew by twelve percent",
        metadata={"source": "report"},
        **wf,
    )
    assert updated["updated_fields"] == ["content", "metadata"] and updated["embedding_generated"] is True
    assert updated["memory"]["tags"] == ["office", "facilities"]
    by_new = await call(client, "memory_search", query="sales increased this quarter", threshold=0.4, **wf)
    assert [r["memory"]["id"] for r in clearing(by_new)] == [added["memory_id"]]
    by_old = await call(client, "memory_search", query="espresso maker out of order", threshold=0.4, **wf)
    assert not clearing(by_old)
    tags_only = await call(client, "memory_update", memory_id=added["memory_id"], tags=["finance"], **wf)
    assert tags_only["updated_fields"] == ["tags"] and tags_only["embedding_generated"] is None
    await fail(client, "memory_update", "INVALID_INPUT", memory_id=added["memory_id"], **wf)

    long_text = "word " * 1000
    big = await call(client, "memory_add", type="context", content=long_text, tags=["finance", "big"], **wf)
    listed = await call(client, "memory_list", tags=["FINANCE"], **wf)
    assert listed["total"] == 2 and [m["id"] for m in listed["memories"]] == [big["memory_id"], added["memory_id"]]
    preview = listed["memories"][0]
    assert preview["content_truncated"] and preview["content_length"] == len(long_text)
    full = (await call(client, "memory_get", memory_id=big["memory_id"], **wf))["memory"]
    assert full["content"] == long_text and not full["content_truncated"]
    assert (await call(client, "memory_list", tags=["finance", "big"], **wf))["total"] == 1
    assert (await call(client, "memory_list", type_filter="knowledge", **wf))["total"] == 1
    assert (await call(client, "memory_list", limit=1, **wf))["count"] == 1

    deleted = await call(client, "memory_delete", memory_id=big["memory_id"], **wf)
    assert deleted["memory_id"] == big["memory_id"]
    await fail(client, "memory_delete", "NOT_FOUND", memory_id=big["memory_id"], **wf)
    await fail(client, "memory_get", "NOT_FOUND", memory_id=big["memory_id"], **wf)


@pytest.mark.anyio
async def test_limits_and_invalid_arguments(client: Client) -> None:
    wf = {"workflow_id": "limits"}
    at_limit = await call(client, "memory_add", type="context", content="x" * 50_000, **wf)
    assert at_limit["stored"]
    bad_calls: list[tuple[str, dict[str, Any]]] = [
        ("memory_add", {"type": "context", "content": "x" * 50_001}),
        ("memory_add", {"type": "context", "content": "   "}),
        ("memory_add", {"type": "context", "content": ""}),
        ("memory_add", {"type": "opinion", "content": "not a valid type"}),
        ("memory_add", {"type": "context", "content": "ok", "tags": [f"t{n}" for n in range(21)]}),
        ("memory_add", {"type": "context", "content": "ok", "tags": ["x" * 65]}),
        ("memory_add", {"type": "context", "content": "ok", "metadata": {"blob": "y" * 20_000}}),
        ("memory_add", {"type": "context", "content": "ok", "priority": 1}),
        ("memory_add", {"type": "context", "content": "ok", "workflow_id": "bad id!"}),
        ("memory_list", {"limit": 0}),
        ("memory_list", {"limit": 101}),
        ("memory_list", {"scope": "everything"}),
        ("memory_search", {"query": "q", "limit": 101}),
        ("memory_search", {"query": "q", "threshold": 1.5}),
        ("memory_search", {"query": "q", "threshold": -0.1}),
        ("memory_search", {"query": "q", "mode": "fuzzy"}),
        ("memory_search", {"query": "  "}),
        ("memory_search", {"query": "q" * 2001}),
        ("memory_get", {"memory_id": "mem_123"}),
        ("memory_get", {}),
        ("memory_delete", {"memory_id": "../../etc/passwd"}),
        ("memory_clear_by_type", {"type": "all"}),
        ("memory_activate_workflow", {}),
        ("memory_activate_general", {"workflow_id": "x"}),
    ]
    for tool, arguments in bad_calls:
        args = {**wf, **arguments} if tool not in ("memory_activate_workflow", "memory_activate_general") else arguments
        await fail(client, tool, "INVALID_INPUT", **args)
    await fail(client, "memory_get", "NOT_FOUND", memory_id="mem_" + "0" * 32, **wf)
    big_list = await call(client, "memory_list", limit=100, scope="workflow", **wf)
    assert big_list["count"] == 1
    code, message = error_of(await client.call_tool("memory_frobnicate", {}))
    assert code == "NOT_FOUND" and "memory_search" in message


@pytest.mark.anyio
async def test_second_process_sees_everything_and_writes_concurrently(
    client: Client, data_dir: Path, server_env: dict[str, str]
) -> None:
    """A second server on the same data dir: persisted vectors, cross-process cache refresh, parallel writes."""
    before = await call(client, "memory_list", workflow_id="semantic", limit=100)
    async with section_client("memory", "--data-dir", str(data_dir), env=server_env) as other:
        assert await call(other, "memory_list", workflow_id="semantic", limit=100) == before
        assert all(m["embedded"] for m in before["memories"]), "vectors come from SQLite, not re-embedded"
        found = await call(other, "memory_search", query="keep replies brief", threshold=0.3, workflow_id="semantic")
        assert found["search_type"] == "vector" and len(clearing(found)) == 1

        per_client = 15
        results: list[dict[str, Any]] = []

        async def add(target: Client, label: str, n: int) -> None:
            content = f"Concurrent note {n} from {label}: reading list item number {n * 31 + len(label)}"
            arguments = {"type": "context", "content": content, "workflow_id": "both", "force": True}
            results.append(await call(target, "memory_add", **arguments))

        async with anyio.create_task_group() as group:
            for n in range(per_client):
                group.start_soon(add, client, "one", n)
                group.start_soon(add, other, "two", n)
        ids = {r["memory_id"] for r in results}  # every call succeeded: no "database is locked"
        assert len(ids) == 2 * per_client and all(r["stored"] and r["embedding_generated"] for r in results)
        for target in (client, other):
            listed = await call(target, "memory_list", workflow_id="both", scope="workflow", limit=100)
            assert {m["id"] for m in listed["memories"]} == ids

        fresh = await call(
            other, "memory_add", type="knowledge", content="Penguins huddle to stay warm", workflow_id="x"
        )
        seen = await call(client, "memory_search", query="birds keeping warm together", threshold=0.4, workflow_id="x")
        assert [r["memory"]["id"] for r in clearing(seen)] == [fresh["memory_id"]]
        await call(client, "memory_delete", memory_id=fresh["memory_id"], workflow_id="x")
        query = {"query": "birds keeping warm together", "threshold": 0.0, "scope": "workflow", "workflow_id": "x"}
        gone = await call(other, "memory_search", **query)
        assert gone["count"] == 0


def clearing(found: dict) -> list[dict]:
    """The results that cleared the threshold (the others are the nearest ones, offered and marked)."""
    return [r for r in found["results"] if not r["below_threshold"]]
