"""Pages read over plain HTTP are decoded as a browser decodes them: a BOM, the header's charset, then the
`<meta>` declaration in the first 1024 bytes, else UTF-8 or windows-1252 (`shared/net/encoding.py`).

Regression: a server that sends `Content-Type: text/html` without a charset (as `python -m http.server` does) for a
page declaring `<meta charset="iso-8859-1">` came back with U+FFFD for every accented letter over HTTP (the browser
read it right), and ingest_web_page stored that garbage: `HttpResponse.text()` tried the header, then UTF-8, and
never looked at the page's own declaration.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.servers.registry import load_section
from mcp_sections.shared.net.fetch import HttpResponse
from mcp_sections.shared.serving.server import build_server
from mcp_sections.shared.settings.config import Settings
from tests.http_stand_in import ScriptedHandler, serving
from tests.stdio import call
from tests.web_ops.conftest import web_settings
from tests.web_ops.site import Site

pytestmark = pytest.mark.anyio
LEGACY = "Café naïve résumé, 5 £, 20°C"
RUSSIAN = "Съешь же ещё этих мягких французских булок"


def _html(head: str, body: str) -> str:
    return (
        f"<!doctype html><html><head>{head}<title>Menu</title></head>"
        f"<body><main><h1>Menu</h1><p>{body}</p></main></body></html>"
    )


#: path -> (body, Content-Type as sent)
PAGES: dict[str, tuple[bytes, str]] = {
    "/meta-charset.html": (_html('<meta charset="iso-8859-1">', LEGACY).encode("latin-1"), "text/html"),
    "/http-equiv.html": (
        _html('<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">', LEGACY).encode("cp1252"),
        "text/html",
    ),
    "/late-meta.html": (  # a comment and an attribute that merely contain `<meta charset=…>` are not declarations
        _html('<!-- <meta charset="utf-8"> --><link title="<meta charset=utf-8>"><meta charset=latin1>', LEGACY).encode(
            "latin-1"
        ),
        "text/html",
    ),
    "/koi8.html": (
        _html("<META CONTENT='text/html; charset=KOI8-R' HTTP-EQUIV=content-type>", RUSSIAN).encode("koi8-r"),
        "text/html",
    ),
    "/undeclared.html": (_html("", LEGACY).encode("cp1252"), "text/html"),
    "/bom.html": (b"\xef\xbb\xbf" + _html('<meta charset="iso-8859-1">', LEGACY).encode(), "text/html"),
    "/header-wins.html": (_html('<meta charset="iso-8859-1">', LEGACY).encode(), "text/html; charset=utf-8"),
}


def _handler(hits: list[str]) -> type[ScriptedHandler]:
    class Handler(ScriptedHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            if self.path in PAGES:
                body, content_type = PAGES[self.path]
                self.answer_bytes(200, body, content_type)
            else:
                self.answer_bytes(404, b"no", "text/plain")

    return Handler


@pytest.fixture(scope="module")
def legacy_site() -> Iterator[Site]:
    site = Site(port=0, canary_port=0)
    with serving(_handler(site.hits)) as port:
        site.port = port
        yield site


def _client(site: Site, data_dir: Path) -> Client:
    section = load_section("web_ops")
    server, _ = build_server(section, section.runtime(web_settings(site, data_dir)))
    return Client(server)


@pytest.mark.parametrize("path", sorted(PAGES))
async def test_a_page_over_http_is_read_in_the_encoding_it_declares(
    legacy_site: Site, tmp_path: Path, path: str
) -> None:
    async with _client(legacy_site, tmp_path / "data") as web:
        page = await call(web, "fetch_web_page", url=legacy_site.url(path), render="http")
    expected = RUSSIAN if path == "/koi8.html" else LEGACY
    assert expected in page["text"] and "\ufffd" not in page["text"], page["text"]


async def test_http_and_the_browser_read_the_same_text_and_ingest_stores_it(legacy_site: Site, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    url = legacy_site.url("/meta-charset.html")
    async with _client(legacy_site, data_dir) as web:
        over_http = await call(web, "fetch_web_page", url=url, render="http")
        in_browser = await call(web, "fetch_web_page", url=url, render="browser")
        ingested = await call(web, "ingest_web_page", url=url, project_name="legacy")  # from the cache: the http page
    assert over_http["text"] == in_browser["text"]
    assert ingested["pages_ingested"] == 1
    rag = load_section("rag_ops")
    settings = Settings.load(
        {"data_dir": str(data_dir), "warm_up": False, "sections": {"rag_ops": {"embeddings": False}}}
    )
    server, _ = build_server(rag, rag.runtime(settings))
    async with Client(server) as client:
        found = await call(client, "brain_search", query="naïve résumé", semantic=False, projects=["legacy"])
    assert [hit["path"] for hit in found["results"]] == [url], found
    assert "naïve résumé" in found["results"][0]["snippet"]


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (b"\xff\xfeC\x00a\x00f\x00\xe9\x00", "text/plain", "Café"),  # a UTF-16 BOM, whatever the header says
        ('{"menu": "Café"}'.encode("cp1252"), "application/json", '{"menu": "Café"}'),  # undeclared, not UTF-8
        ('{"menu": "Café"}'.encode(), "application/json", '{"menu": "Café"}'),
        (b" \x81\x80", "text/html", " \x81€"),  # windows-1252's unassigned bytes are their C1 controls
        (b'<meta charset="utf-7">+AOk-', "text/html", '<meta charset="utf-7">+AOk-'),  # not a web encoding
        ('<meta charset="koi8-r">Café'.encode(), "text/plain", '<meta charset="koi8-r">Café'),  # not HTML
    ],
)
def test_a_body_is_decoded_by_bom_header_meta_then_fallback(body: bytes, content_type: str, expected: str) -> None:
    response = HttpResponse(url="http://example.test/", status=200, headers={"content-type": content_type}, body=body)
    assert response.text() == expected
