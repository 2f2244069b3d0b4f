"""Fetching one page: plain HTTP when it gives the content, the browser when the page needs JavaScript.

`render="auto"` fetches over HTTP first. A non-HTML answer (JSON, text, PDF) is final. An HTML page whose
visible text without scripts is thin while it carries scripts (a client-rendered app) is loaded again in the
browser; so is any page asked for with a screenshot or an explicit `wait_for`. The last pages fetched stay in a
small LRU cache keyed by normalised URL (the seed's short-term memory), shared by fetch and ingest.

A URL on loopback is fetched through the client for published dev servers (`client_for`), in HTTP and in the browser
alike, and never from the cache: a dev server's pages change as it is worked on, and once its port is no longer
published its URL is refused, not answered from memory. A page from loopback is served from this machine — a dev
server started by shell_ops serves the project's files (`python -m http.server`) — so its secret values are masked
as file_ops masks a file it reads (`shared.confinement.secrets.masking`): the same file must not come back whole
through this door. A screenshot is a picture, and is not masked.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Literal

from mcp_sections.servers.web_ops.browser import Browser, WaitFor
from mcp_sections.servers.web_ops.extraction import (
    HTML_TYPES,
    Extracted,
    Image,
    Link,
    UnsupportedContent,
    extract,
)
from mcp_sections.shared.confinement.guards.urls import is_loopback_url, normalise_url, parse_url
from mcp_sections.shared.confinement.secrets.masking import mask_text
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.net.fetch import GuardedHttp

Render = Literal["auto", "browser", "http"]
THIN_TEXT = 300  # visible characters below which an HTML page with scripts is rendered in the browser


@dataclass
class Page:
    """One fetched page, extracted."""

    url: str
    final_url: str
    status: int | None
    title: str
    text: str
    links: list[Link]
    images: list[Image]
    kind: str
    rendered_with: Literal["browser", "http"]
    content_type: str
    fetched_at: float
    bytes_read: int
    truncated_body: bool = False
    redirects: list[str] = field(default_factory=list)
    blocked_requests: list[str] = field(default_factory=list)
    screenshot: bytes | None = None
    from_cache: bool = False
    thin_without_scripts: bool = False  # little visible text but scripts: a client-rendered page
    notes: list[str] = field(default_factory=list)


class PageCache:
    """The last `size` pages by normalised URL, least recently used dropped first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._pages: OrderedDict[str, Page] = OrderedDict()

    def get(self, url: str) -> Page | None:
        key = normalise_url(url)
        page = self._pages.get(key)
        if page is not None:
            self._pages.move_to_end(key)
        return page

    def put(self, page: Page) -> None:
        if self.size <= 0:
            return
        for key in {normalise_url(page.url), normalise_url(page.final_url)}:
            self._pages[key] = page
            self._pages.move_to_end(key)
        while len(self._pages) > self.size:
            self._pages.popitem(last=False)

    def __len__(self) -> int:
        return len(self._pages)


class PageFetcher:
    """HTTP and the browser behind one `fetch`, with the cache in front."""

    def __init__(
        self,
        http: GuardedHttp,
        browser: Browser | None,
        cache: PageCache,
        *,
        timeout_seconds: float,
        dev_http: GuardedHttp | None = None,
    ) -> None:
        """`http`: the web's client; `dev_http`: the published dev servers' (see the module docstring)."""
        self.http = http
        self.dev_http = dev_http
        self.browser = browser
        self.cache = cache
        self.timeout_seconds = timeout_seconds

    def client_for(self, url: str) -> GuardedHttp:
        """The client a URL is fetched with: a loopback URL that the allow-list does not open goes to the published
        dev servers' client, which refuses it unless a relay publishes its port right now."""
        if self.dev_http is None or not is_loopback_url(url):
            return self.http
        parsed = parse_url(url)
        return self.http if self.http.guard.allow.allows_host(parsed.host, parsed.port) else self.dev_http

    async def fetch(
        self,
        url: str,
        *,
        render: Render = "auto",
        wait_for: WaitFor | None = None,
        screenshot: bool = False,
        force: bool = False,
    ) -> Page:
        url = normalise_url(url)
        http = self.client_for(url)
        dev_server = http is self.dev_http
        if not force and not dev_server:
            cached = self.cache.get(url)
            usable = cached is not None and (cached.screenshot is not None or not screenshot)
            if cached is not None and usable and render in ("auto", cached.rendered_with):
                cached.from_cache = True
                return cached
        if screenshot and render == "http":
            raise ToolFailure(
                ErrorCode.INVALID_INPUT, "a screenshot needs the browser: use render='auto' or 'browser'."
            )
        wants_browser = render == "browser" or screenshot or (render == "auto" and wait_for is not None)
        page: Page | None = None
        notes: list[str] = []
        if not wants_browser:
            page = await self._over_http(url, http)
            if render == "auto" and self._needs_browser(page):
                if self.browser is not None:
                    notes.append("the page shows little text without JavaScript, so it was rendered in a browser")
                    page = None
                else:
                    page.notes.append("the page may need JavaScript, but the browser is turned off")
        if page is None:
            if self.browser is None:
                raise ToolFailure(
                    ErrorCode.DEPENDENCY_ERROR,
                    "the browser is turned off (`[sections.web_ops] browser = false`); use render='http'.",
                )
            page = await self._in_browser(url, wait_for or "load", screenshot, http)
            page.notes.extend(notes)
        return self._kept(page, dev_server)

    def _kept(self, page: Page, dev_server: bool) -> Page:
        """`page` as it is answered: masked when it came from this machine, cached unless a dev server served it."""
        if is_loopback_url(page.url) or is_loopback_url(page.final_url):
            _mask_secrets(page)
        if not dev_server:
            self.cache.put(page)
        return page

    def _needs_browser(self, page: Page) -> bool:
        return page.kind == "html" and page.thin_without_scripts

    async def _over_http(self, url: str, http: GuardedHttp) -> Page:
        response = await http.get(url, headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
        if response.status >= 400:
            raise ToolFailure(
                ErrorCode.NOT_FOUND if response.status in (404, 410) else ErrorCode.EXECUTION_FAILED,
                f"{response.url} answered HTTP {response.status}; check the URL.",
                status=response.status,
            )
        text = response.text()
        try:
            extracted = extract(
                text if _is_textual(response.content_type) else response.body, response.content_type, response.url
            )
        except UnsupportedContent as exc:
            raise ToolFailure(
                ErrorCode.EXECUTION_FAILED, f"{response.url}: {exc}; web_ops reads pages, not files of this type."
            ) from None
        page = _page(url, response.url, response.status, extracted, "http", response.content_type)
        page.bytes_read = len(response.body)
        page.truncated_body = response.truncated
        page.redirects = response.redirects
        if extracted.kind == "html" and response.content_type in HTML_TYPES | {""}:
            visible = extracted.visible_chars or 0
            page.thin_without_scripts = visible < THIN_TEXT and "<script" in text.lower()
        if response.truncated:
            page.notes.append(f"the body was cut at {len(response.body)} bytes (max_page_bytes)")
        return page

    async def _in_browser(self, url: str, wait_for: WaitFor, screenshot: bool, http: GuardedHttp) -> Page:
        assert self.browser is not None
        await http.check(url)  # refuse before starting a browser for nothing
        rendered = await self.browser.render(
            url, wait_for=wait_for, timeout_seconds=self.timeout_seconds, screenshot=screenshot, guard=http.guard
        )
        if rendered.status is not None and rendered.status >= 400:
            raise ToolFailure(
                ErrorCode.NOT_FOUND if rendered.status in (404, 410) else ErrorCode.EXECUTION_FAILED,
                f"{rendered.url} answered HTTP {rendered.status}; check the URL.",
                status=rendered.status,
            )
        html = rendered.html
        limit = self.http.max_bytes  # a script can grow the document past what any response carried
        cut = len(html) > limit
        extracted = extract(html[:limit], "text/html", rendered.url)
        if not extracted.title:
            extracted.title = rendered.title
        page = _page(url, rendered.url, rendered.status, extracted, "browser", rendered.content_type)
        page.bytes_read = min(len(html), limit)
        page.truncated_body = cut
        if cut:
            page.notes.append(f"the rendered document was cut at {limit} characters (max_page_bytes)")
        page.screenshot = rendered.screenshot
        page.blocked_requests = rendered.blocked
        return page


def _page(url: str, final_url: str, status: int | None, extracted: Extracted, how: str, content_type: str) -> Page:
    return Page(
        url=url,
        final_url=final_url,
        status=status,
        title=extracted.title,
        text=extracted.text,
        links=extracted.links,
        images=extracted.images,
        kind=extracted.kind,
        rendered_with="browser" if how == "browser" else "http",
        content_type=content_type,
        fetched_at=time.time(),
        bytes_read=0,
    )


def _mask_secrets(page: Page) -> None:
    """`page`'s texts with their secret values masked (see the module docstring), and a note saying how many."""
    page.title, in_title = mask_text(page.title)
    page.text, in_text = mask_text(page.text)
    masked = in_title + in_text
    for link in page.links:
        link.url, in_url = mask_text(link.url)
        link.text, in_link = mask_text(link.text)
        masked += in_url + in_link
    for image in page.images:
        image.url, in_url = mask_text(image.url)
        image.alt, in_alt = mask_text(image.alt)
        masked += in_url + in_alt
    if masked:
        page.notes.append(
            f"{masked} secret value{'s' if masked > 1 else ''} masked: a page served from this machine is masked as a "
            "file read from the project is"
        )


def _is_textual(content_type: str) -> bool:
    return content_type != "application/pdf" and (
        content_type.startswith("text/")
        or content_type in HTML_TYPES
        or "json" in content_type
        or "xml" in content_type
        or not content_type
    )
