"""find_tools: the tools' example needs, the index (BM25 alone and hybrid, with the real model), the recall floor on
the dev needs, and the gateway's tool over stdio (no section started; third-party sections once they ran)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_sections.servers.gateway.need import read_need
from mcp_sections.servers.gateway.tool_search import (
    PARALLEL_FROM_TOKENS,
    ToolSearch,
    embed_texts,
    forward_passes,
    need_passes,
    query_texts,
    search_embedding,
    section_entries,
    summary,
)
from mcp_sections.servers.registry import BUILTIN_SECTIONS, load_section
from mcp_sections.shared.embeddings.embedder import default_model_runs
from mcp_sections.shared.framework.tools import MAX_EXAMPLE_LENGTH, MAX_EXAMPLES, READ_ONLY, ToolInput, ToolResult, tool
from tests.gateway.helpers import builtin_available, demo_section_table, write_config
from tests.in_memory import gateway_in_memory
from tests.processes import running_with
from tests.stdio import data_of, error_of

needs_model = pytest.mark.skipif(
    not default_model_runs(), reason="needs the memory extra: pip install 'mcp-sections[memory]'"
)
# Floors (recall@1, recall@3) held on the tuning needs, benchmarks/data/tool_needs_<split>.jsonl (measured 0.886 /
# 0.956 on dev, 0.776 / 0.925 on dev2, 0.891 / 0.971 on long_dev, hybrid: python -m benchmarks.bench_gateway)
FLOORS = {"dev": (0.85, 0.93), "dev2": (0.70, 0.88), "long_dev": (0.82, 0.93)}


# -- the examples -------------------------------------------------------------------------------------------------


def test_every_builtin_tool_declares_several_example_needs() -> None:
    for section_id in BUILTIN_SECTIONS:
        for spec in load_section(section_id).specs:
            assert 4 <= len(spec.examples) <= MAX_EXAMPLES, f"{spec.name}: {spec.examples}"
            assert len(set(spec.examples)) == len(spec.examples), spec.name


class _In(ToolInput):
    pass


class _Out(ToolResult):
    pass


def test_examples_are_bounded() -> None:
    def declare(examples: Any) -> None:
        @tool(name="demo_bounded", title="Bounded", annotations=READ_ONLY, examples=examples)
        def demo_bounded(params: _In) -> _Out:
            """A tool."""
            return _Out()

    declare(("read a file",))
    for bad in (("x",) * (MAX_EXAMPLES + 1), ("x" * (MAX_EXAMPLE_LENGTH + 1),), ("  ",), "read a file"):
        with pytest.raises(TypeError, match="example"):
            declare(bad)


def test_examples_stay_out_of_the_published_definitions() -> None:
    from mcp_sections.servers.pool.catalog import declaration_definitions
    from mcp_sections.shared.settings.config import Settings

    section = load_section("todo")
    published = json.dumps(declaration_definitions(section, Settings()))
    for spec in section.specs:
        assert all(example not in published for example in spec.examples)


# -- the index ----------------------------------------------------------------------------------------------------


def test_summaries() -> None:
    assert summary("Read a file. Then more.\n\nDetails.") == "Read a file."
    assert summary("One line\n\nsecond paragraph") == "One line"


def test_a_need_is_read_apart_from_the_material_it_carries() -> None:
    """Paths, URLs, quoted text, code, JSON, errors and ids become their kind; the request is what is asked."""
    assert read_need("rename utils.js to helpers.js").request == "rename file to file"
    assert read_need("read https://example.com/a.html, then docs/x.md").request == "read web page then file"
    assert read_need("index ~/code/app/ and src/lib").request == "index folder and folder"
    assert read_need("show task_abc123 and 'that text' from 2024").request == "show task and text from"
    assert read_need("how many m/s is 130 km/h").request == "how many m per s is km per h"
    need = read_need(
        "the build keeps failing with `EEXIST: file already exists, mkdir 'dist/.cache'` (since the upgrade, "
        "I think) — just delete the whole dist/.cache directory so it starts clean"
    )
    assert [clause.role for clause in need.clauses] == ["context", "aside", "aside", "request", "aside"]
    assert need.request == "just delete the whole folder directory"
    assert need.head == "delete the whole folder directory"
    assert ("error message", "`EEXIST: file already exists, mkdir 'dist/.cache'`") in need.material
    pasted = read_need(
        "create docs/adr/0007-use-postgres.md with this content:\n# Use Postgres\nWe run it: docker compose up"
    )
    assert pasted.request == "create file with this content:"
    assert [kind for kind, _ in pasted.material] == ["code", "file"]
    remember = read_need("remember this for all future sessions: the staging database is db.internal:5432")
    assert remember.request == "remember this for all future sessions text"
    data = read_need('call todo_list with the arguments {"workflow_id": "release-2.4"} and return its result unchanged')
    assert data.request == "call with the arguments data and return its result unchanged"
    told = read_need("open the page and tell me what happens to the other tasks when one raises")
    assert told.request == "open the page and tell me" and "other tasks" in told.context


def test_a_needs_texts_are_embedded_in_the_passes_that_pad_least() -> None:
    """A pass pads its texts to the longest and costs `PASS_COST_TOKENS` besides: texts of close lengths share one,
    a short head beside a long context gets its own (by token count, longest first)."""
    assert forward_passes([30, 28, 27]) == [[0, 1, 2]]
    assert forward_passes([15, 56, 40]) == [[1], [2], [0]]
    assert forward_passes([40, 38, 12]) == [[0, 1], [2]]
    assert forward_passes([12, 11]) == [[0, 1]]
    assert forward_passes([7]) == [[0]] and forward_passes([]) == []


def test_a_long_needs_passes_run_at_once_with_its_longest_text_alone() -> None:
    """Run at once, a long need takes about as long as its longest pass: the context goes alone, the request and the
    head share the other pass (or have one each, as `forward_passes` chooses for them). A short need (its longest text
    under `PARALLEL_FROM_TOKENS`) and an embedder running one pass at a time keep `forward_passes`."""
    assert need_passes([40, 38, 37], 2) == [[0], [1, 2]]
    assert need_passes([15, 56, 40], 2) == [[1], [2], [0]]
    assert need_passes([12, 11, 40], 2) == [[2], [0, 1]]
    assert need_passes([36, 35], 2) == [[0], [1]]
    assert need_passes([30, 28, 27], 2) == forward_passes([30, 28, 27]) == [[0, 1, 2]]
    assert need_passes([40, 38, 37], 1) == forward_passes([40, 38, 37])
    assert need_passes([7], 2) == [[0]] and need_passes([], 2) == []


def test_the_gateway_model_runs_on_every_core_up_to_four_two_passes_at_once() -> None:
    cores = max(1, min(4, os.cpu_count() or 1))
    settings = search_embedding()
    assert (settings.embedding_threads, settings.embedding_parallel_passes) == (cores, 2 if cores >= 2 else 1)


@needs_model
def test_texts_embedded_in_several_passes_get_the_vectors_of_one(shared_cache_dir: Path) -> None:
    """Cutting a need's texts into passes changes no vector (padding is masked out), so no ranking changes."""
    import numpy as np

    from mcp_sections.shared.embeddings import EmbeddingSettings, get_embedder

    embedder = get_embedder(EmbeddingSettings(), shared_cache_dir)
    assert embedder.load()
    need = (
        "the article at https://example.org/physics/work says the work is the integral of F(x) = 5x^2 + 2 from x=0 "
        "to x=4 — compute that definite integral for me"
    )
    texts = list(dict.fromkeys(query_texts(need)))
    counts = embedder.token_counts(texts)
    assert counts is not None and len(forward_passes(counts)) > 1  # this need's texts do take several passes
    assert np.allclose(embed_texts(embedder, texts), embedder.encode(texts), rtol=0, atol=1e-6)
    # the gateway's way: a long need's passes at once
    at_once = get_embedder(EmbeddingSettings(embedding_threads=2, embedding_parallel_passes=2), shared_cache_dir)
    assert at_once.load() and at_once is not embedder
    long_need = (
        "after upgrading, the nightly build of our reporting service fails with `AttributeError: module 'numpy' has "
        "no attribute 'float'` raised from an old charting dependency; search online for which numpy release removed "
        "it and what the usual fix is, then tell me what to pin in requirements.txt so the build goes green again"
    )
    long_texts = list(dict.fromkeys(query_texts(long_need)))
    long_counts = at_once.token_counts(long_texts)
    assert long_counts is not None and max(long_counts) >= PARALLEL_FROM_TOKENS  # its passes do run at once
    for some in (texts, long_texts):
        assert np.allclose(embed_texts(at_once, some), embedder.encode(some), rtol=0, atol=1e-6)
    # a batch's chunks at once too (the index's passages)
    passages = [f"passage {n} about {'tools ' * (n % 7)}" for n in range(70)]
    assert np.allclose(at_once.encode(passages), embedder.encode(passages), rtol=0, atol=1e-6)


def test_entries_index_names_parameters_and_examples() -> None:
    definitions = [
        {
            "name": "demo_sum",
            "title": "Sum numbers",
            "description": "Add numbers together. More text.",
            "inputSchema": {"type": "object", "properties": {"numbers": {"type": "array", "description": "Values."}}},
        }
    ]
    (entry,) = section_entries("demo", "A demo section.", definitions, {"demo_sum": ("total of a list",)})
    assert entry.summary == "Add numbers together."
    assert entry.columns[0] == "demo sum" and "numbers Values." in entry.columns[3]
    assert entry.columns[4] == "demo A demo section." and entry.columns[5] == "total of a list"
    assert entry.heading == "demo sum. Sum numbers: Add numbers together."


def _search(
    tmp_path: Path, cache_dir: Path, embedding: Any = None, sections: dict[str, dict[str, Any]] | None = None
) -> ToolSearch:
    from mcp_sections.servers.pool.catalog import build_catalog
    from mcp_sections.servers.pool.settings import GatewaySettings
    from mcp_sections.shared.settings.config import Settings

    settings = Settings(cache_dir=cache_dir, data_dir=tmp_path / "data", sections=sections or {})
    return ToolSearch(build_catalog(GatewaySettings()), settings, embedding)


def test_the_programs_shell_ops_may_run_are_searched_as_configured(tmp_path: Path) -> None:
    """shell_ops' `search_terms`: a need naming an allowed program finds the tools that run it, from the operator's
    allow-list (a program added there is found; one never allowed points to list_safe_commands)."""
    from mcp_sections.servers.gateway.models import FindToolsInput
    from mcp_sections.shared.embeddings import EmbeddingSettings

    def first_tools(allowed: list[str] | None, query: str) -> list[str]:
        sections = {"shell_ops": {"allowed_programs": allowed}} if allowed is not None else {}
        no_model = EmbeddingSettings(embedding_model=str(tmp_path / "no-model"), embedding_backend="torch")
        search = _search(tmp_path, tmp_path / "cache", no_model, sections)
        return [found.name for found in search.find(FindToolsInput(query=query, limit=3)).tools]

    assert "run_command" not in first_tools(None, "terraform")
    assert set(first_tools(["ls", "terraform"], "terraform")) == {"run_command", "start_process", "list_safe_commands"}
    assert first_tools(None, "socat")[0] == "list_safe_commands"


def test_without_a_model_the_ranking_is_bm25_alone_and_says_so(tmp_path: Path) -> None:
    from mcp_sections.servers.gateway.models import FindToolsInput
    from mcp_sections.shared.embeddings import EmbeddingSettings

    missing = EmbeddingSettings(embedding_model=str(tmp_path / "no-such-model"), embedding_backend="torch")
    search = _search(tmp_path, tmp_path / "cache", missing)
    result = search.find(FindToolsInput(query="rename a file", limit=3))
    assert result.mode == "bm25"
    assert result.note and result.note.startswith("BM25 alone") and "no-such-model" in result.note
    assert "move_file" in [found.name for found in result.tools]
    assert result.unsearched == []  # every built-in section is searched without starting it
    only = search.find(FindToolsInput(query="delete", sections=["todo"]))
    assert {found.section for found in only.tools} == {"todo"}
    assert not (tmp_path / "cache" / "tool_search.sqlite").exists()  # no vectors were cached


@needs_model
@pytest.mark.slow  # the recall evaluation over every built-in tool, embedded with the real model
def test_tuning_needs_recall_floors_and_hybrid_beats_each_leg(shared_cache_dir: Path, tmp_path: Path) -> None:
    from benchmarks.tool_search_eval import evaluate

    search = _search(tmp_path, shared_cache_dir)
    search.index(wait_seconds=600)
    for split, (at_1, at_3) in FLOORS.items():
        scores = {score.ranking: score for score in evaluate(search, splits=(split,))}
        hybrid = scores["fused"]
        assert hybrid.recall_at_1 >= at_1 and hybrid.recall_at_3 >= at_3, hybrid
        for leg in (scores["bm25"], scores["vectors"]):
            assert hybrid.recall_at_1 >= leg.recall_at_1 and hybrid.recall_at_3 >= leg.recall_at_3, scores
    # a second index over the same definitions embeds nothing: every vector comes from the cache
    again = _search(tmp_path, shared_cache_dir)
    again.index(wait_seconds=600)
    assert again.times.embedded == 0 and again.index(wait_seconds=0).mode == "hybrid"


@needs_model
def test_a_third_party_section_joins_the_index_when_its_tools_become_known(
    shared_cache_dir: Path, tmp_path: Path
) -> None:
    from mcp_sections.servers.pool.catalog import build_catalog
    from mcp_sections.servers.pool.settings import ExternalSection, GatewaySettings
    from mcp_sections.shared.settings.config import Settings

    demo = ExternalSection(command="/nonexistent/server", description="Weather forecasts.")
    catalog = build_catalog(GatewaySettings(sections={"weather": demo}))
    search = ToolSearch(catalog, Settings(cache_dir=shared_cache_dir, data_dir=tmp_path / "data"))
    hits, mode, _ = search.search("will it rain tomorrow in Lyon", 3, None)
    assert mode == "hybrid" and all(hit.entry.section != "weather" for hit in hits)
    assert search.unsearched() == [("weather", "third-party section not started yet: its tools are known once it runs")]
    forecast = {"name": "get_forecast", "description": "Weather forecast for a city: rain, temperature, wind."}
    catalog["weather"].remember_definitions([{**forecast, "inputSchema": {"type": "object"}}])  # as its first run does
    hits, mode, _ = search.search("will it rain tomorrow in Lyon", 3, None)
    assert mode == "hybrid" and hits[0].entry.name == "get_forecast" and search.unsearched() == []
    assert search.times.embedded == 1  # only the new tool's passage: the others' vectors came from the cache


# -- the gateway's tool, in memory --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tool-search")


@pytest.fixture(scope="module")
async def client(workdir: Path) -> AsyncIterator[Client]:
    config = write_config(workdir / "config.toml", demo_section_table())
    args = ["--config", str(config), "--data-dir", str(workdir / "data"), "--root", str(workdir)]
    async with gateway_in_memory(*args, cwd=workdir) as connected:
        yield connected


async def find(client: Client, **arguments: Any) -> dict[str, Any]:
    return data_of(await client.call_tool("find_tools", arguments))


@pytest.mark.skipif(not builtin_available("todo"), reason="the todo section is not importable")
@pytest.mark.anyio
async def test_find_tools_ranks_every_section_without_starting_one(client: Client, workdir: Path) -> None:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert listed["find_tools"].annotations is not None and listed["find_tools"].annotations.read_only_hint
    found = await find(client, query="mark my task as finished", limit=3)
    assert found["mode"] in ("hybrid", "bm25")
    assert [tool["name"] for tool in found["tools"]][:3].count("todo_complete") == 1
    first = found["tools"][0]
    assert set(first) == {"section", "name", "summary", "score", "inputSchema"}
    assert first["inputSchema"]["type"] == "object" and "properties" in first["inputSchema"]
    assert found["unsearched"] == [
        {"section": "demo", "reason": "third-party section not started yet: its tools are known once it runs"}
    ]
    assert running_with(f"serve todo --data-dir {workdir / 'data'}") == []  # nothing was started
    only = await find(client, query="delete it", sections=["memory"])
    assert {tool["section"] for tool in only["tools"]} == {"memory"}


@pytest.mark.anyio
async def test_find_tools_refuses_bad_calls(client: Client) -> None:
    code, message = error_of(await client.call_tool("find_tools", {"query": "read", "sections": ["nope_section"]}))
    assert code == "NOT_FOUND" and "list_tool_sections" in message
    code, message = error_of(await client.call_tool("find_tools", {"query": "?!"}))
    assert code == "INVALID_INPUT" and "plain words" in message
    code, _ = error_of(await client.call_tool("find_tools", {"query": "x" * 501}))
    assert code == "INVALID_INPUT"


@pytest.mark.anyio
async def test_a_third_party_section_is_searched_once_it_ran(client: Client) -> None:
    summed = data_of(
        await client.call_tool(
            "call_section_tool", {"section": "demo", "tool": "demo_sum", "arguments": {"numbers": [1, 2]}}
        )
    )
    assert summed
    found = await find(client, query="sum numbers", sections=["demo"], limit=2)
    assert found["tools"][0]["name"] == "demo_sum" and found["unsearched"] == []
