"""HTTP requests that go only where the URL guard allows, to the very address it checked.

`GuardedHttp` checks every URL with the shared `UrlGuard` (in a worker thread: DNS blocks), then connects to
one of the checked addresses with the original host name in `Host` and in TLS (SNI and certificate check), so a
second DNS answer can never send the request elsewhere. Redirects are followed one hop at a time, each target
checked again (at most `max_redirects`). Bodies are streamed and cut at `max_bytes` (after decompression, so a
gzip bomb stops at the cap); the whole exchange is bounded by `timeout_seconds`. Proxies from the environment
are ignored: a proxy would resolve names itself.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from email.message import Message
from urllib.parse import urljoin

import anyio
import anyio.to_thread
import httpx2

from mcp_sections.shared.confinement.guards.urls import CheckedUrl, UrlGuard
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.ground.hosts import url_host
from mcp_sections.shared.net.encoding import decode_body

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
HOP_BY_HOP = frozenset({"host", "connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection"})


@dataclass
class HttpResponse:
    """One answered request: the final URL, its status, headers (lower-case names) and the body read."""

    url: str
    status: int
    headers: dict[str, str]
    body: bytes
    truncated: bool = False
    redirects: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def charset(self) -> str | None:
        message = Message()
        message["content-type"] = self.headers.get("content-type", "")
        charset = message.get_content_charset()
        return charset or None

    def text(self) -> str:
        """The body decoded as a browser decodes it: BOM, header charset, `<meta>` in HTML, else UTF-8 or
        windows-1252 (`shared.net.encoding`)."""
        return decode_body(self.body, self.charset, self.content_type)


class GuardedHttp:
    """An HTTP client confined by a `UrlGuard`; one per section, closed with `aclose()`."""

    def __init__(
        self,
        guard: UrlGuard,
        *,
        user_agent: str,
        max_bytes: int = 5_000_000,
        timeout_seconds: float = 20.0,
        max_redirects: int = 5,
        verify_tls: bool = True,
    ) -> None:
        self.guard = guard
        self.user_agent = user_agent
        self.max_bytes = max_bytes
        self.timeout_seconds = timeout_seconds
        self.max_redirects = max_redirects
        self._client = httpx2.AsyncClient(
            trust_env=False, follow_redirects=False, verify=verify_tls, timeout=httpx2.Timeout(timeout_seconds)
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def check(self, url: str) -> CheckedUrl:
        return await anyio.to_thread.run_sync(self.guard.check, url)

    async def get(
        self, url: str, *, headers: dict[str, str] | None = None, max_bytes: int | None = None
    ) -> HttpResponse:
        """GET with redirects followed hop by hop, each hop checked; TIMEOUT past `timeout_seconds` in all."""
        started = time.perf_counter()
        redirects: list[str] = []
        try:
            with anyio.fail_after(self.timeout_seconds):
                current = url
                while True:
                    try:
                        response = await self.request("GET", current, headers=headers, max_bytes=max_bytes)
                    except ToolFailure as failure:
                        if not redirects or failure.code is not ErrorCode.PERMISSION_DENIED:
                            raise
                        raise ToolFailure(
                            failure.code,
                            f"{url} redirects to {current[:300]}, which is refused: {failure.message}",
                            **failure.details,
                        ) from None
                    location = response.headers.get("location")
                    if response.status not in REDIRECT_STATUSES or not location:
                        break
                    if len(redirects) >= self.max_redirects:
                        raise ToolFailure(
                            ErrorCode.EXECUTION_FAILED,
                            f"more than {self.max_redirects} redirects from {url}; fetch the last target directly "
                            f"if it is the page you want ({urljoin(current, location)}).",
                        )
                    redirects.append(response.url)
                    current = urljoin(response.url, location)
        except TimeoutError:
            raise ToolFailure(
                ErrorCode.TIMEOUT, f"{url} did not answer within {self.timeout_seconds:g} s; try again later."
            ) from None
        response.redirects = redirects
        response.seconds = time.perf_counter() - started
        return response

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
        max_bytes: int | None = None,
    ) -> HttpResponse:
        """One request, no redirect followed, to an address the guard checked for this very URL."""
        checked = await self.check(url)
        parsed = checked.parsed
        sent = {k: v for k, v in (headers or {}).items() if k.lower() not in HOP_BY_HOP}
        sent.setdefault("User-Agent", self.user_agent)
        sent["Host"] = parsed.origin.split("://", 1)[1]
        extensions = {"sni_hostname": parsed.host} if parsed.scheme == "https" and parsed.ip is None else {}
        limit = self.max_bytes if max_bytes is None else max_bytes
        last_error: Exception | None = None
        for address in checked.addresses[:3]:
            pinned = f"{parsed.scheme}://{url_host(address)}:{parsed.port}{parsed.path_and_query}"
            request = self._client.build_request(method, pinned, headers=sent, content=content, extensions=extensions)
            try:
                response = await self._client.send(request, stream=True)
            except httpx2.ConnectError as exc:
                last_error = exc
                continue
            except httpx2.TimeoutException:
                raise ToolFailure(ErrorCode.TIMEOUT, f"{checked.url} timed out; try again later.") from None
            except httpx2.HTTPError as exc:
                raise ToolFailure(ErrorCode.EXECUTION_FAILED, f"{checked.url} failed: {_reason(exc)}.") from None
            try:
                body, truncated = await _read_capped(response, limit)
            except httpx2.HTTPError as exc:
                raise ToolFailure(
                    ErrorCode.EXECUTION_FAILED, f"reading {checked.url} failed: {_reason(exc)}."
                ) from None
            finally:
                await response.aclose()
            names = {key.lower() for key in response.headers}
            return HttpResponse(
                url=checked.url,
                status=response.status_code,
                headers={name: ", ".join(response.headers.get_list(name)) for name in names},
                body=body,
                truncated=truncated,
            )
        raise ToolFailure(
            ErrorCode.EXECUTION_FAILED,
            f"could not connect to {parsed.origin} ({_reason(last_error)}); check the URL or try again later.",
        )


async def _read_capped(response: httpx2.Response, limit: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False


def _reason(exc: Exception | None) -> str:
    if exc is None:
        return "no address"
    return str(exc) or type(exc).__name__
