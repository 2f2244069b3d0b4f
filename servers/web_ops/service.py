"""web_ops' state and its three jobs — fetch (with an optional crawl), ingest, search — without MCP.

One `WebOps` per process, opened on the server's event loop: the guarded HTTP clients, the browser (started on
first use), the page cache, and the brain writer (opened on the first ingest). Two clients fetch: one for the web
(public addresses and the allow-list), one for the dev servers that shell_ops publishes on 127.0.0.1 right now
(`shared.confinement.published_ports`, read from the data directory: nothing else on loopback, and not the web from
their pages); a URL on loopback goes to the second (`pages.PageFetcher.client_for`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread

from mcp_sections.servers.web_ops.browser import Browser
from mcp_sections.servers.web_ops.crawl import CrawledPage, CrawlReport, Robots, UrlFilter, crawl
from mcp_sections.servers.web_ops.ingest import PageIngest
from mcp_sections.servers.web_ops.pages import Page, PageCache, PageFetcher, Render
from mcp_sections.servers.web_ops.search import SearchHit, choose_provider, search
from mcp_sections.servers.web_ops.settings import ALLOW_SETTING, WebOpsSettings
from mcp_sections.shared.confinement.guards.urls import AllowList, UrlGuard, parse_url
from mcp_sections.shared.confinement.published_ports import PublishedPorts
from mcp_sections.shared.net.fetch import GuardedHttp

Progress = Callable[[int, int, str], Awaitable[None]]


@dataclass
class Fetched:
    """A page and, for a crawl, what the crawl found."""

    report: CrawlReport

    @property
    def page(self) -> Page:
        return self.report.pages[0].page


@dataclass
class Ingested:
    project_id: str
    node_ids: dict[str, str]  # final URL -> node id
    embeddings_pending: int


class WebOps:
    def __init__(self, settings: WebOpsSettings, data_dir: Path, cache_dir: Path) -> None:
        self.settings = settings
        self.data_dir = data_dir
        self.cache_dir = cache_dir
        allow = AllowList.parse(settings.allow)
        self.http = self._client(UrlGuard(allow, allow_setting=ALLOW_SETTING))
        published = PublishedPorts(data_dir)
        self.dev_http = self._client(UrlGuard(allow, allow_setting=ALLOW_SETTING, published=published))
        self.search_http = self._client(UrlGuard(_with_searxng(allow, settings), allow_setting=ALLOW_SETTING))
        self.browser = (
            Browser(self.http, executable=settings.browser_executable, verify_tls=settings.verify_tls)
            if settings.browser
            else None
        )
        self.cache = PageCache(settings.cache_pages)
        self.fetcher = PageFetcher(
            self.http, self.browser, self.cache, timeout_seconds=settings.timeout_seconds, dev_http=self.dev_http
        )
        self._ingest: PageIngest | None = None

    def _client(self, guard: UrlGuard) -> GuardedHttp:
        return GuardedHttp(
            guard,
            user_agent=self.settings.user_agent,
            max_bytes=self.settings.max_page_bytes,
            timeout_seconds=self.settings.timeout_seconds,
            verify_tls=self.settings.verify_tls,
        )

    async def aclose(self) -> None:
        if self.browser is not None:
            await self.browser.close()
        await self.http.aclose()
        await self.dev_http.aclose()
        await self.search_http.aclose()
        if self._ingest is not None:
            await anyio.to_thread.run_sync(self._ingest.close)

    # ---- fetch and crawl ------------------------------------------------------------------------------------
    async def fetch(
        self,
        url: str,
        *,
        depth: int = 0,
        max_pages: int = 10,
        include: list[str] | None = None,
        exclude: list[str] | None = None,
        render: Render = "auto",
        wait_for: Any = None,
        screenshot: bool = False,
        force: bool = False,
        progress: Progress | None = None,
    ) -> Fetched:
        url_filter = UrlFilter(include or [], exclude or [])  # invalid patterns fail before any fetch
        start = await self.fetcher.fetch(url, render=render, wait_for=wait_for, screenshot=screenshot, force=force)
        if depth == 0:
            report = CrawlReport()
            report.pages.append(CrawledPage(start, 0, None))
            return Fetched(report)
        client = self.fetcher.client_for(url)  # the start page's: a crawl stays on its site
        robots = Robots(client, self.settings.user_agent) if self.settings.respect_robots else None

        async def fetch_child(child_url: str) -> Page:
            return await self.fetcher.fetch(child_url, render=render, wait_for=wait_for, force=force)

        report = await crawl(
            fetch_child,
            start,
            depth=depth,
            max_pages=max_pages,
            url_filter=url_filter,
            robots=robots,
            on_page=progress,
        )
        return Fetched(report)

    # ---- ingest ---------------------------------------------------------------------------------------------
    def page_ingest(self) -> PageIngest:
        if self._ingest is None:
            from mcp_sections.shared.brain.opening import open_brain_store, open_embedding_service

            store = open_brain_store(self.settings.backend, self.data_dir)
            service = None
            if self.settings.embeddings:
                service = open_embedding_service(self.settings, store, self.data_dir, self.cache_dir)
            self._ingest = PageIngest(store, service)
        return self._ingest

    async def ingest(self, fetched: Fetched, project_name: str | None, embed: bool = True) -> Ingested:
        def write() -> Ingested:
            writer = self.page_ingest()
            node_ids: dict[str, str] = {}
            project_id = project_name
            for crawled in fetched.report.pages:
                page = crawled.page
                links = [link.url for link in page.links]
                project_id, node_ids[page.final_url] = writer.ingest(
                    page.final_url, page.title, page.text, links, project_name, embed=embed
                )
            assert project_id is not None
            pending = writer.pending(project_id) if embed else 0
            return Ingested(project_id, node_ids, pending)

        return await anyio.to_thread.run_sync(write)

    # ---- search ---------------------------------------------------------------------------------------------
    async def search(self, query: str, limit: int, provider: str) -> tuple[str, list[SearchHit]]:
        searxng_url, brave_api_key_env = self.settings.searxng_url, self.settings.brave_api_key_env
        chosen = choose_provider(
            provider, http=self.search_http, searxng_url=searxng_url, brave_api_key_env=brave_api_key_env
        )
        hits = await search(chosen, query, limit, searxng_url=searxng_url, brave_api_key_env=brave_api_key_env)
        return chosen.name, hits


@contextlib.asynccontextmanager
async def running(settings: WebOpsSettings, data_dir: Path, cache_dir: Path) -> AsyncIterator[WebOps]:
    web = WebOps(settings, data_dir, cache_dir)
    try:
        yield web
    finally:
        with anyio.CancelScope(shield=True):
            await web.aclose()


def _with_searxng(allow: AllowList, settings: WebOpsSettings) -> AllowList:
    """The allow-list plus the configured SearXNG endpoint (a trusted, often private, address)."""
    if not settings.searxng_url:
        return allow
    parsed = parse_url(settings.searxng_url)
    return AllowList(allow.hosts | {(parsed.host, parsed.port)}, allow.networks)
