"""find_tools on needs as agents paste them (paths, URLs, pasted text, errors: issue #41) and on the gateway's own
tools, which it ranks too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_sections.servers.gateway.tool_search import ToolSearch
from mcp_sections.shared.embeddings.embedder import default_model_runs

needs_model = pytest.mark.skipif(
    not default_model_runs(), reason="needs the memory extra: pip install 'mcp-sections[memory]'"
)


def _search(tmp_path: Path, cache_dir: Path, embedding: Any = None, own: Any = None) -> ToolSearch:
    from mcp_sections.servers.pool.catalog import build_catalog
    from mcp_sections.servers.pool.settings import GatewaySettings
    from mcp_sections.shared.settings.config import Settings

    settings = Settings(cache_dir=cache_dir, data_dir=tmp_path / "data")
    if own is None:
        return ToolSearch(build_catalog(GatewaySettings()), settings, embedding)
    return ToolSearch(build_catalog(GatewaySettings()), settings, embedding, own=own)


#: Needs as agents paste them, each with the tool that answers it: the pasted material pulled each one elsewhere.
PASTED_NEEDS = {
    "create docs/adr/0007-use-postgres.md with this content:\n# 7. Use Postgres\n\nWe run the API on PostgreSQL 16; "
    "local development starts it with `docker compose up db`.": "write_file",
    "open compose.yaml, compose.dev.yaml and compose.prod.yaml side by side — the postgres image tag differs between "
    "them and I can't tell which one CI uses": "read_multiple_files",
    "remember this for all future sessions: the API runs on port 8080 behind nginx, and migrations run with "
    "alembic upgrade head": "memory_add",
    "which OS, Python and gateway version is this running on? the maintainers want it in the bug report": (
        "get_environment_info"
    ),
}


@needs_model
def test_pasted_material_does_not_pull_the_ranking_away(shared_cache_dir: Path, tmp_path: Path) -> None:
    search = _search(tmp_path, shared_cache_dir)
    for need, tool in PASTED_NEEDS.items():
        hits, mode, _ = search.search(need, 3, None)
        assert mode == "hybrid" and hits[0].entry.name == tool, (need, [hit.entry.name for hit in hits])


def test_the_gateways_own_tools_are_found_as_the_gateway_offers_them(tmp_path: Path) -> None:
    """find_tools ranks the gateway's own tools too (section "gateway", to be called directly), only those the
    gateway offers its client, and not when the search is limited to sections."""
    from mcp_sections.servers.gateway.models import FindToolsInput
    from mcp_sections.shared.embeddings import EmbeddingSettings

    no_model = EmbeddingSettings(embedding_model=str(tmp_path / "no-model"), embedding_backend="torch")
    search = _search(tmp_path, tmp_path / "cache", no_model)
    found = search.find(FindToolsInput(query="delegate the job to a sub-agent", limit=5)).tools
    first = next(tool for tool in found if tool.name == "plan_actions")
    assert first.section == "gateway" and "call it directly" in first.summary
    environment = search.find(FindToolsInput(query="which gateway version and OS is this", limit=1)).tools
    assert environment[0].name == "get_environment_info"
    without = _search(tmp_path, tmp_path / "cache", no_model, own=lambda: ["find_tools"])
    names = [tool.name for tool in without.find(FindToolsInput(query="delegate the job to a sub-agent")).tools]
    assert "plan_actions" not in names
    limited = search.find(FindToolsInput(query="which gateway version and OS is this", sections=["shell_ops"]))
    assert {tool.section for tool in limited.tools} == {"shell_ops"}


def test_a_needs_mood_is_a_question_or_a_change() -> None:
    """The first request clause: a question asks to be told something, a verb of change asks for one; "have ...",
    "log base 2" and a need without a request have no mood (readOnlyHint then decides nothing)."""
    from mcp_sections.servers.gateway.need import read_need

    moods = {
        "what did we decide earlier about which LLM provider to use?": "ask",
        "is the embedding model up, and how many vectors are still waiting": "ask",
        "hey, can you delete the stale branch notes in docs/old.md": "change",
        "Save these meeting notes as notes/2025-12-07/sync.md (the folder doesn't exist yet)": "change",
        "have three agents work on these three tasks concurrently": None,
        "log base 2 of 4096": None,
        "the build on main keeps failing since yesterday": None,
    }
    assert {need: read_need(need).mood for need in moods} == moods


def test_the_mood_counts_only_for_tools_whose_hint_fits_it(tmp_path: Path) -> None:
    """A question lifts the read-only tools, a change the others; a tool without a readOnlyHint gets nothing."""
    from mcp_sections.servers.gateway.tool_search import ToolIndex, section_entries

    definitions = [
        {"name": "look", "annotations": {"readOnlyHint": True}},
        {"name": "write", "annotations": {"readOnlyHint": False}},
        {"name": "plain"},
    ]
    index = ToolIndex(section_entries("demo", "a demo section", definitions, {}))
    assert [entry.read_only for entry in index.entries] == [True, False, None]
    assert index.mood_fit("ask").tolist() == [1.0, 0.0, 0.0]
    assert index.mood_fit("change").tolist() == [0.0, 1.0, 0.0]
    assert index.mood_fit(None).tolist() == [0.0, 0.0, 0.0]


@needs_model
def test_a_question_finds_the_tool_that_reads_and_an_order_the_one_that_writes(
    shared_cache_dir: Path, tmp_path: Path
) -> None:
    """Two needs of the same store: each went to the other tool before the mood counted."""
    search = _search(tmp_path, shared_cache_dir)
    for need, tool in {
        "what did we decide earlier about which LLM provider to use?": "memory_search",
        "Note down that we picked Mistral because it had the best quality/price ratio — tag it llm and cost": (
            "memory_add"
        ),
    }.items():
        hits, _, _ = search.search(need, 3, None)
        assert hits[0].entry.name == tool, (need, [hit.entry.name for hit in hits])
