"""HTTP requests that go only where the URL guard allows, to the very address it checked.

`GuardedHttp` checks every URL with the shared `UrlGuard` (in a worker thread: DNS blocks), then connects to
one of the checked addresses with the original host name in `Host` and in TLS (SNI and certificate check), so a
second DNS answer can never send the request elsewhere. Redirects are followed one hop at a time, each target
checked again (at most `max_redirects`). Bodies are streamed and cut at `max_bytes` (after decompression, so a
gzip bomb stops at the cap); the whole exchange is bounded by `timeout_seconds`. Proxies from the environment
are ignored: a proxy would resolve names itself.

A host that cannot be reached raises `Unreachable` (its name does not resolve: NOT_FOUND, as a page that does not
exist; no address takes the connection, the connection breaks, endless redirects: EXECUTION_FAILED), one that does
not answer in time `TimedOut` (TIMEOUT): both carry the host and why, for the callers that reach a *service* rather
than a page to code them as the service's (`shared.net.model_api.Service.failed`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from email.message import Message
from urllib.parse import urljoin

import anyio
import anyio.to_thread
import httpx2

from mcp_sections.shared.confinement.guards.urls import CheckedUrl, UrlGuard, parse_url
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.ground.hosts import url_host
from mcp_sections.shared.net.encoding import decode_body

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
HOP_BY_HOP = frozenset({"host", "connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection"})


class Unreachable(ToolFailure):
    """The host could not be reached; `reason` says why in a few words (no fix: the caller knows what to check)."""

    def __init__(self, code: ErrorCode, message: str, *, host: str, reason: str) -> None:
        super().__init__(code, message)
        self.host = host
        self.reason = reason


class TimedOut(ToolFailure):
    """The host did not answer within `seconds` (TIMEOUT)."""

    def __init__(self, message: str, *, host: str, seconds: float) -> None:
        super().__init__(ErrorCode.TIMEOUT, message)
        self.host = host
        self.seconds = seconds


def _unreachable(host: str, reason: str, message: str | None = None) -> Unreachable:
    """EXECUTION_FAILED for a page fetched (`message`, else `reason` and to check the URL or retry)."""
    said = message or f"{reason}; check the URL or try again later."
    return Unreachable(ErrorCode.EXECUTION_FAILED, said, host=host, reason=reason)


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
        """The guard's verdict on `url`; a host name that does not resolve (the guard's NOT_FOUND) is `Unreachable`,
        with the guard's message."""
        try:
            return await anyio.to_thread.run_sync(self.guard.check, url)
        except ToolFailure as failure:
            if failure.code is not ErrorCode.NOT_FOUND:
                raise
            host = parse_url(url).host
            raise Unreachable(
                ErrorCode.NOT_FOUND, failure.message, host=host, reason=f"the host {host!r} could not be resolved"
            ) from None

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
                        reason = f"more than {self.max_redirects} redirects"
                        raise Unreachable(
                            ErrorCode.EXECUTION_FAILED,
                            f"{reason} from {url}; fetch the last target directly if it is the page you want "
                            f"({urljoin(current, location)}).",
                            host=_host_of(url),
                            reason=reason,
                        )
                    redirects.append(response.url)
                    current = urljoin(response.url, location)
        except TimeoutError:
            raise TimedOut(
                f"{url} did not answer within {self.timeout_seconds:g} s; try again later.",
                host=_host_of(url),
                seconds=self.timeout_seconds,
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
                raise TimedOut(
                    f"{checked.url} timed out; try again later.", host=parsed.host, seconds=self.timeout_seconds
                ) from None
            except httpx2.TransportError as exc:  # the connection broke, or the answer was not HTTP
                said = f"the connection failed ({_reason(exc)})"
                raise _unreachable(parsed.host, said, f"{checked.url} failed: {_reason(exc)}.") from None
            except httpx2.HTTPError as exc:
                raise ToolFailure(ErrorCode.EXECUTION_FAILED, f"{checked.url} failed: {_reason(exc)}.") from None
            try:
                body, truncated = await _read_capped(response, limit)
            except httpx2.TimeoutException:
                raise TimedOut(
                    f"reading {checked.url} timed out; try again later.", host=parsed.host, seconds=self.timeout_seconds
                ) from None
            except httpx2.TransportError as exc:
                said = f"the connection broke while reading ({_reason(exc)})"
                raise _unreachable(parsed.host, said, f"reading {checked.url} failed: {_reason(exc)}.") from None
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
        raise _unreachable(parsed.host, f"could not connect to {parsed.origin} ({_reason(last_error)})")


async def _read_capped(response: httpx2.Response, limit: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False


def _host_of(url: str) -> str:
    """The host of a URL as the guard reads it ("" for one it never read: a time-out before its check)."""
    try:
        return parse_url(url).host
    except (ToolFailure, ValueError):
        return ""


def _reason(exc: Exception | None) -> str:
    if exc is None:
        return "no address"
    return str(exc) or type(exc).__name__
