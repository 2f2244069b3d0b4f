"""While web_ops renders a page, Chromium asks for nothing but the page's own host on its own.

Chromium's services that work for a page send their requests through the page's browser context, hence through
the render's guarding proxy, which judges them like the page's own requests: autofill's form queries to
`content-autofill.googleapis.com` were refused here only because the name did not resolve; on a connected machine the
guard lets a public address through, and the browser would tell Google about the pages the agent reads.

A real Chromium (web_ops' `Browser`) renders local pages served under a public-looking name: an address and payment
form, a login form, an article (links, images, a web font, a text area, another language) and a media page (video,
audio, a manifest, a service worker). The URL guard's resolver answers that name with 127.0.0.1 and refuses every
other name, so nothing leaves the machine, and records each name the render's proxy was asked for. Each page holds
its `load` event a moment, so that Chromium's per-page services have asked by the time the render ends.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from mcp_sections.servers.web_ops.browser import Browser
from mcp_sections.shared.confinement.guards.urls import AllowList, UrlGuard
from mcp_sections.shared.ground.errors import not_found
from mcp_sections.shared.net.fetch import GuardedHttp
from tests.http_stand_in import ScriptedHandler, Serving

pytest.importorskip("playwright", reason="web_ops needs the `web` extra: pip install 'mcp-sections[web]'")

pytestmark = pytest.mark.anyio
SITE = "shop.example.com"  # a public-looking name: Chromium treats it as any site on the web
HOLD_SECONDS = 1.5  # how long each page holds its `load` event

PAGES = {
    "address form": """<form action=/order method=post>
        <label>Full name <input name=name autocomplete=name></label>
        <label>Email <input type=email name=email autocomplete=email></label>
        <label>Street <input name=street autocomplete=street-address></label>
        <label>City <input name=city></label> <label>Postcode <input name=zip autocomplete=postal-code></label>
        <label>Phone <input type=tel name=phone></label>
        <label>Card number <input name=card autocomplete=cc-number></label> <button>Order</button></form>
        <form action=/search><input type=search name=q></form>""",
    "login form": """<form action=/login method=post><input name=user autocomplete=username>
        <input type=password name=password autocomplete=current-password> <button>Sign in</button></form>
        <form action=/join method=post><input name=new-user> <input type=password name=p1 autocomplete=new-password>
        <input type=password name=p2> <button>Join</button></form>""",
    "article": """<style>@font-face { font-family: Body; src: url(/body.woff2) } p { font-family: Body, serif }</style>
        <article lang=fr><h1>Le gardien du phare</h1><p>Le gardien écrivait chaque soir dans le journal de bord ; les
        navires qui passaient le cap signalaient le brouillard, et il allumait la lampe une heure plus tôt.</p>
        <p><a href=/next>La suite</a>, <a href='https://elsewhere.example.org/'>ailleurs</a>.</p>
        <img src=/lamp.png alt=Lampe></article><textarea name=comment spellcheck=true>Uncorected txt</textarea>""",
    "media": """<video src=/clip.mp4 controls muted></video><audio src=/tune.mp3 controls></audio>
        <link rel=manifest href=/manifest.json><link rel=icon href=/icon.png>
        <script>navigator.serviceWorker.register('/sw.js').catch(() => {});</script>""",
}


class Names(list[str]):
    """Every name the URL guard resolved (the render's proxy asks it for each destination), `host:port`."""

    def resolve(self, host: str, port: int) -> list[str]:
        self.append(f"{host}:{port}")
        if host == SITE:
            return ["127.0.0.1"]
        raise not_found(f"{host} is not resolved in this test (nothing leaves the machine).")

    def since(self, start: int) -> set[str]:
        return {name for name in self[start:] if not name.startswith(f"{SITE}:")}


def page_html(title: str) -> bytes:
    head = f"<!doctype html><html><head><meta charset=utf-8><title>{title}</title></head>"
    return f"{head}<body>{PAGES[title]}<img src=/hold></body></html>".encode()


class Handler(ScriptedHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path.startswith("/p/"):
            self.answer_bytes(200, page_html(path.removeprefix("/p/").replace("-", " ")))
        elif path == "/hold":  # holds the page's `load` event
            time.sleep(HOLD_SECONDS)
            self.answer_bytes(200, b"GIF89a", "image/gif")
        elif path == "/sw.js":
            self.answer_bytes(200, b"", "text/javascript")
        else:
            self.answer_bytes(404, b"no")

    do_POST = do_GET


@pytest.fixture(scope="module")
def site() -> Iterator[int]:
    handler: type[BaseHTTPRequestHandler] = Handler
    with Serving(handler) as server:
        yield server.port


@pytest.fixture(scope="module")
def names() -> Names:
    return Names()


@pytest.fixture(scope="module")
async def browser(site: int, names: Names) -> AsyncIterator[Browser]:
    guard = UrlGuard(AllowList.parse([f"{SITE}:{site}"]), resolver=names.resolve)
    http = GuardedHttp(guard, user_agent="mcp-sections tests", timeout_seconds=15)
    browser = Browser(http)
    try:
        yield browser
    finally:
        await browser.close()
        await http.aclose()


@pytest.mark.parametrize("title", list(PAGES))
async def test_a_render_asks_for_no_host_but_the_pages(browser: Browser, site: int, names: Names, title: str) -> None:
    start = len(names)
    page = await browser.render(
        f"http://{SITE}:{site}/p/{title.replace(' ', '-')}", wait_for="load", timeout_seconds=15
    )
    assert page.title == title
    assert names.since(start) == set(), f"Chromium asked, on its own, for {sorted(names.since(start))}"
    assert page.blocked == []


async def test_the_features_chromium_keeps_off_include_playwrights_own(browser: Browser) -> None:
    """Chromium keeps only the last `--disable-features=` of its command line; Playwright passes its own list before
    web_ops' flags: the last one (web_ops') must hold every feature of the earlier ones, and autofill's server."""
    chromium = await browser.chromium()
    context = await chromium.new_context()
    try:
        page = await context.new_page()
        await page.goto("chrome://version")
        command_line = (await page.inner_text("#command_line")).split()
    finally:
        await context.close()
    lists = [set(arg.split("=", 1)[1].split(",")) for arg in command_line if arg.startswith("--disable-features=")]
    assert lists, command_line
    assert "AutofillServerCommunication" in lists[-1]
    for earlier in lists[:-1]:
        assert earlier <= lists[-1], f"lost from Playwright's list: {sorted(earlier - lists[-1])}"
