"""A crawl says what its caps left: the links not followed because of `max_pages` (and the crawl says it stopped
at the limit) or of `depth` are counted in `skipped`, like those of another site or refused by robots.txt.

Regression: `fetch_web_page {"url": ".../", "depth": 3, "max_pages": 2}` on a directory listing served by
`python -m http.server` returned 2 pages and `skipped: {}` though three links were left unfollowed.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterator
from http.server import SimpleHTTPRequestHandler

import pytest
from mcp import Client

from mcp_sections.servers.registry import load_section
from mcp_sections.shared.serving.server import build_server
from tests.http_stand_in import Serving
from tests.stdio import call
from tests.web_ops.conftest import web_settings
from tests.web_ops.site import ARTICLE, Site

pytestmark = pytest.mark.anyio
NAMES = ("a.html", "b.html", "c.html", "d.html")


class QuietFiles(SimpleHTTPRequestHandler):
    """`python -m http.server`'s handler: files and directory listings, `Content-type: text/html` (no charset)."""

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def listing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A directory of four pages (each linking back to its listing) and a chain of three pages."""
    root = tmp_path_factory.mktemp("served")
    (root / "pages").mkdir()
    for name in NAMES:
        (root / "pages" / name).write_text(f"<title>{name}</title><a href='/pages/'>up</a><p>{name}: {ARTICLE}</p>")
    (root / "chain").mkdir()
    for n in range(3):
        link = f"<a href='/chain/{n + 1}.html'>next</a>" if n < 2 else ""
        (root / "chain" / f"{n}.html").write_text(f"<title>Chain {n}</title><p>{ARTICLE}</p>{link}")
    site = Site(port=0, canary_port=0)
    with Serving(functools.partial(QuietFiles, directory=str(root))) as served:  # type: ignore[arg-type]
        site.port = served.port
        yield site


@pytest.fixture(scope="module")
async def web(listing: Site, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    section = load_section("web_ops")
    data_dir = tmp_path_factory.mktemp("crawl") / "data"
    server, _ = build_server(section, section.runtime(web_settings(listing, data_dir)))
    async with Client(server) as client:
        yield client


async def test_links_left_at_max_pages_are_counted_and_the_crawl_says_it_stopped(web: Client, listing: Site) -> None:
    page = await call(web, "fetch_web_page", url=listing.url("/pages/"), depth=3, max_pages=2, force=True)
    assert page["total_pages_fetched"] == 2
    assert page["skipped"] == {"max_pages": 3}, page["skipped"]
    assert any("stopped at max_pages (2): 3 links not followed" in note for note in page["notes"]), page["notes"]
    one = await call(web, "fetch_web_page", url=listing.url("/pages/"), depth=1, max_pages=1)
    assert one["total_pages_fetched"] == 1 and one["skipped"] == {"max_pages": 4}, one
    assert any("stopped at max_pages (1): 4 links not followed" in note for note in one["notes"])


async def test_ingest_says_so_too(web: Client, listing: Site) -> None:
    ingested = await call(
        web, "ingest_web_page", url=listing.url("/pages/"), depth=2, max_pages=3, project_name="served"
    )
    assert ingested["pages_ingested"] == 3 and ingested["skipped"] == {"max_pages": 2}, ingested
    assert "The crawl stopped at max_pages (3): 2 links not followed" in ingested["message"]


async def test_a_crawl_within_its_caps_says_nothing_of_them_and_counts_what_depth_left(
    web: Client, listing: Site
) -> None:
    whole = await call(web, "fetch_web_page", url=listing.url("/pages/"), depth=1, max_pages=10)
    assert whole["total_pages_fetched"] == 5 and whole["skipped"] == {}, whole["skipped"]
    assert not any("max_pages" in note for note in whole["notes"])
    shallow = await call(web, "fetch_web_page", url=listing.url("/chain/0.html"), depth=1, max_pages=10)
    assert shallow["total_pages_fetched"] == 2 and shallow["skipped"] == {"depth": 1}, shallow["skipped"]
    assert not any("max_pages" in note for note in shallow["notes"])
