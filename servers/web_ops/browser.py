"""One headless Chromium, started on first use and reused, with a fresh context per page behind a guarding proxy.

Each render gets its own `EgressProxy` (shared/confinement/egress_proxy.py) on an ephemeral loopback port, deciding with
the URL guard, and its browser context sends every request there, loopback included: Chromium's network stack itself
goes through the proxy, so the page, each redirect hop, sub-resources, iframes, `fetch()`/XHR, EventSource,
prefetches, workers and service workers all pass the guard and reach only the address it checked. The proxy's
ledger is the render's own: its refusals are `blocked`, its request count the sub-request cap, its byte count the
render's size cap. The browser is launched against a second proxy that refuses everything, which is where its own
traffic outside any page (component updates, sign-in, safe browsing, metrics) goes, with QUIC off (HTTP/3 would
not use the proxy), WebRTC kept off UDP unless proxied (no STUN to any address), and its background services off,
autofill's server queries included (Chromium sends those through the page's context, where the render's proxy would
judge them as the page's requests: `LAUNCH_FLAGS`). Page scripts' WebSockets are refused and reported; service
worker registration is blocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_sections.shared.confinement.egress_proxy import DenyAllPolicy, EgressProxy, GuardPolicy, Limits
from mcp_sections.shared.confinement.guards.urls import UrlGuard
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.ground.install_hints import install_hint
from mcp_sections.shared.net.fetch import GuardedHttp

WaitFor = Literal["load", "domcontentloaded", "networkidle"]
SYSTEM_CHROMIUMS = (
    "/usr/lib/chromium/chromium",
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
)
MAX_SUBREQUESTS = 300  # requests and tunnels through a render's proxy
RENDER_BUDGET_PAGES = 4  # a render moves at most this many times max_page_bytes through its proxy, in all
#: Checked against Chromium 156 (its switch names, and the WebRTC test): `--force-webrtc-ip-handling-policy` does
#: nothing there (STUN still leaves), `--webrtc-ip-handling-policy` works; no safe-browsing switch is left. What
#: these flags miss still meets the browser-wide proxy that refuses everything, except what Chromium sends through a
#: page's context, which meets that render's proxy: its autofill queries (`content-autofill.googleapis.com`, for any
#: page with a form field), off with `AutofillServerCommunication`; and the captive-portal probe after a certificate
#: error (`connectivitycheck.gstatic.com/generate_204`), which only a preference stops, no switch
#: (tests/security/test_browser_own_requests.py).
#: Chromium keeps only the last `--disable-features=` it is given, and Playwright passes its own list first: ours
#: repeats Playwright's (1.65; the test checks that none of it is lost), without which Chromium would query the
#: network time, optimization hints and the search engine again.
PLAYWRIGHT_DISABLED_FEATURES = (
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable",
    "LensOverlay",
    "MediaRouter",
    "PaintHolding",
    "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "TcpPortRandomizationWin",
    "OptimizationHints",
    "NetworkTimeServiceQuerying",
    "AimEnabled",
    "PreconnectToSearch",
    "msForceBrowserSignIn",
    "msEdgeUpdateLaunchServicesPreferredVersion",
)
DISABLED_FEATURES = (*PLAYWRIGHT_DISABLED_FEATURES, "AutofillServerCommunication")
LAUNCH_FLAGS = (
    "--proxy-bypass-list=<-loopback>",  # loopback goes through the proxy too (Chromium bypasses it by default)
    "--disable-quic",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-domain-reliability",
    "--no-pings",
    "--no-first-run",
    "--metrics-recording-only",
    "--disable-breakpad",
    "--disable-dev-shm-usage",
    f"--disable-features={','.join(DISABLED_FEATURES)}",
)
SCREENSHOT_VIEWPORT = {"width": 1280, "height": 800}
NAVIGATIONS_FOLLOWED = 5  # a page that navigates itself after loading is followed this many times
REFRESH_FOLLOWED_SECONDS = 3  # a meta refresh due within this is waited for (a "redirecting in 3 s" page)
REFRESH_GRACE_SECONDS = 2  # past its delay, how long a refresh may take to start
_REFRESH = re.compile(r"\s*(\d+)?(\.[\d.]*)?(?=$|[\s;,])")  # the delay of a refresh's content (WHATWG)
ERROR_PAGE = "chrome-error://"  # the URL of the page Chromium shows for a navigation that failed


@dataclass
class RenderedPage:
    url: str
    status: int | None
    html: str
    title: str
    screenshot: bytes | None = None
    blocked: list[str] = field(default_factory=list)
    content_type: str = "text/html"


def find_chromium(configured: str | None) -> str | None:
    """The Chromium to drive: the configured one, else a system one, else None (Playwright's own build)."""
    if configured:
        return configured
    for candidate in SYSTEM_CHROMIUMS:
        path = candidate if os.path.isabs(candidate) else shutil.which(candidate)
        if path and os.access(path, os.X_OK):
            return path
    return None


def browser_problem(configured: str | None = None) -> str | None:
    """Why pages cannot be rendered here (no playwright, no Chromium), or None."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        return f"the playwright package is missing; {install_hint('web')}"
    if find_chromium(configured) is None and not _playwright_has_own_chromium():
        return "no Chromium found: install Debian's `chromium` package (or run `playwright install chromium`)"
    return None


class Browser:
    """A lazily started Chromium; `render` is safe to call concurrently (one context and one proxy per call)."""

    def __init__(
        self, http: GuardedHttp, *, executable: str | None = None, max_concurrent: int = 3, verify_tls: bool = True
    ) -> None:
        self.http = http
        self.executable = executable
        self.verify_tls = verify_tls
        self.policy = GuardPolicy(http.guard)
        self.limits = Limits(
            max_requests=MAX_SUBREQUESTS,
            max_bytes_per_connection=http.max_bytes,
            max_bytes=RENDER_BUDGET_PAGES * http.max_bytes,
            connect_timeout=min(10.0, http.timeout_seconds),
            idle_timeout=http.timeout_seconds,
        )
        #: Where the browser's own traffic goes (and is refused): its ledger shows what Chromium tried.
        self.background = EgressProxy(DenyAllPolicy("the browser's own traffic is refused"))
        self._background_url: str | None = None
        self._lock = asyncio.Lock()
        self._slots = asyncio.Semaphore(max_concurrent)
        self._playwright: Any = None
        self._browser: Any = None

    async def chromium(self) -> Any:
        """The running Chromium (Playwright's `Browser`), launched on first use: against the deny-all proxy."""
        async with self._lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            problem = browser_problem(self.executable)
            if problem:
                raise ToolFailure(
                    ErrorCode.DEPENDENCY_ERROR, f"cannot render in a browser: {problem}; or use render='http'."
                )
            from playwright.async_api import Error as PlaywrightError
            from playwright.async_api import async_playwright

            if self._background_url is None:
                self._background_url = await self.background.listen_tcp()
            if self._playwright is None:
                self._playwright = await async_playwright().start()
            try:
                self._browser = await self._playwright.chromium.launch(
                    executable_path=find_chromium(self.executable),
                    args=[f"--proxy-server={self._background_url}", *LAUNCH_FLAGS],
                )
            except PlaywrightError as exc:
                raise ToolFailure(
                    ErrorCode.DEPENDENCY_ERROR,
                    f"Chromium did not start ({str(exc).splitlines()[0]}); set `[sections.web_ops] browser_executable`"
                    " or use render='http'.",
                ) from None
            return self._browser

    async def render(
        self,
        url: str,
        *,
        wait_for: WaitFor,
        timeout_seconds: float,
        screenshot: bool = False,
        guard: UrlGuard | None = None,
    ) -> RenderedPage:
        """Load a page with every request of its context through its own guarding proxy; its HTML after scripts.
        `guard`: the URL guard of this render (default: the client's; a published dev server's page gets the guard
        of published dev servers, `shared.confinement.guards.urls`)."""
        browser = await self.chromium()
        policy = GuardPolicy(guard) if guard is not None else self.policy
        async with self._slots, EgressProxy(policy, self.limits) as proxy:
            context = await browser.new_context(
                proxy={"server": await proxy.listen_tcp()},
                service_workers="block",
                user_agent=self.http.user_agent,
                viewport=SCREENSHOT_VIEWPORT,
                java_script_enabled=True,
                accept_downloads=False,
                ignore_https_errors=not self.verify_tls,
            )
            sockets: list[str] = []
            await context.route_web_socket("**/*", _refuse_websocket(sockets))
            try:
                page = await context.new_page()
                navigations = _Navigations(page, proxy, url)
                try:
                    response = await page.goto(url, wait_until=wait_for, timeout=timeout_seconds * 1000)
                except Exception:
                    refused = navigations.refused()  # a refused hop, when that is why it failed
                    if refused is not None:
                        raise refused from None
                    raise
                html, title = await _settled_content(page, navigations, url, timeout_seconds)
                shot = await page.screenshot(type="png", full_page=False) if screenshot else None
                return RenderedPage(
                    url=page.url,
                    status=response.status if response is not None else None,
                    html=html,
                    title=title,
                    screenshot=shot,
                    blocked=_blocked(proxy, sockets),
                    content_type=(await response.header_value("content-type") or "text/html").split(";")[0]
                    if response is not None
                    else "text/html",
                )
            except ToolFailure:
                raise
            except Exception as exc:
                message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                code = (
                    ErrorCode.TIMEOUT
                    if "Timeout" in type(exc).__name__ or "Timeout" in message
                    else (ErrorCode.EXECUTION_FAILED)
                )
                raise ToolFailure(code, f"the browser could not load {url}: {message}") from None
            finally:
                with contextlib.suppress(Exception):
                    await context.close()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            if self._browser is not None:
                await self._browser.close()
        with contextlib.suppress(Exception):
            if self._playwright is not None:
                await self._playwright.stop()
        await self.background.aclose()
        self._browser = self._playwright = self._background_url = None

    @property
    def started(self) -> bool:
        return self._browser is not None


async def _settled_content(page: Any, navigations: _Navigations, url: str, timeout_seconds: float) -> tuple[str, str]:
    """The page's HTML and title where it ended. A page that navigates itself once loaded (a script setting
    `location`, a form submitted, a `<meta http-equiv="refresh">` due within `REFRESH_FOLLOWED_SECONDS`) is waited
    for, then judged again where it ended: a navigation the proxy refused, or an error page, fails the render. The
    last judgement comes after the read, so what is returned never comes from a refused URL."""
    for _ in range(NAVIGATIONS_FOLLOWED):
        await navigations.settled(timeout_seconds)
        navigations.check()
        started = len(navigations.urls)
        try:
            html, title = await page.content(), await page.title()
        except Exception as exc:
            if "navigating" not in str(exc):
                raise
        else:
            navigations.check()
            if len(navigations.urls) == started and not await navigations.refreshed(html, started, timeout_seconds):
                return html, title
        with contextlib.suppress(Exception):  # a navigation that fails still ends (on Chromium's error page)
            await page.wait_for_load_state("load", timeout=timeout_seconds * 1000)
    raise ToolFailure(
        ErrorCode.EXECUTION_FAILED,
        f"the browser could not load {url}: the page kept navigating ({NAVIGATIONS_FOLLOWED} times); fetch it "
        "without render='browser', or the URL it ends on.",
    )


class _Navigations:
    """The main frame's navigation requests during one render (each redirect hop, refresh, script navigation or
    form submission is one), recorded as Chromium issues them, and judged against the render's proxy ledger."""

    def __init__(self, page: Any, proxy: EgressProxy, url: str) -> None:
        self.page = page
        self.proxy = proxy
        self.url = url
        self.urls: list[str] = []
        self._in_flight: set[Any] = set()
        self._changed = asyncio.Event()
        page.on("request", self._started)
        page.on("requestfinished", self._ended)
        page.on("requestfailed", self._ended)

    def _started(self, request: Any) -> None:
        with contextlib.suppress(Exception):  # a request without a frame (a worker's) is no navigation of the page
            if not request.is_navigation_request() or request.frame != self.page.main_frame:
                return
            self.urls.append(request.url)
            self._in_flight.add(request)
            self._changed.set()

    def _ended(self, request: Any) -> None:
        if request in self._in_flight:
            self._in_flight.discard(request)
            self._changed.set()

    async def settled(self, timeout_seconds: float) -> None:
        """Wait (at most `timeout_seconds`) until no navigation request is in flight: each one's refusal, if the
        proxy refused it, is then in the ledger."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_seconds):
                while self._in_flight:
                    self._changed.clear()
                    await self._changed.wait()

    async def refreshed(self, html: str, started: int, timeout_seconds: float) -> bool:
        """Whether a navigation began after `started` requests, waited for when `html` declares a refresh due
        within `REFRESH_FOLLOWED_SECONDS` (a browser follows it as a redirect)."""
        delay = _refresh_delay(html)
        if delay is None or delay > min(REFRESH_FOLLOWED_SECONDS, timeout_seconds):
            return len(self.urls) > started
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay + min(REFRESH_GRACE_SECONDS, timeout_seconds)):
                while len(self.urls) <= started:
                    self._changed.clear()
                    await self._changed.wait()
        return len(self.urls) > started

    def refused(self) -> ToolFailure | None:
        """PERMISSION_DENIED naming the first navigation the proxy refused (the main frame went, or is going, to a
        URL the guard refuses), and the setting that would open it; None when none was refused."""
        ledger = self.proxy.ledger
        for target in [*self.urls, self.page.url]:
            refusal = ledger.refusal_for(target)
            if refusal is not None and refusal.failure.code is ErrorCode.PERMISSION_DENIED:
                return ToolFailure(
                    ErrorCode.PERMISSION_DENIED,
                    f"{self.url} led the browser to {target[:300]}, which is refused: {refusal.failure.message}",
                    **refusal.failure.details,
                )
        return None

    def check(self) -> None:
        """Raise if a navigation was refused (`refused`) or the main frame ended on Chromium's error page."""
        refused = self.refused()
        if refused is not None:
            raise refused
        if self.page.url.startswith(ERROR_PAGE):
            raise ToolFailure(
                ErrorCode.EXECUTION_FAILED, f"the browser could not load {self.url}: it ended on an error page."
            )


def _refresh_delay(html: str) -> int | None:
    """The delay in seconds of the first `<meta http-equiv="refresh">` of a document (outside `<noscript>`)."""
    if "refresh" not in html.lower():
        return None
    from lxml import html as lxml_html

    try:
        document = lxml_html.document_fromstring(html)
    except (ValueError, lxml_html.etree.ParserError):
        return None
    contents = document.xpath(
        "//meta[translate(@http-equiv, 'REFSH', 'refsh') = 'refresh'][not(ancestor::noscript)]/@content"
    )
    match = _REFRESH.match(contents[0]) if contents else None
    if match is None or not (match.group(1) or match.group(2)):
        return None
    return int(match.group(1) or 0)


def _blocked(proxy: EgressProxy, sockets: list[str]) -> list[str]:
    """What the render's proxy refused or cut, then the WebSockets refused in the page."""
    blocked = [str(refusal) for refusal in proxy.ledger.refusals] + sockets
    if proxy.ledger.refusals_dropped:
        blocked.append(f"... and {proxy.ledger.refusals_dropped} more refused requests")
    return blocked


def _refuse_websocket(blocked: list[str]) -> Any:
    async def refuse(socket: Any) -> None:
        blocked.append(f"{socket.url[:300]}: WebSockets are not opened by web_ops")
        with contextlib.suppress(Exception):
            await socket.close()

    return refuse


def _playwright_has_own_chromium() -> bool:
    root = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or os.path.expanduser("~/.cache/ms-playwright")
    with contextlib.suppress(OSError):
        return any(name.startswith("chromium") for name in os.listdir(root))
    return False
