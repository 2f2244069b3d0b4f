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
