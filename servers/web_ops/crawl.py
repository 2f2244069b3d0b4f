"""Crawling one site breadth-first from a start page, within depth and page caps.

Followed links stay on the start page's site (same host and port, after its redirects; http and https alike),
match the include patterns (if any) and none of the exclude patterns (regular expressions on the URL, evaluated
with a time budget so a pathological pattern cannot hang the section), and are allowed by the site's robots.txt
(protego, as the reference fetch server uses; its crawl-delay is honoured up to `MAX_CRAWL_DELAY`). A page that
fails is reported and skipped; the crawl goes on. Every link met and not followed is counted by reason: `other
site`, `pattern`, `robots.txt`, `invalid URL`, and the caps' `max_pages` (the crawl stopped at the limit) and
`depth` (the links of the deepest pages).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import anyio

from mcp_sections.servers.web_ops.pages import Page
from mcp_sections.shared.confinement.guards.urls import normalise_url, parse_url
from mcp_sections.shared.ground.errors import ToolFailure, invalid_input
from mcp_sections.shared.net.fetch import GuardedHttp

MAX_DEPTH = 3
MAX_PAGES = 50
MAX_PATTERN_LENGTH = 300
PATTERN_SECONDS = 0.05
MAX_CRAWL_DELAY = 2.0
CONCURRENT_FETCHES = 4
MAX_PAGES_REASON = "max_pages"  # the reason in `skipped` of the links a crawl left at its page cap

FetchPage = Callable[[str], Awaitable[Page]]


@dataclass
class CrawledPage:
    page: Page
    depth: int
    parent: str | None


@dataclass
class CrawlReport:
    pages: list[CrawledPage] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # links not followed, by reason
    stopped_by_limit: bool = False  # links were left at max_pages

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


class UrlFilter:
    """Include/exclude regular expressions on URLs, each match bounded in time."""

    def __init__(self, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> None:
        import regex

        self._regex = regex
        try:
            self.include = [regex.compile(p) for p in include]
            self.exclude = [regex.compile(p) for p in exclude]
        except regex.error as exc:
            raise invalid_input(f"invalid URL pattern: {exc}; patterns are regular expressions on the URL.") from None
        if any(len(p) > MAX_PATTERN_LENGTH for p in [*include, *exclude]):
            raise invalid_input(f"URL patterns are limited to {MAX_PATTERN_LENGTH} characters.")

    def allows(self, url: str) -> bool:
        try:
            if self.include and not any(p.search(url, timeout=PATTERN_SECONDS) for p in self.include):
                return False
            return not any(p.search(url, timeout=PATTERN_SECONDS) for p in self.exclude)
        except TimeoutError:
            return False


class Robots:
    """robots.txt of each origin met, fetched once through the guarded client."""

    def __init__(self, http: GuardedHttp, user_agent: str) -> None:
        self.http = http
        self.user_agent = user_agent
        self._rules: dict[str, object | None] = {}
        self._lock = anyio.Lock()

    async def rules(self, url: str) -> object | None:
        from protego import Protego

        origin = parse_url(url).origin
        async with self._lock:  # one fetch of robots.txt per origin, even for concurrent visits
            if origin in self._rules:
                return self._rules[origin]
            try:
                response = await self.http.get(f"{origin}/robots.txt", max_bytes=500_000)
                ok = response.status == 200 and "html" not in response.content_type
                self._rules[origin] = Protego.parse(response.text()) if ok else None
            except ToolFailure:
                self._rules[origin] = None  # no robots.txt reachable: nothing is disallowed
            return self._rules[origin]

    async def allows(self, url: str) -> bool:
        rules = await self.rules(url)
        return rules is None or bool(rules.can_fetch(url, self.user_agent))  # type: ignore[attr-defined]

    async def delay(self, url: str) -> float:
        rules = await self.rules(url)
        delay = rules.crawl_delay(self.user_agent) if rules is not None else None  # type: ignore[attr-defined]
        return min(float(delay or 0.0), MAX_CRAWL_DELAY)


def same_site(url: str, site: tuple[str, int]) -> bool:
    try:
        parsed = parse_url(url)
    except ToolFailure:
        return False
    port = parsed.port if parsed.port not in (80, 443) else 0
    return (parsed.host, port) == site


def site_of(url: str) -> tuple[str, int]:
    parsed = parse_url(url)
    return parsed.host, parsed.port if parsed.port not in (80, 443) else 0


async def crawl(
    fetch: FetchPage,
    start: Page,
    *,
    depth: int,
    max_pages: int,
    url_filter: UrlFilter,
    robots: Robots | None,
    on_page: Callable[[int, int, str], Awaitable[None]] | None = None,
) -> CrawlReport:
    """Breadth-first from an already fetched start page; `start` is the report's first page (depth 0). Every link
    met and not followed is counted in `skipped` by reason, those left by the caps too (`max_pages`, `depth`)."""
    crawler = _Crawl(fetch, start, max_pages=max_pages, url_filter=url_filter, robots=robots, on_page=on_page)
    current_level = [start]
    for level in range(1, depth + 1):
        frontier = crawler.frontier(current_level)
        if crawler.full():
            crawler.leave(len(frontier), MAX_PAGES_REASON)
            return crawler.report
        next_level: list[Page] = []
        limiter = anyio.Semaphore(CONCURRENT_FETCHES)
        async with anyio.create_task_group() as group:
            for url, parent_url in frontier:
                group.start_soon(crawler.visit, url, parent_url, level, next_level, limiter)
        current_level = next_level
    crawler.leave(len(crawler.frontier(current_level)), "depth")  # the links of the deepest pages
    return crawler.report


class _Crawl:
    """One crawl: the report it fills, the site it stays on and the URLs it has met."""

    def __init__(
        self,
        fetch: FetchPage,
        start: Page,
        *,
        max_pages: int,
        url_filter: UrlFilter,
        robots: Robots | None,
        on_page: Callable[[int, int, str], Awaitable[None]] | None,
    ) -> None:
        self.fetch = fetch
        self.max_pages = max_pages
        self.url_filter = url_filter
        self.robots = robots
        self.on_page = on_page
        self.report = CrawlReport(pages=[CrawledPage(start, 0, None)])
        self.site = site_of(start.final_url)
        self.seen = {normalise_url(start.url), normalise_url(start.final_url)}

    def frontier(self, level: list[Page]) -> list[tuple[str, str]]:
        """The links of a level's pages not met yet, on the site and allowed by the patterns: (url, parent)."""
        frontier: list[tuple[str, str]] = []
        for parent in level:
            for link in parent.links:
                url = link.url.split("#", 1)[0]
                try:
                    key = normalise_url(url)
                except ToolFailure:
                    self.report.skip("invalid URL")
                    continue
                if key in self.seen:
                    continue
                self.seen.add(key)
                if not same_site(key, self.site):
                    self.report.skip("other site")
                elif not self.url_filter.allows(key):
                    self.report.skip("pattern")
                else:
                    frontier.append((key, parent.final_url))
        return frontier

    def full(self) -> bool:
        """Whether the report holds `max_pages`."""
        return len(self.report.pages) >= self.max_pages

    def leave(self, links: int, reason: str) -> None:
        """Count `links` not followed for `reason`; left for `max_pages`, the crawl stopped at the limit."""
        for _ in range(links):
            self.report.skip(reason)
        if links and reason == MAX_PAGES_REASON:
            self.report.stopped_by_limit = True

    async def visit(self, url: str, parent_url: str, level: int, into: list[Page], limiter: anyio.Semaphore) -> None:
        """Fetch one page (robots.txt and its crawl delay permitting) unless the report is full (then the link is
        left, counted under `max_pages`)."""
        async with limiter:
            if self.full():
                self.leave(1, MAX_PAGES_REASON)
                return
            if not await self.robots_allow(url):
                return
            if self.full():  # full by now: pages came in during the delay
                self.leave(1, MAX_PAGES_REASON)
                return
            try:
                page = await self.fetch(url)
            except ToolFailure as failure:
                self.report.failures.append(f"{url}: {failure.message}")
                return
            if self.full():
                self.leave(1, MAX_PAGES_REASON)
                return
            self.report.pages.append(CrawledPage(page, level, parent_url))
            into.append(page)
            if self.on_page is not None:
                await self.on_page(len(self.report.pages), self.max_pages, url)

    async def robots_allow(self, url: str) -> bool:
        """robots.txt allows the URL (counted as skipped otherwise); its crawl delay is waited."""
        if self.robots is None:
            return True
        if not await self.robots.allows(url):
            self.report.skip("robots.txt")
            return False
        delay = await self.robots.delay(url)
        if delay:
            await anyio.sleep(delay)
        return True
