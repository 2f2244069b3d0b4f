"""A browser render whose main frame ends on a URL the guard refuses fails with PERMISSION_DENIED, however it got
there (meta refresh, a script setting `location` once the page has loaded, a redirect, a form submitted), and such
a page is neither cached nor ingested. Nothing reaches the refused address.

Regression: a page ending on `<meta http-equiv="refresh" content="0; url=…">` to a refused address answered
success with `wait_for="load"` (the refresh fired after the load event): status 200, `final_url` the refused URL,
and the guard's refusal shown as the page's text; that page went to the cache, and ingest_web_page then stored a
WebPage named after the refused URL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.servers.registry import load_section
from mcp_sections.shared.serving.server import build_server
from mcp_sections.shared.settings.config import Settings
from tests.http_stand_in import ScriptedHandler, Serving
from tests.stdio import call, fail
from tests.web_ops.conftest import web_settings
from tests.web_ops.site import Site

pytestmark = pytest.mark.anyio


def _pages(canary: str) -> dict[str, bytes]:
    """Each page of the site ends, one way or another, on `canary` (a loopback port the guard refuses)."""
    text = "<p>" + "The ferry leaves at noon from the eastern pier. " * 10 + "</p>"
    tls = canary.replace("http://", "https://")

    def after_load(script: str) -> str:
        return f"<script>addEventListener('load', () => setTimeout(() => {{ {script} }}, 0));</script>"

    pages = {
        "/meta-refresh": f'<meta http-equiv="refresh" content="0; url={canary}/status">{text}',
        "/meta-refresh-tls": f"<meta http-equiv=refresh content='0;URL=\"{tls}/tls\"'>{text}",
        "/js-location": after_load(f"location.href = '{canary}/js';") + text,
        "/meta-refresh-allowed": "<meta http-equiv='Refresh' content='0; url=/landing'><p>Redirecting…</p>",
        "/meta-refresh-later": f"<meta http-equiv=refresh content='600; url={canary}/later'>{text}",
        "/landing": f"<h1>Landing</h1>{text}",
        "/form-submit": f"<form method=post action='{canary}/form'><input name=q value=1></form>{text}"
        + after_load("document.forms[0].submit();"),
    }
    return {
        path: f"<!doctype html><html><head><title>Ferry</title></head><body>{body}</body></html>".encode()
        for path, body in pages.items()
    }


@pytest.fixture(scope="module")
def bouncing_site() -> Iterator[Site]:
    site = Site(port=0, canary_port=0)

    class Canary(ScriptedHandler):
        def do_GET(self) -> None:
            site.canary_hits.append(self.path)
            self.answer_bytes(200, b"<title>Status</title><p>inside</p>")

        do_POST = do_GET

    class Bouncing(ScriptedHandler):
        def do_GET(self) -> None:
            site.hits.append(self.path)
            if self.path == "/redirect":
                self.answer_bytes(302, b"", Location=f"{site.canary}/redirected")
            elif self.path in pages:
                self.answer_bytes(200, pages[self.path], "text/html; charset=utf-8")
            else:
                self.answer_bytes(404, b"no", "text/plain")

    with Serving(Canary) as canary, Serving(Bouncing) as server:
        site.canary_port, site.port = canary.port, server.port
        pages = _pages(site.canary)
        yield site
    assert site.canary_hits == []


@pytest.fixture(scope="module")
async def web(bouncing_site: Site, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    section = load_section("web_ops")
    data_dir = tmp_path_factory.mktemp("bounce") / "data"
    server, _ = build_server(section, section.runtime(web_settings(bouncing_site, data_dir)))
    async with Client(server) as client:
        yield client


@pytest.mark.parametrize(
    ("path", "target"),
    [
        ("/meta-refresh", "/status"),
        ("/meta-refresh-tls", ""),  # a refused tunnel: Chromium's error page
        ("/js-location", "/js"),
        ("/form-submit", "/form"),
        ("/redirect", "/redirected"),
    ],
)
async def test_a_page_that_ends_on_a_refused_url_fails_and_is_neither_cached_nor_ingested(
    web: Client, bouncing_site: Site, path: str, target: str
) -> None:
    url = bouncing_site.url(path)
    message = await fail(web, "fetch_web_page", "PERMISSION_DENIED", url=url, render="browser")
    assert f"127.0.0.1:{bouncing_site.canary_port}{target}" in message, message
    assert "loopback" in message and "[sections.web_ops] allow" in message, message
    again = await fail(web, "ingest_web_page", "PERMISSION_DENIED", url=url, render="browser", project_name="ferry")
    assert f"127.0.0.1:{bouncing_site.canary_port}" in again
    assert bouncing_site.canary_hits == []


async def test_ingest_after_a_refused_render_stores_the_page_asked_for_not_the_refused_one(
    bouncing_site: Site, tmp_path: Path
) -> None:
    """As the tester did: a browser render, then ingest_web_page of the same URL (render auto: the cache first)."""
    data_dir = tmp_path / "data"
    section = load_section("web_ops")
    server, _ = build_server(section, section.runtime(web_settings(bouncing_site, data_dir)))
    url = bouncing_site.url("/meta-refresh")
    async with Client(server) as web:
        await fail(web, "fetch_web_page", "PERMISSION_DENIED", url=url, render="browser")
        ingested = await call(web, "ingest_web_page", url=url, project_name="ferry")
    assert ingested["url"] == url and [page["url"] for page in ingested["children"]] == [url]
    rag = load_section("rag_ops")
    settings = Settings.load(
        {"data_dir": str(data_dir), "warm_up": False, "sections": {"rag_ops": {"embeddings": False}}}
    )
    server, _ = build_server(rag, rag.runtime(settings))
    async with Client(server) as client:
        found = await call(client, "brain_search", query="ferry eastern pier", semantic=False, all_projects=True)
    assert {hit["path"] for hit in found["results"]} == {url}, found
    assert bouncing_site.canary_hits == []


async def test_a_refresh_due_now_is_followed_and_one_due_later_is_not(web: Client, bouncing_site: Site) -> None:
    """A browser follows `refresh 0` as a redirect, so the render ends where it leads; one due in ten minutes is
    not waited for (the page is read as it is)."""
    followed = await call(web, "fetch_web_page", url=bouncing_site.url("/meta-refresh-allowed"), render="browser")
    assert followed["final_url"] == bouncing_site.url("/landing") and followed["text"].startswith("# Landing")
    later = await call(web, "fetch_web_page", url=bouncing_site.url("/meta-refresh-later"), render="browser")
    assert later["final_url"] == bouncing_site.url("/meta-refresh-later") and "eastern pier" in later["text"]
    assert bouncing_site.canary_hits == []


async def test_over_plain_http_a_refused_redirect_names_its_target_too(web: Client, bouncing_site: Site) -> None:
    message = await fail(web, "fetch_web_page", "PERMISSION_DENIED", url=bouncing_site.url("/redirect"), render="http")
    assert f"redirects to http://127.0.0.1:{bouncing_site.canary_port}/redirected" in message, message
    assert "[sections.web_ops] allow" in message
    assert bouncing_site.canary_hits == []
