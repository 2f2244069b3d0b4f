"""search_web against stand-in SearXNG and Brave servers on 127.0.0.1, providers that cannot be reached (a host name
that does not resolve, a port on 127.0.0.1 that refuses connections, ddgs through such a proxy), and without any
provider."""

from __future__ import annotations

import importlib.util
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from mcp import Client

from mcp_sections.servers.registry import load_section
from mcp_sections.servers.web_ops.search import BraveProvider, DdgsProvider, choose_provider
from mcp_sections.shared.confinement.guards.urls import AllowList, UrlGuard
from mcp_sections.shared.ground.errors import ToolFailure
from mcp_sections.shared.net.fetch import GuardedHttp
from mcp_sections.shared.serving.server import build_server
from mcp_sections.shared.settings.config import Settings
from tests.http_stand_in import ScriptedHandler, serving
from tests.stdio import call, fail

pytestmark = pytest.mark.anyio


class StandIn:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.status = 200


@pytest.fixture(scope="module")
def stand_in() -> Iterator[tuple[StandIn, int]]:
    record = StandIn()

    class Handler(ScriptedHandler):
        def do_GET(self) -> None:
            record.requests.append((self.path, dict(self.headers)))
            query = parse_qs(urlsplit(self.path).query)
            s = "s\u200b"  # a hidden character, removed from snippets
            if urlsplit(self.path).path == "/search":  # SearXNG
                body = {
                    "results": [
                        {"title": f"Result {n} for {query['q'][0]}", "url": f"https://example.org/{n}", "content": s}
                        for n in range(8)
                    ]
                }
            else:  # Brave
                body = {"web": {"results": [{"title": "Brave hit", "url": "https://example.net/", "description": "d"}]}}
            self.answer_json(record.status, body)

    with serving(Handler) as port:
        yield record, port


def _client(tmp_path: Path, **web_ops: object) -> Client:
    section = load_section("web_ops")
    settings = Settings.load({"data_dir": str(tmp_path), "warm_up": False, "sections": {"web_ops": web_ops}})
    server, _ = build_server(section, section.runtime(settings))
    return Client(server)


async def test_searxng_results_come_back_trimmed_and_cleaned(stand_in: tuple[StandIn, int], tmp_path: Path) -> None:
    record, port = stand_in
    async with _client(tmp_path, searxng_url=f"http://127.0.0.1:{port}") as client:
        found = await call(client, "search_web", query="tide tables", limit=3)
    assert found["provider"] == "searxng" and found["count"] == 3
    assert found["results"][0] == {
        "title": "Result 0 for tide tables",
        "url": "https://example.org/0",
        "snippet": "s",
        "source": "searxng",
    }
    path, _ = record.requests[-1]
    assert parse_qs(urlsplit(path).query) == {"q": ["tide tables"], "format": ["json"]}


async def test_provider_errors_are_coded(stand_in: tuple[StandIn, int], tmp_path: Path) -> None:
    record, port = stand_in
    record.status = 429
    try:
        async with _client(tmp_path, searxng_url=f"http://127.0.0.1:{port}") as client:
            message = await fail(client, "search_web", "EXECUTION_FAILED", query="x")
    finally:
        record.status = 200
    assert "rate limited" in message


async def test_brave_sends_its_key_and_reads_web_results(stand_in: tuple[StandIn, int]) -> None:
    record, port = stand_in
    http = GuardedHttp(UrlGuard(AllowList.parse([f"127.0.0.1:{port}"])), user_agent="test")
    try:
        brave = BraveProvider(http, "key-123", endpoint=f"http://127.0.0.1:{port}/res/v1/web/search")
        hits = await brave.search("q", 5)
    finally:
        await http.aclose()
    assert [(h.title, h.url, h.source) for h in hits] == [("Brave hit", "https://example.net/", "brave")]
    assert record.requests[-1][1]["X-Subscription-Token"] == "key-123"


async def test_auto_picks_what_is_configured_and_names_the_settings_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    http = GuardedHttp(UrlGuard(), user_agent="test")
    try:
        monkeypatch.setenv("MY_BRAVE", "k")
        assert choose_provider("auto", http=http, searxng_url=None, brave_api_key_env="MY_BRAVE").name == "brave"
        monkeypatch.delenv("MY_BRAVE")
        chosen = choose_provider("auto", http=http, searxng_url=None, brave_api_key_env="MY_BRAVE")
        assert isinstance(chosen, DdgsProvider)
        monkeypatch.setattr("mcp_sections.servers.web_ops.search._ddgs_installed", lambda: False)
        with pytest.raises(ToolFailure) as caught:
            choose_provider("auto", http=http, searxng_url=None, brave_api_key_env="MY_BRAVE")
        assert caught.value.code == "DEPENDENCY_ERROR"
        assert "searxng_url" in caught.value.message and "MY_BRAVE" in caught.value.message
        with pytest.raises(ToolFailure) as caught:
            choose_provider("searxng", http=http, searxng_url=None, brave_api_key_env="MY_BRAVE")
        assert "MCP_SECTIONS_WEB_OPS_SEARXNG_URL" in caught.value.message
    finally:
        await http.aclose()


def _refusing_port() -> int:
    """A port on 127.0.0.1 where nothing listens: connections are refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _says_what_to_configure(message: str) -> None:
    for provider_setting in (
        "SearXNG",
        "MCP_SECTIONS_WEB_OPS_SEARXNG_URL",
        "Brave Search API",
        "BRAVE_API_KEY",
        "ddgs",
    ):
        assert provider_setting in message, provider_setting


async def test_a_searxng_that_cannot_be_reached_says_what_failed_and_what_to_configure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #23: without internet, search_web answered with the provider's raw DNS error."""
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    cases = {
        "http://searxng.invalid:8080": "the host 'searxng.invalid' could not be resolved",  # RFC 6761: never resolves
        f"http://127.0.0.1:{_refusing_port()}": "could not connect to http://127.0.0.1:",
    }
    for url, failure in cases.items():
        async with _client(tmp_path, searxng_url=url) as client:
            message = await fail(client, "search_web", "DEPENDENCY_ERROR", query="tide tables")
        assert message.startswith(f"web search failed: cannot reach the SearXNG instance at {url} ("), message
        assert "check that it runs and [sections.web_ops] searxng_url." in message, message
        assert failure in message and "check the URL" not in message, message
        _says_what_to_configure(message)
        assert "Configured here: searxng" in message


@pytest.mark.skipif(importlib.util.find_spec("ddgs") is None, reason="ddgs is not installed")
async def test_ddgs_without_a_network_says_what_failed_and_what_to_configure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ddgs through a proxy (its own DDGS_PROXY) whose name does not resolve, then one that refuses connections:
    what a machine without DNS or without a route out meets."""
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    cases = {
        "http://proxy.invalid:3128": "could not reach the search engines: the host name proxy.invalid does not resolve",
        f"http://127.0.0.1:{_refusing_port()}": "could not reach the search engines: the connection failed",
    }
    for proxy, failure in cases.items():
        monkeypatch.setenv("DDGS_PROXY", proxy)
        async with _client(tmp_path, searxng_url=f"http://127.0.0.1:{_refusing_port()}") as client:
            message = await fail(client, "search_web", "DEPENDENCY_ERROR", query="tide tables", provider="ddgs")
        assert message.startswith("web search failed: ddgs (no key") and failure in message, message
        assert "no internet access or no DNS" in message
        assert "DNSError" not in message and "Query {" not in message and "os error" not in message  # nothing raw
        _says_what_to_configure(message)
        assert "Configured here: searxng, ddgs; call again with provider='searxng'" in message
