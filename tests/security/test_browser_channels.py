"""Every way a page can make web_ops' Chromium reach out, against canaries it must never reach.

A real Chromium (the web_ops section built in-process, allowed to reach the test site's port only) loads pages
that try one channel each towards a TCP canary on another loopback port, towards 127.0.0.1:9 (where the browser's
old dead proxy pointed; bound when we are root), and towards a UDP canary (WebRTC's STUN, WebTransport). A page
holds its `load` event on an image the site answers only once the page's script reports its attempts settled, so
each attempt happens inside the render. After each render: the canaries saw nothing, and what was a request is
listed in `blocked_requests`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest
from mcp import Client

from mcp_sections.servers.registry import load_section
from mcp_sections.servers.web_ops.browser import MAX_SUBREQUESTS
from mcp_sections.shared.confinement.egress_proxy import EgressProxy
from mcp_sections.shared.serving.server import SectionState, build_server
from mcp_sections.shared.settings.config import Settings
from tests.http_stand_in import ScriptedHandler, Serving
from tests.stdio import call, fail

pytest.importorskip("playwright", reason="web_ops needs the `web` extra: pip install 'mcp-sections[web]'")
pytest.importorskip("trafilatura", reason="web_ops needs the `web` extra: pip install 'mcp-sections[web]'")

pytestmark = pytest.mark.anyio
OLD_DEAD_PROXY_PORT = 9
HOLD_SECONDS = 8.0  # the longest a page waits for its own script to report its attempts settled
MAX_PAGE_BYTES = 100_000


# ---- canaries ----------------------------------------------------------------------------------------------------
@dataclass
class Canary:
    """A loopback socket recording in `hits`, from a daemon thread, what each `_record` takes until it closes."""

    port: int
    hits: list[bytes] = field(default_factory=list)
    sock: socket.socket | None = None

    @classmethod
    def listening(cls, sock: socket.socket) -> Self:
        canary = cls(sock.getsockname()[1], sock=sock)
        threading.Thread(target=canary._serve, daemon=True).start()
        return canary

    def _serve(self) -> None:
        assert self.sock is not None
        while True:
            try:
                self._record(self.sock)
            except OSError:
                return

    def _record(self, sock: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        assert self.sock is not None
        self.sock.close()


class TcpCanary(Canary):
    """A loopback TCP listener recording every connection (and its first bytes); it answers `200 ok` to HTTP."""

    @classmethod
    def start(cls, port: int = 0) -> TcpCanary:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(64)
        return cls.listening(sock)

    def _record(self, sock: socket.socket) -> None:
        conn, _ = sock.accept()
        with conn:
            conn.settimeout(0.5)
            data = b""
            with contextlib.suppress(OSError):
                data = conn.recv(4096)
            self.hits.append(data or b"(connected)")
            with contextlib.suppress(OSError):
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")


class UdpCanary(Canary):
    """A loopback UDP socket recording every datagram (WebRTC's STUN binding requests, QUIC)."""

    @classmethod
    def start(cls) -> UdpCanary:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", 0))
        return cls.listening(sock)

    def _record(self, sock: socket.socket) -> None:
        data, _ = sock.recvfrom(65536)
        self.hits.append(data)


@dataclass
class Canaries:
    tcp: TcpCanary
    udp: UdpCanary
    old_proxy: TcpCanary | None  # 127.0.0.1:9, when this process may bind it

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.tcp.port}"

    def counts(self) -> tuple[int, int, int]:
        return len(self.tcp.hits), len(self.udp.hits), len(self.old_proxy.hits) if self.old_proxy else 0

    def seen_since(self, before: tuple[int, int, int]) -> dict[str, list[bytes]]:
        """What each canary saw since `before`; on port 9, what named the TCP canary (Chromium's own traffic is
        the business of `test_the_browsers_own_traffic_is_refused`)."""
        aimed = f"127.0.0.1:{self.tcp.port}".encode()
        old_proxy = [hit for hit in self.old_proxy.hits[before[2] :] if aimed in hit] if self.old_proxy else []
        seen = {"tcp": self.tcp.hits[before[0] :], "udp": self.udp.hits[before[1] :], "port 9": old_proxy}
        return {name: hits for name, hits in seen.items() if hits}


@pytest.fixture(scope="module")
def canaries() -> Iterator[Canaries]:
    tcp, udp = TcpCanary.start(), UdpCanary.start()
    old_proxy = None
    if os.geteuid() == 0:
        with contextlib.suppress(OSError):
            old_proxy = TcpCanary.start(OLD_DEAD_PROXY_PORT)
    yield Canaries(tcp, udp, old_proxy)
    for canary in (tcp, udp, old_proxy):
        if canary is not None:
            canary.close()


# ---- the site: one page per channel -------------------------------------------------------------------------------
#: name -> (HTML, the body of the page's async `attempt()`); CANARY, TCP_PORT and UDP_PORT are filled in.
CHANNELS: dict[str, tuple[str, str]] = {
    "img": ("<img id=target src='CANARY/img'>", "await settled('target')"),
    "iframe": ("<iframe id=target src='CANARY/iframe'></iframe>", "await settled('target')"),
    "fetch": ("", "await fetch('CANARY/fetch', {mode: 'no-cors'})"),
    "xhr": (
        "",
        "await new Promise(done => { const x = new XMLHttpRequest(); x.open('GET', 'CANARY/xhr'); "
        "x.onloadend = done; x.send(); })",
    ),
    "websocket": (
        "",
        "await new Promise(done => { const s = new WebSocket('ws://127.0.0.1:TCP_PORT/websocket'); "
        "s.onerror = s.onclose = done; })",
    ),
    "eventsource": (
        "",
        "await new Promise(done => { const e = new EventSource('CANARY/events'); "
        "e.onerror = () => { e.close(); done(); }; })",
    ),
    "sharedworker": (
        "",
        "await new Promise(done => { const w = new SharedWorker('/shared-worker.js?target=CANARY/shared-worker'); "
        "w.port.onmessage = done; w.port.start(); })",
    ),
    "worker": (
        "",
        "await new Promise(done => { const w = new Worker('/worker.js?target=CANARY/worker'); w.onmessage = done; })",
    ),
    "serviceworker": (  # registration is blocked; a fresh frame's untouched `register` is tried too
        "",
        "const frame = document.body.appendChild(document.createElement('iframe')); "
        "const register = frame.contentWindow.ServiceWorkerContainer.prototype.register; "
        "const r = await register.call(navigator.serviceWorker, '/sw.js'); "
        "if (r) await Promise.race([navigator.serviceWorker.ready, pause(3000)]); await pause(300); "
        "return r ? 'registered' : 'not registered'",
    ),
    "prefetch": (
        "<link rel=prefetch href='CANARY/prefetch'><link rel=preload as=fetch href='CANARY/preload'>",
        "await pause(500)",
    ),
    "redirect-img": ("<img id=target src='/bounce?to=CANARY/redirect-img'>", "await settled('target')"),
    "redirect-iframe": (
        "<iframe id=target src='/bounce?to=CANARY/redirect-iframe'></iframe>",
        "await settled('target')",
    ),
    "redirect-fetch": ("", "await fetch('/bounce?to=CANARY/redirect-fetch')"),
    "beacon": ("", "navigator.sendBeacon('CANARY/beacon', 'x'); await pause(500)"),
    "popup": ("", "window.open('CANARY/popup'); await pause(500)"),
    "webrtc": (
        "",
        "const pc = new RTCPeerConnection({iceServers: [{urls: 'stun:127.0.0.1:UDP_PORT'}, "
        "{urls: 'turn:127.0.0.1:TCP_PORT?transport=tcp', username: 'u', credential: 'p'}]}); "
        "pc.createDataChannel('x'); await pc.setLocalDescription(await pc.createOffer()); "
        "await new Promise(done => { pc.onicegatheringstatechange = () => "
        "pc.iceGatheringState === 'complete' && done(); setTimeout(done, 3000); })",
    ),
    "webtransport": (
        "",
        "const t = new WebTransport('https://127.0.0.1:UDP_PORT/'); await Promise.race([t.ready, pause(2000)])",
    ),
}

#: Runs the page's attempt when the document is parsed, writes its outcome in the title, then releases `/hold`.
HARNESS = """<script>
const pause = ms => new Promise(done => setTimeout(done, ms));
const settled = id => new Promise(done => { const el = document.getElementById(id); el.onload = el.onerror = done; });
const attempt = async () => { BODY; };
window.addEventListener('DOMContentLoaded', async () => {
  let outcome = 'settled';
  try { outcome = await Promise.race([attempt(), pause(LIMIT_MS).then(() => 'timed out')]) || outcome; }
  catch (e) { outcome = `failed (${e.name})`; }
  document.title = `NAME: ${outcome}`;
  await fetch('/done?k=NAME');
});
</script>"""


def channel_page(name: str, canaries: Canaries) -> bytes:
    html, body = CHANNELS[name]
    script = HARNESS.replace("BODY", body).replace("NAME", name).replace("LIMIT_MS", str(int(HOLD_SECONDS - 1) * 1000))
    page = f"<!doctype html><title>{name}</title>{script}<p>Channel {name}.</p>{html}<img src='/hold?k={name}'>"
    filled = page.replace("CANARY", canaries.url).replace("TCP_PORT", str(canaries.tcp.port))
    return filled.replace("UDP_PORT", str(canaries.udp.port)).encode()


@dataclass
class ChannelSite:
    port: int
    held: dict[str, threading.Event] = field(default_factory=dict)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def _handler(site: ChannelSite, canaries: Canaries) -> type[BaseHTTPRequestHandler]:
    canary = canaries.url
    aimed = "fetch(new URL(location).searchParams.get('target')).catch(() => {})"
    scripts = {
        "/worker.js": f"{aimed}.finally(() => postMessage('done'));",
        "/shared-worker.js": f"onconnect = e => {aimed}.finally(() => e.ports[0].postMessage('done'));",
        "/sw.js": f"addEventListener('install', e => e.waitUntil(fetch('{canary}/service-worker').catch(() => {{}})));",
    }

    class Handler(ScriptedHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {key: values[0] for key, values in parse_qs(parts.query).items()}
            if parts.path.startswith("/c/"):
                name = parts.path.removeprefix("/c/")
                site.held[name] = threading.Event()
                self.answer_bytes(200, channel_page(name, canaries))
            elif parts.path == "/hold":  # answered once the page reported its attempt settled: holds `load`
                site.held.setdefault(query["k"], threading.Event()).wait(HOLD_SECONDS)
                self.answer_bytes(200, b"GIF89a", "image/gif")
            elif parts.path == "/done":
                site.held.setdefault(query["k"], threading.Event()).set()
                self.answer_bytes(204, b"")
            elif parts.path == "/bounce":
                self.answer_bytes(int(query.get("status", "302")), b"", Location=query["to"])
            elif parts.path in scripts:
                self.answer_bytes(200, scripts[parts.path].encode(), "text/javascript")
            elif parts.path == "/meta-refresh":
                self.answer_bytes(200, f"<meta http-equiv=refresh content='0;url={canary}/meta-refresh'>".encode())
            elif parts.path == "/js-location":
                target = canary.replace("http:", "https:") if "tls" in query else canary
                self.answer_bytes(200, f"<script>location.href = '{target}/js-location';</script>".encode())
            elif parts.path == "/many":  # more sub-requests than a render may make
                images = "".join(f"<img src='/pixel?i={n}'>" for n in range(MAX_SUBREQUESTS + 10))
                self.answer_bytes(200, f"<title>many</title><p>Many images.</p>{images}".encode())
            elif parts.path == "/big-image":  # a sub-resource larger than max_page_bytes
                self.answer_bytes(200, b"<title>big</title><p>One big image.</p><img src='/big'>")
            elif parts.path == "/pixel":
                self.answer_bytes(200, b"GIF89a", "image/gif")
            elif parts.path == "/big":
                self.answer_bytes(200, b"GIF89a" + b"\0" * (2 * MAX_PAGE_BYTES), "image/gif")
            else:
                self.answer_bytes(404, b"no")

    return Handler


@pytest.fixture(scope="module")
def channel_site(canaries: Canaries) -> Iterator[ChannelSite]:
    site = ChannelSite(0)
    with Serving(_handler(site, canaries)) as server:
        site.port = server.port
        yield site


@pytest.fixture(scope="module")
async def served(
    channel_site: ChannelSite, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Client, SectionState]]:
    table = {
        "allow": [f"127.0.0.1:{channel_site.port}"],
        "timeout_seconds": 15,
        "max_page_bytes": MAX_PAGE_BYTES,
        "embeddings": False,
        "cache_pages": 0,
    }
    data_dir: Path = tmp_path_factory.mktemp("channels") / "data"
    settings = Settings.load({"data_dir": str(data_dir), "sections": {"web_ops": table}, "warm_up": False})
    section = load_section("web_ops")
    server, state = build_server(section, section.runtime(settings))
    async with Client(server) as client:
        yield client, state


@pytest.fixture(scope="module")
def web(served: tuple[Client, SectionState]) -> Client:
    return served[0]


@pytest.fixture(scope="module")
def web_ops(served: tuple[Client, SectionState]) -> Any:
    """The section's WebOps object (its browser, that browser's background proxy)."""
    return served[1].get()


# ---- the channels --------------------------------------------------------------------------------------------------
async def rendered_unseen(web: Client, channel_site: ChannelSite, canaries: Canaries, channel: str) -> dict[str, Any]:
    """The channel's page rendered in the browser: the canaries saw nothing, and the page's script ran its attempt
    to the end (a script error would make a channel test pass for nothing)."""
    before = canaries.counts()
    page = await call(web, "fetch_web_page", url=channel_site.url(f"/c/{channel}"), render="browser")
    assert canaries.seen_since(before) == {}
    title = page["title"]
    assert title.startswith(f"{channel}: ") and "ReferenceError" not in title and "SyntaxError" not in title, title
    return page


REQUEST_CHANNELS = [
    "img",
    "iframe",
    "fetch",
    "xhr",
    "eventsource",
    "worker",
    "sharedworker",
    "prefetch",
    "redirect-img",
    "redirect-iframe",
    "redirect-fetch",
    "beacon",
    "popup",
]


@pytest.mark.parametrize("channel", REQUEST_CHANNELS)
async def test_a_sub_request_channel_is_refused_and_reported(
    web: Client, channel_site: ChannelSite, canaries: Canaries, channel: str
) -> None:
    page = await rendered_unseen(web, channel_site, canaries, channel)
    blocked = " ".join(page["blocked_requests"])
    assert f"127.0.0.1:{canaries.tcp.port}" in blocked and "loopback" in blocked, page["blocked_requests"]


@pytest.mark.parametrize("channel", ["websocket", "serviceworker", "webrtc", "webtransport"])
async def test_a_channel_that_is_no_plain_request_reaches_nothing(
    web: Client, channel_site: ChannelSite, canaries: Canaries, channel: str
) -> None:
    page = await rendered_unseen(web, channel_site, canaries, channel)
    if channel == "serviceworker":  # registration is blocked; were it not, its fetch would be refused and listed
        assert page["title"] == "serviceworker: not registered" or "/service-worker" in str(page["blocked_requests"])
    if channel == "websocket":
        assert any("WebSockets are not opened" in line for line in page["blocked_requests"]), page["blocked_requests"]


@pytest.mark.parametrize(
    "path",
    [
        "/bounce?to={canary}/redirect-main",
        "/bounce?status=301&to={canary}/redirect-main-301",
        "/bounce?status=307&to={canary}/redirect-main-307",
        "/bounce?to=https://127.0.0.1:{port}/redirect-main-tls",
        "/meta-refresh",
        "/js-location",
        "/js-location?tls=1",
    ],
)
async def test_a_main_frame_navigation_to_the_canary_is_refused(
    web: Client, channel_site: ChannelSite, canaries: Canaries, path: str
) -> None:
    before = canaries.counts()
    url = channel_site.url(path.format(canary=canaries.url, port=canaries.tcp.port))
    message = await fail(web, "fetch_web_page", "PERMISSION_DENIED", url=url, render="browser", wait_for="networkidle")
    assert "loopback" in message and f"127.0.0.1:{canaries.tcp.port}" in message
    assert canaries.seen_since(before) == {}


async def test_a_render_makes_at_most_its_share_of_requests_and_bytes(web: Client, channel_site: ChannelSite) -> None:
    many = await call(web, "fetch_web_page", url=channel_site.url("/many"), render="browser")
    over = [line for line in many["blocked_requests"] if f"more than {MAX_SUBREQUESTS} requests" in line]
    assert over and over[0].startswith(channel_site.url("/pixel?i="))
    big = await call(web, "fetch_web_page", url=channel_site.url("/big-image"), render="browser")
    assert big["blocked_requests"] == [f"{channel_site.url('/big')}: cut at {MAX_PAGE_BYTES} bytes"]


async def test_a_service_worker_that_does_register_goes_through_the_proxy_too(
    web_ops: Any, channel_site: ChannelSite, canaries: Canaries
) -> None:
    """Behind the blocked registration: in a context that allows service workers, the worker's own fetch (during
    its install) reaches the context's proxy and is refused there."""
    browser = web_ops.browser
    chromium = await browser.chromium()
    before = canaries.counts()
    async with EgressProxy(browser.policy, browser.limits) as proxy:
        context = await chromium.new_context(proxy={"server": await proxy.listen_tcp()}, service_workers="allow")
        try:
            page = await context.new_page()
            await page.goto(channel_site.url("/c/serviceworker"), timeout=15_000)
            assert await page.title() == "serviceworker: registered"
        finally:
            await context.close()
    assert canaries.seen_since(before) == {}
    assert f"{canaries.url}/service-worker: 127.0.0.1 is a loopback address" in map(str, proxy.ledger.refusals)


async def test_a_direct_navigation_to_the_canary_is_refused(web: Client, canaries: Canaries) -> None:
    before = canaries.counts()
    await fail(web, "fetch_web_page", "PERMISSION_DENIED", url=f"{canaries.url}/direct", render="browser")
    assert canaries.seen_since(before) == {}


async def test_the_browsers_own_traffic_is_refused(
    web: Client, web_ops: Any, channel_site: ChannelSite, canaries: Canaries
) -> None:
    """Chromium's background traffic (component updates, sign-in...) went to the deny-all proxy, none of it through
    (so none reached 127.0.0.1:9, where it went when that was the browser's dead proxy and something listened)."""
    await call(web, "fetch_web_page", url=channel_site.url("/c/img"), render="browser")  # the browser is up
    await anyio.sleep(1)
    if canaries.old_proxy is not None:
        assert canaries.old_proxy.hits == []
    background = web_ops.browser.background.ledger
    assert background.requests == 0
    assert all("the browser's own traffic is refused" in str(refusal) for refusal in background.refusals)
