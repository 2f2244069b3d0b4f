"""Web search behind one small interface: SearXNG (self-hosted, JSON API), Brave Search API, or `ddgs` (no key).

`choose_provider` picks what is configured (auto: SearXNG when its URL is set, else Brave when its key variable
is set, else ddgs when installed) and otherwise fails with a DEPENDENCY_ERROR naming the settings. SearXNG and
Brave are asked through the guarded HTTP client, the configured SearXNG endpoint being opened explicitly (it
usually lives on a private network); ddgs uses its own client towards fixed public search engines.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlencode

from mcp_sections.servers.web_ops.extraction import strip_invisible
from mcp_sections.shared.errors import ErrorCode, ToolFailure
from mcp_sections.shared.install_hints import install_hint
from mcp_sections.shared.web_fetch import GuardedHttp

BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"


@dataclass
class SearchHit:
    title: str
    url: str
    snippet: str
    source: str


class SearchProvider(Protocol):
    name: str

    async def search(self, query: str, limit: int) -> list[SearchHit]: ...


class SearxngProvider:
    name = "searxng"

    def __init__(self, http: GuardedHttp, base_url: str) -> None:
        self.http = http
        self.base_url = base_url.rstrip("/")

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        url = f"{self.base_url}/search?{urlencode({'q': query, 'format': 'json'})}"
        data = await _json(self.http, url, {"Accept": "application/json"}, self.name)
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise _provider_error(self.name, "the answer has no `results` list (is the JSON format enabled?)")
        return [
            _hit(r.get("title"), r.get("url"), r.get("content"), self.name) for r in results if isinstance(r, dict)
        ][:limit]


class BraveProvider:
    name = "brave"

    def __init__(self, http: GuardedHttp, api_key: str, endpoint: str = BRAVE_URL) -> None:
        self.http = http
        self.api_key = api_key
        self.endpoint = endpoint

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        url = f"{self.endpoint}?{urlencode({'q': query, 'count': min(limit, 20)})}"
        headers = {"Accept": "application/json", "X-Subscription-Token": self.api_key}
        data = await _json(self.http, url, headers, self.name)
        web = data.get("web", {}) if isinstance(data, dict) else {}
        results = web.get("results", []) if isinstance(web, dict) else []
        hits = [
            _hit(r.get("title"), r.get("url"), r.get("description"), self.name) for r in results if isinstance(r, dict)
        ]
        return hits[:limit]


class DdgsProvider:
    name = "ddgs"

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        import anyio.to_thread

        def run() -> list[dict[str, str]]:
            from ddgs import DDGS

            return list(DDGS().text(query, max_results=limit) or [])

        try:
            results = await anyio.to_thread.run_sync(run)
        except Exception as exc:  # ddgs raises its own exception types for network and rate limits
            raise _provider_error(self.name, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
        return [_hit(r.get("title"), r.get("href"), r.get("body"), self.name) for r in results][:limit]


def choose_provider(
    requested: str, *, http: GuardedHttp, searxng_url: str | None, brave_api_key_env: str
) -> SearchProvider:
    """The provider to ask; DEPENDENCY_ERROR naming the settings when none is configured."""
    brave_key = os.environ.get(brave_api_key_env, "").strip()
    if requested in ("searxng", "auto") and searxng_url:
        return SearxngProvider(http, searxng_url)
    if requested in ("brave", "auto") and brave_key:
        return BraveProvider(http, brave_key)
    if requested in ("ddgs", "auto") and _ddgs_installed():
        return DdgsProvider()
    needs = {
        "searxng": "set `[sections.web_ops] searxng_url` (MCP_SECTIONS_WEB_OPS_SEARXNG_URL)",
        "brave": f"set the {brave_api_key_env} environment variable to a Brave Search API key",
        "ddgs": install_hint("web"),
    }
    if requested != "auto":
        raise ToolFailure(
            ErrorCode.DEPENDENCY_ERROR, f"search provider {requested!r} is not configured: {needs[requested]}."
        )
    raise ToolFailure(
        ErrorCode.DEPENDENCY_ERROR,
        "no search provider is configured: " + "; or ".join(needs.values()) + ".",
    )


async def _json(http: GuardedHttp, url: str, headers: dict[str, str], name: str) -> object:
    import json

    response = await http.get(url, headers=headers, max_bytes=2_000_000)
    if response.status in (401, 403):
        raise _provider_error(name, f"HTTP {response.status}: the key or the instance refused the query")
    if response.status == 429:
        raise _provider_error(name, "HTTP 429: rate limited; wait before searching again")
    if response.status >= 400:
        raise _provider_error(name, f"HTTP {response.status}")
    try:
        return json.loads(response.text())
    except ValueError:
        raise _provider_error(name, "the answer is not JSON") from None


def _hit(title: object, url: object, snippet: object, source: str) -> SearchHit:
    return SearchHit(
        title=strip_invisible(str(title or ""))[:300],
        url=str(url or "")[:2048],
        snippet=strip_invisible(str(snippet or ""))[:1000],
        source=source,
    )


def _provider_error(name: str, detail: str) -> ToolFailure:
    return ToolFailure(ErrorCode.EXECUTION_FAILED, f"the {name} search provider failed: {detail}.")


def _ddgs_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("ddgs") is not None
