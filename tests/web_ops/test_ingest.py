"""ingest_web_page writes WebPage nodes that rag_ops' brain_search finds, with deterministic ids (no duplicates)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.servers.registry import load_section
from mcp_sections.shared.serving.server import build_server
from mcp_sections.shared.settings.config import Settings
from tests.stdio import call
from tests.web_ops.conftest import web_settings
from tests.web_ops.site import CRAWL_PAGES, Site

pytestmark = pytest.mark.anyio


def _rag_client(data_dir: Path) -> Client:
    section = load_section("rag_ops")
    table = {"data_dir": str(data_dir), "warm_up": False, "sections": {"rag_ops": {"embeddings": False}}}
    settings = Settings.load(table)
    server, _ = build_server(section, section.runtime(settings))
    return Client(server)


async def test_ingested_pages_are_found_by_brain_search_and_reingest_updates(site: Site, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    section = load_section("web_ops")
    server, _ = build_server(section, section.runtime(web_settings(site, data_dir)))
    async with Client(server) as web:
        first = await call(web, "ingest_web_page", url=site.url("/crawl/0.html"), depth=3, max_pages=50)
        async with _rag_client(data_dir) as rag:
            before = {p["id"]: p["node_count"] for p in (await call(rag, "list_projects"))["projects"]}
        again = await call(web, "ingest_web_page", url=site.url("/crawl/0.html"), depth=3, max_pages=50, force=True)
        fetched = await call(web, "fetch_web_page", url=site.url("/about.html"), ingest=True, project_name="site-docs")
    assert first["pages_ingested"] == CRAWL_PAGES and first["project_id"] == f"web-127-0-0-1-{site.port}"
    assert first["embeddings"] == "disabled"
    assert {p["node_id"] for p in first["children"]} == {p["node_id"] for p in again["children"]}
    assert fetched["ingested"] == {"project_id": "site-docs", "pages_ingested": 1, "embeddings_pending": 0}

    async with _rag_client(data_dir) as rag:
        found = await call(rag, "brain_search", query="Page number 7 of the crawl", semantic=False, limit=20)
        projects = await call(rag, "list_projects")
    web_pages = [r for r in found["results"] if r["label"] == "WebPage"]
    assert site.hits.count("/robots.txt") == 2  # once per crawl
    assert site.url("/crawl/7.html") in {r["path"] for r in web_pages}
    by_id = {p["id"]: p for p in projects["projects"]}
    project = by_id[first["project_id"]]
    assert project["type"] == "web-crawl"
    assert project["node_count"] == before[first["project_id"]]  # re-ingest did not duplicate
    assert "site-docs" in by_id


async def test_pages_are_embedded_in_the_background_unless_asked_not_to(site: Site, tmp_path: Path) -> None:
    pytest.importorskip("numpy", reason="embeddings need the memory/rag extra")
    section = load_section("web_ops")
    settings = web_settings(site, tmp_path / "data", embeddings=True)
    server, _ = build_server(section, section.runtime(settings))
    async with Client(server) as web:
        text_only = await call(web, "ingest_web_page", url=site.url("/about.html"), generate_embeddings=False)
        assert (text_only["embeddings"], text_only["embeddings_pending"]) == ("off", 0)
        embedded = await call(web, "ingest_web_page", url=site.url("/static.html"), project_name="embedded")
        assert embedded["embeddings"] == "background" and embedded["embeddings_pending"] >= 1
