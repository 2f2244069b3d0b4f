"""Web search behind one small interface: SearXNG (self-hosted, JSON API), Brave Search API, or `ddgs` (no key).

`choose_provider` picks what is configured (auto: SearXNG when its URL is set, else Brave when its key variable
is set, else ddgs when installed) and otherwise fails with a DEPENDENCY_ERROR naming the settings. SearXNG and
Brave are asked through the guarded HTTP client, the configured SearXNG endpoint being opened explicitly (it
usually lives on a private network); ddgs uses its own client towards fixed public search engines.

`search` runs the chosen provider. A provider that cannot be reached at all (its host name does not resolve,
nothing answers, no route: no internet here) fails with DEPENDENCY_ERROR saying what failed, what to check and
which providers can be configured instead (`providers_help`); a timeout is TIMEOUT naming timeout_seconds and an
error the provider answers stays EXECUTION_FAILED, both with the same list. SearXNG and Brave failing to answer are
coded as every remote service's (`shared.net.model_api.Service`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlencode

from mcp_sections.servers.web_ops.extraction import strip_invisible
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.ground.install_hints import install_hint
from mcp_sections.shared.net.fetch import GuardedHttp, TimedOut, Unreachable
from mcp_sections.shared.net.model_api import ModelApiFailure, Service

BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"
SETTINGS = "[sections.web_ops] "
TIMEOUT_SETTING = f"{SETTINGS}timeout_seconds"  # the guarded client's, which asks SearXNG and Brave


@dataclass
class SearchHit:
    title: str
    url: str
    snippet: str
    source: str


class SearchProvider(Protocol):
    name: str

    @property
    def label(self) -> str:
        """What to call it in a message: the provider and where it is asked."""
        ...

    async def search(self, query: str, limit: int) -> list[SearchHit]: ...


class SearchFailure(ToolFailure):
    """A provider failed, told after its label; `search` adds which providers can be configured to the message."""


class SearxngProvider:
    name = "searxng"

    def __init__(self, http: GuardedHttp, base_url: str) -> None:
        self.http = http
        self.base_url = base_url.rstrip("/")
        fix = f"check that it runs and {SETTINGS}searxng_url"
        self.service = Service("the SearXNG instance", self.base_url, fix, TIMEOUT_SETTING)

    @property
    def label(self) -> str:
        return f"the SearXNG instance at {self.base_url} (searxng_url)"

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        url = f"{self.base_url}/search?{urlencode({'q': query, 'format': 'json'})}"
        data = await _json(self.http, self.service, url, {"Accept": "application/json"})
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise _answered("without a `results` list (is its JSON format enabled?)")
        return [
            _hit(r.get("title"), r.get("url"), r.get("content"), self.name) for r in results if isinstance(r, dict)
        ][:limit]


class BraveProvider:
    name = "brave"

    def __init__(self, http: GuardedHttp, api_key: str, endpoint: str = BRAVE_URL) -> None:
        self.http = http
        self.api_key = api_key
        self.endpoint = endpoint
        fix = "check that this server can reach the internet"
        self.service = Service("the Brave Search API", endpoint, fix, TIMEOUT_SETTING)

    @property
    def label(self) -> str:
        return f"the Brave Search API at {self.endpoint}"

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        url = f"{self.endpoint}?{urlencode({'q': query, 'count': min(limit, 20)})}"
        headers = {"Accept": "application/json", "X-Subscription-Token": self.api_key}
        data = await _json(self.http, self.service, url, headers)
        web = data.get("web", {}) if isinstance(data, dict) else {}
        results = web.get("results", []) if isinstance(web, dict) else []
        hits = [
            _hit(r.get("title"), r.get("url"), r.get("description"), self.name) for r in results if isinstance(r, dict)
        ]
        return hits[:limit]


class DdgsProvider:
    name = "ddgs"
    label = "ddgs (no key: DuckDuckGo, Bing, Brave, Mojeek and others through the ddgs package)"

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        import anyio.to_thread

        def run() -> list[dict[str, str]]:
            from ddgs import DDGS

            return list(DDGS().text(query, max_results=limit) or [])

        try:
            results = await anyio.to_thread.run_sync(run)
        except Exception as exc:  # ddgs raises its own exception types for network and rate limits
            raise _ddgs_failure(exc) from None
        return [_hit(r.get("title"), r.get("href"), r.get("body"), self.name) for r in results][:limit]


async def search(
    provider: SearchProvider, query: str, limit: int, *, searxng_url: str | None, brave_api_key_env: str
) -> list[SearchHit]:
    """`provider.search`, its failures saying what failed and which providers can be configured instead."""
    try:
        return await provider.search(query, limit)
    except (SearchFailure, ModelApiFailure) as failure:  # ModelApiFailure: its service's, naming it (`_json`)
        said = f"{provider.label} {failure.message}" if isinstance(failure, SearchFailure) else failure.message
        raise ToolFailure(
            failure.code,
            f"web search failed: {said.rstrip('.')}. "
            + providers_help(provider.name, searxng_url=searxng_url, brave_api_key_env=brave_api_key_env),
        ) from None


def providers_help(failed: str, *, searxng_url: str | None, brave_api_key_env: str) -> str:
    """The providers search_web can use, how each is configured, and which are configured here."""
    configured = [
        name
        for name, ready in (
            ("searxng", bool(searxng_url)),
            ("brave", bool(os.environ.get(brave_api_key_env, "").strip())),
            ("ddgs", _ddgs_installed()),
        )
        if ready
    ]
    others = [name for name in configured if name != failed]
    return (
        "Search providers: a SearXNG instance (self-hosted, also on a private network: `[sections.web_ops] "
        "searxng_url` or MCP_SECTIONS_WEB_OPS_SEARXNG_URL, its JSON format enabled), the Brave Search API (a key in "
        f"the {brave_api_key_env} environment variable), or ddgs (no key, needs the public search engines: pip "
        "install ddgs); `search_provider` (MCP_SECTIONS_WEB_OPS_SEARCH_PROVIDER) picks one. Configured here: "
        + (", ".join(configured) or "none")
        + (f"; call again with provider={others[0]!r} to use another." if others else ".")
    )


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


async def _json(http: GuardedHttp, service: Service, url: str, headers: dict[str, str]) -> object:
    """The JSON `service` answered at `url`; failing to reach it is coded as the service's (`Service.failed`)."""
    import json

    try:
        response = await http.get(url, headers=headers, max_bytes=2_000_000)
    except (Unreachable, TimedOut) as failure:
        raise service.failed(failure) from None
    except ToolFailure as failure:  # the URL guard refused it, or its answer could not be decoded
        raise SearchFailure(failure.code, f"failed: {failure.message.rstrip('.')}") from None
    if response.status in (401, 403):
        raise _answered(f"HTTP {response.status}: the key or the instance refused the query")
    if response.status == 429:
        raise _answered("HTTP 429: rate limited; wait before searching again")
    if response.status >= 400:
        raise _answered(f"HTTP {response.status}")
    try:
        return json.loads(response.text())
    except ValueError:
        raise _answered("with something that is not JSON") from None


def _hit(title: object, url: object, snippet: object, source: str) -> SearchHit:
    return SearchHit(
        title=strip_invisible(str(title or ""))[:300],
        url=str(url or "")[:2048],
        snippet=strip_invisible(str(snippet or ""))[:1000],
        source=source,
    )


def _answered(detail: str) -> SearchFailure:
    return SearchFailure(ErrorCode.EXECUTION_FAILED, f"answered {detail}")


NO_NETWORK = "; this machine may have no internet access or no DNS"


def _ddgs_failure(exc: Exception) -> SearchFailure:
    """ddgs' exception, classified by what its HTTP client (primp) says: a name not resolved, a connection refused
    or without a route, a time-out, or an error of the engines themselves."""
    text = f"{type(exc).__name__}: {exc}"
    lowered = text.lower()
    if "dns" in lowered or "resolv" in lowered:
        name = re.search(r'Name\("([^"]+?)\.?"\)', text) or re.search(r"https?://([^/\s)'\"]+)", text)
        which = f"the host name {name.group(1)} does not resolve" if name else "host names do not resolve"
        return SearchFailure(ErrorCode.DEPENDENCY_ERROR, f"could not reach the search engines: {which}{NO_NETWORK}")
    if any(sign in lowered for sign in ("connecterror", "connection refused", "unreachable", "os error 11")):
        return SearchFailure(
            ErrorCode.DEPENDENCY_ERROR, f"could not reach the search engines: the connection failed{NO_NETWORK}"
        )
    if "timed out" in lowered or "timeout" in lowered:
        return SearchFailure(ErrorCode.TIMEOUT, "did not get an answer from the search engines in time")
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return SearchFailure(ErrorCode.EXECUTION_FAILED, f"failed: {first[:300]}")


def _ddgs_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("ddgs") is not None
