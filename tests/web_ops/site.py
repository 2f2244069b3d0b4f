"""A local web site on 127.0.0.1 for web_ops' tests, and a canary server that must never be reached.

The site has static pages, a page rendered by JavaScript whose script tries to reach the canary and a cloud
metadata address, redirects (to a page, to the canary, in a loop), a link trap, a slow and a huge page, JSON,
text and PDF bodies, robots.txt, hidden Unicode, a 10-page site for crawls, a small documentation page with
relative links and fragments (and one under `<base>`, and a redirect to it), and the documentation corpus of
bench_web under `/corpus/` (benchmarks/corpus).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from tests.http_stand_in import ScriptedHandler, Serving

ARTICLE = (
    "The lighthouse keeper wrote in the logbook every evening. Ships passing the northern cape reported fog, "
    "and the keeper lit the lamp an hour early. "
) * 8
CRAWL_PAGES = 10
GUIDE = """<!doctype html><html><head><meta charset="utf-8"><title>Guide</title></head><body>
<nav class="sidebar"><a href="/">Home of the project docs</a> <a href="/guide/all.html">Every guide page</a></nav>
<main><h1 id="guide">The guide<a class="headerlink" href="#guide">¶</a></h1>
<p>See <a href="#usage">usage</a>, <a href="api.html#fn">the function</a> and <a href="../other/">elsewhere</a>.</p>
<img src="img/flow.png" alt="Flow diagram">
<h2 id="usage">Usage<a class="headerlink" href="#usage">¶</a></h2>
<dl><dt id="fn">fn(x)<a class="headerlink" href="#fn">¶</a></dt><dd><p>Equivalent to:</p>
<div class="highlight-python3"><div class="highlight"><pre><span class="k">def</span> fn(x):
    <span class="k">return</span> x</pre></div></div></dd></dl>
<table><tr><th>Name</th><th>Meaning</th></tr><tr><td><code>x</code></td><td>the value</td></tr></table>
</main><footer>Copyright of the guide footer</footer></body></html>"""
BASED = """<!doctype html><html><head><base href="/reference/v2/"><title>Based</title></head><body><main>
<h1>Under a base</h1><p><a href="api.html#x">API</a> and <a href="#top">top</a>.</p></main></body></html>"""


@dataclass
class Site:
    port: int
    canary_port: int
    canary_hits: list[str] = field(default_factory=list)
    hits: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    @property
    def canary(self) -> str:
        return f"http://127.0.0.1:{self.canary_port}"


def _page(title: str, body: str, nav: bool = True) -> bytes:
    menu = "<nav><a href='/'>Home</a> · <a href='/about.html'>About</a></nav>" if nav else ""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head>"
        f"<body>{menu}{body}"
        "<footer>© The test site</footer></body></html>"
    ).encode()


def _crawl_page(n: int) -> bytes:
    # A tree: page n links to 3n+1..3n+3 (while < CRAWL_PAGES), so depth 2 reaches all 10 pages; page 0 also links
    # off-site and to a page robots.txt disallows.
    children = [k for k in (3 * n + 1, 3 * n + 2, 3 * n + 3) if k < CRAWL_PAGES]
    links = "".join(f"<li><a href='/crawl/{k}.html'>Page {k}</a></li>" for k in children)
    extra = "<li><a href='http://example.invalid/away'>Away</a></li><li><a href='/private/secret.html'>Private</a></li>"
    return _page(
        f"Crawl page {n}",
        f"<article><h1>Crawl page {n}</h1><p>Page number {n} of the crawl. {ARTICLE}</p>"
        f"<ul>{links}{extra if n == 0 else ''}</ul></article>",
        nav=False,
    )


def _pdf_with_text(text: str) -> bytes:
    """A one-page PDF showing `text` in Helvetica, with a correct cross-reference table."""
    stream = f"BT /F1 18 Tf 20 100 Td ({text}) Tj ET".encode()
    objects = [
        b"<</Type/Catalog/Pages 2 0 R>>",
        b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
        b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 300 144]/Contents 4 0 R/Resources<</Font<</F1 5 0 R>>>>>>",
        b"<</Length %d>>stream\n" % len(stream) + stream + b"\nendstream",
        b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj" % number + body + b"endobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


TIDES_PDF = _pdf_with_text("Harbour tide table 2026")


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(ScriptedHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status: int, body: bytes, content_type: str = "text/html; charset=utf-8", **headers: str):
            self.answer_bytes(status, body, content_type, **headers)

        def do_GET(self) -> None:  # one branch per page of the test site
            path = self.path.split("?", 1)[0]
            site.hits.append(self.path)
            if path in ("/", "/static.html"):
                body = (
                    f"<article><h1>The lighthouse</h1><p>{ARTICLE}</p>"
                    "<p>See <a href='/about.html'>about</a>, <a href='/js.html'>the app</a> and "
                    "<a href='https://example.org/elsewhere'>elsewhere</a>.</p>"
                    "<img src='/logo.png' alt='Lighthouse logo'></article>"
                )
                self._send(200, _page("The lighthouse", body))
            elif path == "/about.html":
                self._send(200, _page("About", f"<article><h1>About us</h1><p>{ARTICLE}</p></article>"))
            elif path == "/js.html":
                script = f"""
                  document.getElementById('root').innerHTML =
                    '<article><h1>Rendered by script</h1><p>' + 'The harbour master counts the boats. '.repeat(20)
                    + '</p></article>';
                  fetch('{site.canary}/from-fetch').catch(() => {{}});
                  fetch('http://169.254.169.254/latest/meta-data/').catch(() => {{}});
                  const i = new Image(); i.src = '{site.canary}/from-image';
                  try {{ new WebSocket('ws://127.0.0.1:{site.canary_port}/ws'); }} catch (e) {{}}
                """
                frame = f"<iframe src='{site.canary}/from-iframe'></iframe>"
                body = f"<div id='root'></div>{frame}<script>{script}</script>"
                self._send(200, _page("App", body))
            elif path == "/grow.html":  # a small response whose script grows the document to ~2 MB
                script = "document.body.append('x'.repeat(2000000));"
                self._send(200, _page("Grow", f"<p>{ARTICLE}</p><script>{script}</script>"))
            elif path == "/redirect":
                self._send(302, b"", Location="/static.html")
            elif path == "/redirect-to-canary":
                self._send(302, b"", Location=f"{site.canary}/from-redirect")
            elif path == "/redirect-to-metadata":
                self._send(301, b"", Location="http://169.254.169.254/latest/meta-data/")
            elif path.startswith("/loop"):
                n = int(path.removeprefix("/loop") or 0)
                self._send(302, b"", Location=f"/loop{n + 1}")
            elif path.startswith("/trap/"):
                n = int(path.rsplit("/", 1)[1] or 0)
                links = "".join(f"<a href='/trap/{n * 10 + k}'>next {k}</a> " for k in range(1, 10))
                self._send(200, _page(f"Trap {n}", f"<article><p>{ARTICLE}</p>{links}</article>"))
            elif path == "/slow":
                time.sleep(5)
                self._send(200, _page("Slow", "<p>late</p>"))
            elif path == "/huge":
                chunk = b"<p>" + b"x" * 1000 + b"</p>"
                body = b"<html><body>" + chunk * 20_000 + b"</body></html>"
                self._send(200, body)
            elif path == "/data.json":
                self._send(200, b'{"tide": {"high": "06:12", "low": "12:30"}}', "application/json")
            elif path == "/notes.txt":
                self._send(200, b"Plain notes about the harbour.", "text/plain; charset=utf-8")
            elif path == "/tides.pdf":
                self._send(200, TIDES_PDF, "application/pdf")
            elif path == "/hidden.html":
                hidden = "Visible\u200b text\u202e with\U000e0049\U000e0047 hidden marks"
                self._send(200, _page("Hidden", f"<article><p>{hidden}. {ARTICLE}</p></article>"))
            elif path == "/guide/intro.html":
                self._send(200, GUIDE.encode())
            elif path == "/guide/based.html":
                self._send(200, BASED.encode())
            elif path == "/old-guide":
                self._send(302, b"", Location="/guide/intro.html")
            elif path.startswith("/corpus/"):
                from benchmarks import corpus

                found = [p for p in corpus.pages() if p.path == path.removeprefix("/corpus/")]
                self._send(200, found[0].html) if found else self._send(404, b"no")
            elif path == "/robots.txt":
                self._send(200, b"User-agent: *\nDisallow: /private/\n", "text/plain")
            elif path.startswith("/crawl/"):
                n = int(path.removeprefix("/crawl/").removesuffix(".html"))
                self._send(200, _crawl_page(n)) if n < CRAWL_PAGES else self._send(404, b"no")
            elif path == "/private/secret.html":
                self._send(200, _page("Secret", "<p>robots.txt says no</p>"))
            elif path == "/logo.png":
                self._send(200, b"\x89PNG\r\n\x1a\n", "image/png")
            else:
                self._send(404, _page("Not found", "<p>nothing here</p>"))

    return Handler


def _canary_handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Canary(ScriptedHandler):
        def do_GET(self) -> None:
            site.canary_hits.append(self.path)
            self.answer_bytes(200, b"ok", "text/plain")

    return Canary


@contextmanager
def running_site() -> Iterator[Site]:
    site = Site(port=0, canary_port=0)
    with Serving(_canary_handler(site)) as canary, Serving(_handler(site)) as server:
        site.canary_port, site.port = canary.port, server.port
        yield site
