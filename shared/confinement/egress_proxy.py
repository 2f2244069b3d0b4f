"""A filtering forward proxy: each connection goes only where a policy allows, to the very address it checked.

`EgressProxy` speaks the two forms an HTTP proxy client uses: `CONNECT host:port` tunnels (HTTPS, WebSockets,
anything over TLS) and absolute-form plain-HTTP requests (`GET http://host/path`). For each it asks its `Policy`
about the destination (kind, host, port); the policy resolves the name once, checks every address and returns
the addresses to use, and the proxy connects to one of those, never to a second resolution, so DNS rebinding has
no window. A refusal is answered 403 with the reason and kept in the proxy's `Ledger`.

One proxy is one caller: its ledger holds that caller's requests, bytes and refusals, and its `Limits` bound that
caller alone (connections at once, request heads, idle and connect timeouts, requests and bytes in all). It
listens on a loopback TCP port (`listen_tcp`, for a browser context) and/or a Unix socket (`listen_unix`, bound
into a sandbox that has no network of its own).

Policies: `GuardPolicy` (any destination the URL guard allows: web_ops' browser), `HostListPolicy` (tunnels to
listed hosts and ports only, at addresses the URL guard allows: a package installer's registries) and
`DenyAllPolicy` (a browser's own background traffic). A plain-HTTP request is forwarded with `Connection: close`
(one request per connection, so each one is seen and counted); a tunnel is opaque, so HTTPS requests sharing one
tunnel count once. Clients that only speak TCP proxy URLs (pip, npm) need a loopback-to-Unix-socket relay on
their side of a sandbox to use `listen_unix`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import threading
from collections.abc import Awaitable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol
from urllib.parse import urlsplit

from mcp_sections.shared.confinement.guards.urls import UrlGuard, parse_url
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, permission_denied
from mcp_sections.shared.ground.hosts import url_host

Kind = Literal["http", "connect"]
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer"}
    | {"upgrade", "transfer-encoding"}
)
_CHUNK = 65_536
MAX_REFUSALS_KEPT = 200
MAX_RESPONSE_HEAD = 262_144  # what Chromium itself accepts
LINGER_SECONDS = 0.5  # after an error answer, how long the rest of a request is read and dropped


@dataclass(frozen=True)
class Destination:
    """Where a client asked to go: a plain-HTTP request (`target` is its URL) or a tunnel (`target` is host:port)."""

    kind: Kind
    host: str
    port: int
    target: str


class Policy(Protocol):
    """Decides destinations. Blocking when it resolves a name: the proxy calls it in a worker thread then (and
    directly for an IP address)."""

    def addresses(self, destination: Destination) -> Sequence[str]:
        """The checked IP addresses to connect to, or raise `ToolFailure` saying why the destination is refused."""
        ...


class GuardPolicy:
    """Whatever the URL guard allows (public addresses plus its allow-list): the browser's policy."""

    def __init__(self, guard: UrlGuard) -> None:
        self.guard = guard

    def addresses(self, destination: Destination) -> Sequence[str]:
        scheme = "http" if destination.kind == "http" else "https"
        return self.guard.check(_origin(scheme, destination.host, destination.port)).addresses


class HostListPolicy:
    """Only the listed destinations, and there only what the URL guard allows (a listed name that resolves to loopback
    or a private address is still refused, unless the guard's allow-list opens it): an installer's policy towards
    its registries. `hosts` are `name` or `*.suffix`, reached by tunnels (TLS end to end) on `ports`; `plain_http`
    holds `(host, port)` pairs also reached by plain HTTP (a registry configured with an `http://` URL)."""

    def __init__(
        self,
        hosts: Iterable[str],
        ports: Iterable[int] = (443,),
        guard: UrlGuard | None = None,
        plain_http: Iterable[tuple[str, int]] = (),
    ) -> None:
        names = [host.strip().lower().rstrip(".") for host in hosts if host.strip()]
        self.exact = frozenset(name for name in names if not name.startswith("*."))
        self.suffixes = tuple(name[1:] for name in names if name.startswith("*."))  # ".example.org"
        self.ports = frozenset(ports)
        self.plain_http = frozenset((host.lower().rstrip("."), port) for host, port in plain_http)
        self.guard = guard or UrlGuard()

    def addresses(self, destination: Destination) -> Sequence[str]:
        host = destination.host
        if destination.kind != "connect":
            if (host, destination.port) not in self.plain_http:
                raise permission_denied(
                    f"{host}:{destination.port} is not a registry this proxy opens over plain HTTP ({self._listed()})."
                )
            return self.guard.check(_origin("http", host, destination.port)).addresses
        if not (host in self.exact or host.endswith(self.suffixes)):
            raise permission_denied(f"{host} is not one of the hosts this proxy opens ({self._listed()}).")
        if destination.port not in self.ports:
            ports = ", ".join(map(str, sorted(self.ports)))
            raise permission_denied(f"port {destination.port} is not open through this proxy (only {ports}).")
        return self.guard.check(_origin("https", host, destination.port)).addresses

    def _listed(self) -> str:
        plain = [f"http://{_authority(host, port)}" for host, port in sorted(self.plain_http)]
        return ", ".join(sorted(self.exact) + [f"*{suffix}" for suffix in self.suffixes] + plain)


class DenyAllPolicy:
    """Refuses everything (a browser's own background traffic: updates, safe browsing, sign-in, metrics)."""

    def __init__(self, reason: str = "this proxy opens no destination") -> None:
        self.reason = reason

    def addresses(self, destination: Destination) -> Sequence[str]:
        raise permission_denied(f"{self.reason}.")


@dataclass(frozen=True)
class Limits:
    """Bounds of one proxy (one caller)."""

    max_connections: int = 64  # client connections open at once; more are answered 503
    max_head_bytes: int = 32_768  # request line and headers of one request
    max_headers: int = 100
    head_timeout: float = 10.0  # seconds to send a complete request head
    connect_timeout: float = 10.0  # seconds to reach the destination
    idle_timeout: float = 60.0  # a connection with no byte either way for this long is closed
    max_requests: int | None = None  # plain requests plus tunnels admitted, in all
    max_bytes: int | None = None  # bytes relayed both ways, in all
    max_bytes_per_connection: int | None = None  # bytes relayed both ways on one connection (or tunnel)


@dataclass(frozen=True)
class Refusal:
    target: str  # the URL of a plain request, or host:port of a tunnel
    failure: ToolFailure

    @property
    def reason(self) -> str:
        return self.failure.message.split(";", 1)[0].rstrip(".")

    def __str__(self) -> str:
        return f"{self.target[:300]}: {self.reason}"


@dataclass
class Ledger:
    """What one caller did through the proxy: admitted requests and tunnels, bytes relayed, refusals."""

    requests: int = 0
    bytes: int = 0
    refusals: list[Refusal] = field(default_factory=list)
    refusals_dropped: int = 0  # refusals past MAX_REFUSALS_KEPT, counted only

    def refuse(self, target: str, failure: ToolFailure) -> None:
        if len(self.refusals) < MAX_REFUSALS_KEPT:
            self.refusals.append(Refusal(target, failure))
        else:
            self.refusals_dropped += 1

    def refusal_for(self, url: str) -> Refusal | None:
        """The refusal of this URL (a plain request), or of its host and port (a tunnel), if any."""
        with contextlib.suppress(ToolFailure):
            parsed = parse_url(url)
            tunnel = _authority(parsed.host, parsed.port)
            for refusal in reversed(self.refusals):
                if refusal.target in (url, parsed.url, tunnel):
                    return refusal
        return None


class _Refused(Exception):
    """Answer the client `status` and record `failure` against `target`."""

    def __init__(self, status: int, failure: ToolFailure, target: str = "") -> None:
        self.status = status
        self.failure = failure
        self.target = target


class _Cut(Exception):
    """A byte limit or the idle timeout ended a connection; `failure` is set when a limit did (it is recorded)."""

    def __init__(self, failure: ToolFailure | None = None) -> None:
        self.failure = failure


class EgressProxy:
    """A forward proxy for one caller; `async with EgressProxy(policy) as proxy: url = await proxy.listen_tcp()`."""

    def __init__(self, policy: Policy, limits: Limits | None = None) -> None:
        self.policy = policy
        self.limits = limits or Limits()
        self.ledger = Ledger()
        self._servers: list[asyncio.Server] = []
        self._unix_paths: list[Path] = []
        self._handlers: set[asyncio.Task[None]] = set()
        self._open = 0

    async def listen_tcp(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on a TCP port (an ephemeral one by default); the proxy URL to give a client."""
        server = await asyncio.start_server(self._accept, host, port, limit=self.limits.max_head_bytes)
        self._servers.append(server)
        bound = server.sockets[0].getsockname()
        return f"http://{_authority(str(bound[0]), int(bound[1]))}"

    async def listen_unix(self, path: str | os.PathLike[str]) -> Path:
        """Listen on a Unix socket at `path` (owner-only; removed by `aclose`)."""
        socket_path = Path(path)
        server = await asyncio.start_unix_server(self._accept, path=str(socket_path), limit=self.limits.max_head_bytes)
        socket_path.chmod(0o600)
        self._servers.append(server)
        self._unix_paths.append(socket_path)
        return socket_path

    async def aclose(self) -> None:
        """Stop listening and cut every open connection."""
        for server in self._servers:
            server.close()
        for task in list(self._handlers):
            task.cancel()
        for task in list(self._handlers):
            with contextlib.suppress(BaseException):
                await task
        for server in self._servers:
            with contextlib.suppress(Exception):
                await server.wait_closed()
        for socket_path in self._unix_paths:
            socket_path.unlink(missing_ok=True)
        self._servers.clear()
        self._unix_paths.clear()

    async def __aenter__(self) -> EgressProxy:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # ---- one client connection --------------------------------------------------------------------------------
    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self._open += 1
        try:
            if self._open > self.limits.max_connections:
                await _answer(reader, writer, 503, f"more than {self.limits.max_connections} connections at once")
                return
            await self._serve(reader, writer)
        except _Refused as refused:
            if refused.target:
                self.ledger.refuse(refused.target, refused.failure)
            with contextlib.suppress(Exception):
                await _answer(reader, writer, refused.status, refused.failure.message)
        except (OSError, asyncio.IncompleteReadError, _Cut, asyncio.CancelledError):
            pass  # the client or the destination went away, a limit cut the connection, or the proxy closed
        except Exception as exc:  # a policy bug must not leave the client hanging
            with contextlib.suppress(Exception):
                await _answer(reader, writer, 500, f"the proxy failed ({type(exc).__name__})")
        finally:
            self._open -= 1
            self._handlers.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        method, target, headers = await self._read_head(reader)
        destination = _tunnel_destination(target) if method == "CONNECT" else _http_destination(target)
        body_length = 0 if method == "CONNECT" else _body_length(headers)
        upstream_reader, upstream_writer = await self._connect(destination)
        meter = _Meter(self.ledger, self.limits)
        try:
            if destination.kind == "connect":
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await writer.drain()
                await self._relay(reader, writer, upstream_reader, upstream_writer, meter)
                return
            await self._forward_request(method, destination, headers, body_length, reader, upstream_writer, meter)
            await self._forward_response(upstream_reader, writer, meter)
        except _Cut as cut:
            if cut.failure is not None:
                self.ledger.refuse(destination.target, cut.failure)
            raise
        finally:
            with contextlib.suppress(Exception):
                upstream_writer.close()

    async def _read_head(self, reader: asyncio.StreamReader) -> tuple[str, str, list[tuple[str, str]]]:
        try:
            async with asyncio.timeout(self.limits.head_timeout):
                raw = await reader.readuntil(b"\r\n\r\n")
        except TimeoutError:
            raise _Refused(408, _failure(f"no complete request within {self.limits.head_timeout:g} s")) from None
        except asyncio.LimitOverrunError:
            too_large = f"the request head is larger than {self.limits.max_head_bytes} bytes"
            raise _Refused(431, _failure(too_large)) from None
        lines = raw[:-4].decode("latin-1").split("\r\n")
        if any(ch in line for line in lines for ch in "\r\n\0"):  # a bare CR or LF could frame a second request
            raise _Refused(400, _failure("a bare CR, LF or NUL in the request head"))
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _Refused(400, _failure("not an HTTP/1.x request line"))
        if len(lines) - 1 > self.limits.max_headers:
            raise _Refused(431, _failure(f"more than {self.limits.max_headers} header lines"))
        headers: list[tuple[str, str]] = []
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip() or any(ch in name for ch in " \t"):
                raise _Refused(400, _failure("a malformed header line"))
            headers.append((name, value.strip()))
        return parts[0].upper(), parts[1], headers

    async def _connect(self, destination: Destination) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Check the destination, count it, and connect to one of the addresses the policy returned."""
        target = destination.target
        limit = self.limits.max_requests
        if limit is not None and self.ledger.requests >= limit:
            raise _Refused(403, _failure(f"more than {limit} requests", ErrorCode.MAX_LIMIT_EXCEEDED), target)
        total = self.limits.max_bytes
        if total is not None and self.ledger.bytes >= total:
            raise _Refused(403, _failure(f"more than {total} bytes in all", ErrorCode.MAX_LIMIT_EXCEEDED), target)
        try:
            if _is_ip(destination.host):  # no name to resolve: nothing to wait for
                addresses = self.policy.addresses(destination)
            else:
                addresses = await asyncio.to_thread(self.policy.addresses, destination)
        except ToolFailure as failure:
            raise _Refused(403, failure, target) from None
        self.ledger.requests += 1
        last: Exception | None = None
        for address in list(addresses)[:3]:
            try:
                async with asyncio.timeout(self.limits.connect_timeout):
                    return await asyncio.open_connection(address, destination.port, limit=MAX_RESPONSE_HEAD)
            except (OSError, TimeoutError) as exc:
                last = exc
        reason = f"could not connect to {target} ({last or 'no address'})"
        raise _Refused(502, _failure(reason, ErrorCode.EXECUTION_FAILED))

    async def _forward_request(
        self,
        method: str,
        destination: Destination,
        headers: list[tuple[str, str]],
        body_length: int,
        reader: asyncio.StreamReader,
        upstream: asyncio.StreamWriter,
        meter: _Meter,
    ) -> None:
        """Send the request in origin form with `Connection: close`, then exactly its declared body."""
        parts = urlsplit(destination.target)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        sent = [f"{method} {path} HTTP/1.1", f"Host: {parts.netloc}"]
        sent += [f"{name}: {value}" for name, value in headers if name.lower() not in HOP_BY_HOP | {"host"}]
        sent.append("Connection: close")
        head = ("\r\n".join(sent) + "\r\n\r\n").encode("latin-1")
        meter.add(len(head))
        upstream.write(head)
        while body_length > 0:
            chunk = await self._idle_bounded(reader.read(min(_CHUNK, body_length)))
            if not chunk:
                raise asyncio.IncompleteReadError(b"", body_length)
            body_length -= len(chunk)
            meter.add(len(chunk))
            upstream.write(chunk)
            await upstream.drain()
        await upstream.drain()

    async def _forward_response(
        self, upstream: asyncio.StreamReader, writer: asyncio.StreamWriter, meter: _Meter
    ) -> None:
        """The response head with `Connection: close` (the client must not reuse this connection), then the rest."""
        try:
            raw = await self._idle_bounded(upstream.readuntil(b"\r\n\r\n"))
        except asyncio.LimitOverrunError:
            raise _Refused(502, _failure("the response head is too large", ErrorCode.EXECUTION_FAILED)) from None
        except asyncio.IncompleteReadError:
            raise _Refused(
                502, _failure("the destination closed without an answer", ErrorCode.EXECUTION_FAILED)
            ) from None
        lines = raw[:-4].split(b"\r\n")
        kept = [lines[0], *(line for line in lines[1:] if line.split(b":", 1)[0].strip().lower() not in _HOP_BYTES)]
        head = b"\r\n".join([*kept, b"Connection: close"]) + b"\r\n\r\n"
        meter.add(len(head))
        writer.write(head)
        await self._copy(upstream, writer, meter)

    async def _relay(
        self,
        client_reader: asyncio.StreamReader,
        client_writer: asyncio.StreamWriter,
        upstream_reader: asyncio.StreamReader,
        upstream_writer: asyncio.StreamWriter,
        meter: _Meter,
    ) -> None:
        """Both directions at once until both ended (a half-close is passed on) or nothing moved for idle_timeout."""
        directions = {
            asyncio.ensure_future(self._copy(client_reader, upstream_writer, meter, half_close=True)),
            asyncio.ensure_future(self._copy(upstream_reader, client_writer, meter, half_close=True)),
        }
        try:
            pending = directions
            while pending:
                seen = meter.moved
                done, pending = await asyncio.wait(pending, timeout=self.limits.idle_timeout)
                for task in done:
                    task.result()  # a failure in either direction ends the tunnel
                if not done and meter.moved == seen:
                    return
        finally:
            for task in directions:
                task.cancel()
            await asyncio.gather(*directions, return_exceptions=True)

    async def _copy(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, meter: _Meter, *, half_close: bool = False
    ) -> None:
        while True:
            chunk = await (reader.read(_CHUNK) if half_close else self._idle_bounded(reader.read(_CHUNK)))
            if not chunk:
                break
            meter.add(len(chunk))
            writer.write(chunk)
            await writer.drain()
        if half_close and writer.can_write_eof():
            with contextlib.suppress(OSError):
                writer.write_eof()

    async def _idle_bounded(self, step: Awaitable[bytes]) -> bytes:
        try:
            async with asyncio.timeout(self.limits.idle_timeout):
                return await step
        except TimeoutError:
            raise _Cut from None


class _Meter:
    """Counts the bytes of one connection into the ledger and stops it past the byte limits."""

    def __init__(self, ledger: Ledger, limits: Limits) -> None:
        self.ledger = ledger
        self.limits = limits
        self.moved = 0

    def add(self, size: int) -> None:
        self.moved += size
        self.ledger.bytes += size
        per_connection, total = self.limits.max_bytes_per_connection, self.limits.max_bytes
        if per_connection is not None and self.moved > per_connection:
            raise _Cut(_failure(f"cut at {per_connection} bytes", ErrorCode.MAX_LIMIT_EXCEEDED))
        if total is not None and self.ledger.bytes > total:
            raise _Cut(_failure(f"cut at {total} bytes in all", ErrorCode.MAX_LIMIT_EXCEEDED))


_HOP_BYTES = frozenset(name.encode() for name in HOP_BY_HOP - {"transfer-encoding"})


def _body_length(headers: list[tuple[str, str]]) -> int:
    """The length of a plain request's body: its one Content-Length (chunked bodies are refused: no smuggling)."""
    if any(name.lower() == "transfer-encoding" for name, _ in headers):
        raise _Refused(411, _failure("chunked request bodies are not relayed; send a Content-Length"))
    lengths = {value for name, value in headers if name.lower() == "content-length"}
    if len(lengths) > 1 or not all(value.isdigit() for value in lengths):
        raise _Refused(400, _failure("a conflicting or invalid Content-Length"))
    return int(next(iter(lengths), "0"))


def _tunnel_destination(target: str) -> Destination:
    host, port = _host_port(target, default=None)
    return Destination("connect", host, port, _authority(host, port))


def _http_destination(target: str) -> Destination:
    if not target.lower().startswith("http://"):
        raise _Refused(400, _failure("only CONNECT and absolute http:// requests are proxied"))
    host, port = _host_port(urlsplit(target).netloc, default=80)
    return Destination("http", host, port, target)


def _host_port(authority: str, default: int | None) -> tuple[str, int]:
    try:
        parts = urlsplit(f"//{authority}")
        port = parts.port or default
        host = parts.hostname
    except ValueError:
        host, port = None, None
    if not host or port is None or "@" in authority:
        raise _Refused(400, _failure("a host and port without credentials are needed"))
    try:
        return parse_url(f"https://{_authority(host, port)}/").host, port
    except ToolFailure as failure:
        raise _Refused(400, failure, authority[:300]) from None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _authority(host: str, port: int) -> str:
    return f"{url_host(host)}:{port}"


def _origin(scheme: str, host: str, port: int) -> str:
    return f"{scheme}://{_authority(host, port)}/"


def _failure(message: str, code: ErrorCode = ErrorCode.PERMISSION_DENIED) -> ToolFailure:
    return ToolFailure(code, message)


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, status: int, message: str) -> None:
    """An error answer, then a lingering close: what the client still sends is read and dropped for a moment, so
    closing with unread bytes does not reset the connection before the client has read the answer."""
    reasons = {400: "Bad Request", 403: "Forbidden", 408: "Request Timeout", 411: "Length Required"}
    reasons |= {431: "Request Header Fields Too Large", 502: "Bad Gateway", 503: "Service Unavailable"}
    reasons |= {500: "Internal Server Error"}
    body = (message.rstrip(".") + ".\n").encode()
    writer.write(
        f"HTTP/1.1 {status} {reasons.get(status, 'Error')}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    if writer.can_write_eof():
        writer.write_eof()
    with contextlib.suppress(TimeoutError, OSError):
        async with asyncio.timeout(LINGER_SECONDS):
            for _ in range(16):
                if not await reader.read(_CHUNK):
                    break


@contextlib.contextmanager
def serving_unix(policy: Policy, path: Path, limits: Limits | None = None) -> Iterator[EgressProxy]:
    """An `EgressProxy` listening on the Unix socket `path`, served by an event loop of its own in a thread, for as
    long as the block lasts (for blocking callers, e.g. an installer started with `subprocess.run`)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="egress-proxy", daemon=True)
    thread.start()
    proxy = EgressProxy(policy, limits)
    try:
        asyncio.run_coroutine_threadsafe(proxy.listen_unix(path), loop).result(timeout=10)
        yield proxy
    finally:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(proxy.aclose(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
