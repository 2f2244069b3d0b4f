"""One headless Chromium, started on first use and reused, with a fresh context per page.

The browser never touches the network itself. Every request it makes — the page, sub-resources, iframes,
`fetch()`/XHR from page scripts — is intercepted (`context.route("**/*")`) and answered by `GuardedHttp`, which
checks the URL with the shared guard and connects to the checked address; a refused request is aborted and
reported. WebSockets are closed, service workers blocked, and the browser is launched with a dead proxy
(loopback included), so a request that escaped interception would go nowhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_sections.shared.errors import ErrorCode, ToolFailure
from mcp_sections.shared.install_hints import install_hint
from mcp_sections.shared.web_fetch import GuardedHttp

WaitFor = Literal["load", "domcontentloaded", "networkidle"]
SYSTEM_CHROMIUMS = (
    "/usr/lib/chromium/chromium",
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
)
DEAD_PROXY = "http://127.0.0.1:9"
MAX_SUBREQUESTS = 300
SCREENSHOT_VIEWPORT = {"width": 1280, "height": 800}


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
    """A lazily started Chromium; `render` is safe to call concurrently (one context per call)."""

    def __init__(self, http: GuardedHttp, *, executable: str | None = None, max_concurrent: int = 3) -> None:
        self.http = http
        self.executable = executable
        self._lock = asyncio.Lock()
        self._slots = asyncio.Semaphore(max_concurrent)
        self._playwright: Any = None
        self._browser: Any = None

    async def _ensure(self) -> Any:
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

            if self._playwright is None:
                self._playwright = await async_playwright().start()
            try:
                self._browser = await self._playwright.chromium.launch(
                    executable_path=find_chromium(self.executable),
                    args=[f"--proxy-server={DEAD_PROXY}", "--proxy-bypass-list=<-loopback>", "--disable-dev-shm-usage"],
                )
            except PlaywrightError as exc:
                raise ToolFailure(
                    ErrorCode.DEPENDENCY_ERROR,
                    f"Chromium did not start ({str(exc).splitlines()[0]}); set `[sections.web_ops] browser_executable`"
                    " or use render='http'.",
                ) from None
            return self._browser

    async def render(
        self, url: str, *, wait_for: WaitFor, timeout_seconds: float, screenshot: bool = False
    ) -> RenderedPage:
        """Load a page with every request routed through the guard; its HTML after scripts ran."""
        browser = await self._ensure()
        async with self._slots:
            context = await browser.new_context(
                service_workers="block",
                user_agent=self.http.user_agent,
                viewport=SCREENSHOT_VIEWPORT,
                java_script_enabled=True,
                accept_downloads=False,
            )
            blocked: list[str] = []
            main_failure: list[ToolFailure] = []
            count = 0

            async def route(request_route: Any) -> None:
                nonlocal count
                request = request_route.request
                count += 1
                if count > MAX_SUBREQUESTS:
                    blocked.append(f"{request.url} (more than {MAX_SUBREQUESTS} requests)")
                    await request_route.abort("blockedbyclient")
                    return
                try:
                    answer = await self.http.request(
                        request.method,
                        request.url,
                        headers=await request.all_headers(),
                        content=request.post_data_buffer,
                    )
                except ToolFailure as failure:
                    blocked.append(f"{request.url[:300]}: {failure.message.split(';')[0]}")
                    if request.is_navigation_request() and request.frame.parent_frame is None:
                        main_failure.append(failure)
                    with contextlib.suppress(Exception):
                        await request_route.abort("blockedbyclient")
                    return
                headers = {k: v for k, v in answer.headers.items() if k not in ("content-encoding", "content-length")}
                with contextlib.suppress(Exception):  # the page may be gone already
                    await request_route.fulfill(status=answer.status, headers=headers, body=answer.body)

            await context.route("**/*", route)
            await context.route_web_socket("**/*", _refuse_websocket(blocked))
            try:
                page = await context.new_page()
                response = await page.goto(url, wait_until=wait_for, timeout=timeout_seconds * 1000)
                html = await page.content()
                title = await page.title()
                shot = await page.screenshot(type="png", full_page=False) if screenshot else None
                return RenderedPage(
                    url=page.url,
                    status=response.status if response is not None else None,
                    html=html,
                    title=title,
                    screenshot=shot,
                    blocked=blocked,
                    content_type=(await response.header_value("content-type") or "text/html").split(";")[0]
                    if response is not None
                    else "text/html",
                )
            except ToolFailure:
                raise
            except Exception as exc:
                if main_failure:
                    raise main_failure[0] from None
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
        self._browser = self._playwright = None

    @property
    def started(self) -> bool:
        return self._browser is not None


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
