"""fetch_web_page against the local site, in memory, with the real Chromium: content, rendering, caps, crawls."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.servers.registry import load_section
from mcp_sections.shared.serving.server import build_server
from tests.stdio import call, fail
from tests.web_ops.conftest import web_settings
from tests.web_ops.site import CRAWL_PAGES, Site

pytestmark = pytest.mark.anyio


async def test_a_static_page_comes_over_http_as_markdown_without_navigation(web: Client, site: Site) -> None:
    page = await call(web, "fetch_web_page", url=site.url("/static.html"), extract_links=True, extract_images=True)
    assert page["rendered_with"] == "http"
    assert page["title"] == "The lighthouse"
    assert page["text"].startswith("# The lighthouse")
    assert "lighthouse keeper wrote in the logbook" in page["text"]
    assert "© The test site" not in page["text"]  # boilerplate (footer) dropped
    links = {link["url"] for link in page["links"]}
    assert site.url("/about.html") in links and "https://example.org/elsewhere" in links
    assert page["images"] == [{"url": site.url("/logo.png"), "alt": "Lighthouse logo"}]
    assert page["untrusted"].startswith("Untrusted content")
    assert page["total_pages_fetched"] == 1 and page["children"] is None


async def test_a_script_rendered_page_goes_to_the_browser_whose_requests_all_pass_the_guard(
    web: Client, site: Site
) -> None:
    page = await call(web, "fetch_web_page", url=site.url("/js.html"))
    assert page["rendered_with"] == "browser"
    assert "Rendered by script" in page["text"] and "harbour master counts the boats" in page["text"]
    blocked = " ".join(page["blocked_requests"])
    assert "169.254.169.254" in blocked and f"127.0.0.1:{site.canary_port}" in blocked
    assert "WebSockets are not opened" in blocked
    assert site.canary_hits == []  # not the fetch(), the image, the iframe, nor the WebSocket


async def test_screenshot_comes_as_image_content(web: Client, site: Site) -> None:
    result = await web.call_tool("fetch_web_page", {"url": site.url("/about.html"), "screenshot": True})
    assert not result.is_error
    images = [block for block in result.content if block.type == "image"]
    assert len(images) == 1 and images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data).startswith(b"\x89PNG")


async def test_redirects_are_followed_and_each_hop_is_checked(web: Client, site: Site) -> None:
    page = await call(web, "fetch_web_page", url=site.url("/redirect"), force=True)
    assert page["final_url"] == site.url("/static.html")
    message = await fail(web, "fetch_web_page", "PERMISSION_DENIED", url=site.url("/redirect-to-canary"))
    assert "loopback" in message
    message = await fail(web, "fetch_web_page", "PERMISSION_DENIED", url=site.url("/redirect-to-metadata"))
    assert "metadata" in message
    message = await fail(web, "fetch_web_page", "EXECUTION_FAILED", url=site.url("/loop0"))
    assert "more than 5 redirects" in message
    assert site.canary_hits == []


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{canary}/",
        "http://localhost:{canary}/",
        "http://2130706433:{canary}/",
        "http://0x7f.1:{canary}/",
        "http://[::ffff:127.0.0.1]:{canary}/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.1.2.3/",
        "http://metadata.google.internal/",
    ],
)
async def test_private_and_metadata_addresses_are_refused(web: Client, site: Site, url: str) -> None:
    await fail(web, "fetch_web_page", "PERMISSION_DENIED", url=url.format(canary=site.canary_port))
    assert site.canary_hits == []


@pytest.mark.parametrize(
    ("url", "fragment"),
    [("file:///etc/passwd", "only http and https"), ("http://user:pw@127.0.0.1/", "credentials"), ("/x", "relative")],
)
async def test_urls_that_are_not_web_urls_are_invalid_input(web: Client, url: str, fragment: str) -> None:
    assert fragment in await fail(web, "fetch_web_page", "INVALID_INPUT", url=url)


async def test_slow_and_huge_pages_stay_bounded(web: Client, site: Site, tmp_path: Path) -> None:
    section = load_section("web_ops")  # a page timeout of 1 s (the module's section allows 3 s, for Chromium)
    server, _ = build_server(section, section.runtime(web_settings(site, tmp_path / "data", timeout_seconds=1)))
    async with Client(server) as impatient:
        assert "did not answer within 1 s" in await fail(impatient, "fetch_web_page", "TIMEOUT", url=site.url("/slow"))
    page = await call(web, "fetch_web_page", url=site.url("/huge"), render="http", max_chars=1000)
    assert any("cut at 1000000 bytes" in note for note in page["notes"])
    assert page["text_truncated"] and len(page["text"]) == 1000


async def test_a_document_grown_by_script_is_cut_at_the_page_cap(web: Client, site: Site) -> None:
    page = await call(web, "fetch_web_page", url=site.url("/grow.html"), render="browser")
    assert any("rendered document was cut at 1000000" in note for note in page["notes"])


async def test_json_text_and_pdf_bodies_are_read(web: Client, site: Site) -> None:
    data = await call(web, "fetch_web_page", url=site.url("/data.json"))
    assert data["content_type"] == "application/json" and '"high": "06:12"' in data["text"]
    notes = await call(web, "fetch_web_page", url=site.url("/notes.txt"))
    assert notes["text"] == "Plain notes about the harbour."
    pdf = await call(web, "fetch_web_page", url=site.url("/tides.pdf"))
    assert "Harbour tide table 2026" in pdf["text"]


async def test_hidden_unicode_is_stripped(web: Client, site: Site) -> None:
    page = await call(web, "fetch_web_page", url=site.url("/hidden.html"))
    assert "Visible text with hidden marks" in page["text"]
    assert not any(ch in page["text"] for ch in ("\u200b", "\u202e", "\U000e0049"))


async def test_the_cache_answers_the_same_url_until_forced(web: Client, site: Site) -> None:
    url = site.url("/about.html?cache=1")
    first = await call(web, "fetch_web_page", url=url)
    hits = len(site.hits)
    second = await call(web, "fetch_web_page", url=url.replace("http://127.0.0.1", "HTTP://127.0.0.1") + "#part")
    assert (first["from_cache"], second["from_cache"]) == (False, True) and len(site.hits) == hits
    forced = await call(web, "fetch_web_page", url=url, force=True)
    assert forced["from_cache"] is False and len(site.hits) == hits + 1


async def test_a_crawl_stays_on_site_honours_robots_and_caps(web: Client, site: Site) -> None:
    page = await call(web, "fetch_web_page", url=site.url("/crawl/0.html"), depth=2, max_pages=50)
    urls = [child["final_url"] for child in page["children"]]
    assert page["total_pages_fetched"] == CRAWL_PAGES and len(set(urls)) == CRAWL_PAGES - 1
    assert all(url.startswith(site.url("/crawl/")) for url in urls)
    assert {child["depth"] for child in page["children"]} == {1, 2}
    assert page["skipped"].get("other site") == 1 and page["skipped"].get("robots.txt") == 1
    assert "/private/secret.html" not in site.hits
    assert page["links"] is not None  # links come back by default when crawling


async def test_a_link_trap_stops_at_the_page_cap_and_patterns_filter(web: Client, site: Site) -> None:
    page = await call(web, "fetch_web_page", url=site.url("/trap/1"), depth=3, max_pages=7)
    assert page["total_pages_fetched"] == 7
    assert any("max_pages" in note for note in page["notes"])
    only = await call(
        web, "fetch_web_page", url=site.url("/crawl/0.html"), depth=2, include_patterns=[r"/crawl/[12]\.html$"]
    )
    followed = sorted(child["final_url"] for child in only["children"])
    assert followed == [site.url("/crawl/1.html"), site.url("/crawl/2.html")]
    assert "invalid URL pattern" in await fail(
        web, "fetch_web_page", "INVALID_INPUT", url=site.url("/"), depth=1, exclude_patterns=["("]
    )


async def test_limits_are_in_the_schema(web: Client, site: Site) -> None:
    await fail(web, "fetch_web_page", "INVALID_INPUT", url=site.url("/"), depth=9)
    await fail(web, "fetch_web_page", "INVALID_INPUT", url=site.url("/"), max_pages=500)
    await fail(web, "fetch_web_page", "INVALID_INPUT", url=site.url("/"), render="http", screenshot=True)
    await fail(web, "fetch_web_page", "INVALID_INPUT", url="http://x/" + "a" * 3000)
