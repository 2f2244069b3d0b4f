"""The egress proxy on real sockets: what it lets through, what it refuses, and the limits that bound a caller.

Destinations are real listeners on loopback addresses opened by the URL guard's allow-list; a canary on
127.0.0.1 stands for everything that must stay unreached. Names resolve through a scripted resolver, so a
rebinding name can answer differently at each lookup.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import stat
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mcp_sections.shared.confinement.egress_proxy import EgressProxy, GuardPolicy, HostListPolicy, Limits
from mcp_sections.shared.confinement.guards.urls import AllowList, UrlGuard

pytestmark = pytest.mark.anyio

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\nhello"


@dataclass
class Listener:
    """A TCP server that records what each connection sent; `respond` decides its answer."""

    host: str
    port: int = 0
    received: list[bytes] = field(default_factory=list)
    connections: int = 0
    respond: Callable[[bytes], bytes] | None = None
    echo: bool = False
    server: asyncio.Server | None = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = b""
        self.connections += 1
        try:
            if self.echo:  # echo until EOF, then say goodbye and close (a half-closed peer can still read)
                while chunk := await reader.read(65536):
                    data += chunk
                    writer.write(chunk)
                    await writer.drain()
                writer.write(b"bye")
                await writer.drain()
            else:
                data = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", data)
                data += await reader.readexactly(int(length.group(1)) if length else 0)
                with contextlib.suppress(TimeoutError):  # anything after the request would be a smuggled one
                    async with asyncio.timeout(0.05):
                        data += await reader.read(65536)
                writer.write(self.respond(data) if self.respond else OK)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self.received.append(data)
            writer.close()

    async def __aenter__(self) -> Listener:
        self.server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()


def guard_for(*allowed: str, resolver: Callable[[str, int], list[str]] | None = None) -> UrlGuard:
    if resolver is None:
        return UrlGuard(AllowList.parse(allowed))
    return UrlGuard(AllowList.parse(allowed), resolver=resolver)


@contextlib.asynccontextmanager
async def proxy_for(guard: UrlGuard, **limits: float) -> AsyncIterator[tuple[EgressProxy, int]]:
    async with EgressProxy(GuardPolicy(guard), Limits(**limits)) as proxy:  # type: ignore[arg-type]
        url = await proxy.listen_tcp()
        yield proxy, int(url.rsplit(":", 1)[1])


async def exchange(port: int, request: bytes, *, read_all: bool = True) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    async with asyncio.timeout(5):
        answer = await reader.read() if read_all else await reader.readuntil(b"\r\n\r\n")
    writer.close()
    return answer


@pytest.fixture
async def canary() -> AsyncIterator[Listener]:
    async with Listener("127.0.0.1") as listener:
        yield listener


# ---- plain HTTP --------------------------------------------------------------------------------------------------
async def test_an_allowed_plain_request_goes_in_origin_form_and_closes(canary: Listener) -> None:
    async with Listener("127.0.0.1") as site, proxy_for(guard_for(f"127.0.0.1:{site.port}")) as (proxy, port):
        request = (
            f"GET http://127.0.0.1:{site.port}/page?q=1 HTTP/1.1\r\nHost: evil.example\r\n"
            "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eDp5\r\nAccept: */*\r\n\r\n"
        )
        answer = await exchange(port, request.encode())
    assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"hello")
    head = answer.split(b"\r\n\r\n")[0].lower()
    assert b"connection: close" in head and b"keep-alive" not in head  # the client must not reuse it
    sent = site.received[0].decode()
    assert sent.startswith("GET /page?q=1 HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{site.port}\r\n" in sent and "evil.example" not in sent  # Host is the URL's
    assert "Proxy-" not in sent and "Connection: close" in sent and "Accept: */*" in sent
    assert proxy.ledger.requests == 1 and proxy.ledger.refusals == [] and canary.connections == 0


async def test_a_request_body_is_relayed_to_its_length_and_nothing_after_it() -> None:
    async with Listener("127.0.0.1") as site, proxy_for(guard_for(f"127.0.0.1:{site.port}")) as (_, port):
        smuggled = f"GET http://127.0.0.1:{site.port}/second HTTP/1.1\r\nHost: x\r\n\r\n"
        request = f"POST http://127.0.0.1:{site.port}/form HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde{smuggled}"
        answer = await exchange(port, request.encode())
    assert answer.startswith(b"HTTP/1.1 200")
    assert site.received[0].endswith(b"\r\n\r\nabcde") and len(site.received) == 1
    async with Listener("127.0.0.1") as site, proxy_for(guard_for(f"127.0.0.1:{site.port}")) as (_, port):
        chunked = (
            f"POST http://127.0.0.1:{site.port}/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n0\r\n\r\n"
        )
        assert (await exchange(port, chunked.encode())).startswith(b"HTTP/1.1 411")
    assert site.received == []


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("http://127.0.0.1:{canary}/x", "loopback"),
        ("http://localhost:{canary}/x", "loopback"),
        ("http://2130706433:{canary}/x", "loopback"),
        ("http://[::ffff:127.0.0.1]:{canary}/x", "IPv6 form of 127.0.0.1"),
        ("http://169.254.169.254/latest/meta-data/", "metadata"),
        ("http://10.0.0.1/", "private"),
        ("http://metadata.google.internal/", "metadata"),
    ],
)
async def test_a_refused_plain_request_is_answered_403_and_recorded(canary: Listener, target: str, reason: str) -> None:
    url = target.format(canary=canary.port)
    async with proxy_for(guard_for()) as (proxy, port):
        answer = await exchange(port, f"GET {url} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 403") and reason.encode() in answer
    assert [refusal.target for refusal in proxy.ledger.refusals] == [url]
    assert reason in str(proxy.ledger.refusals[0]) and proxy.ledger.requests == 0
    assert canary.connections == 0


# ---- CONNECT -----------------------------------------------------------------------------------------------------
async def test_a_tunnel_relays_both_ways_and_passes_a_half_close_on() -> None:
    async with Listener("127.0.0.1", echo=True) as site, proxy_for(guard_for(f"127.0.0.1:{site.port}")) as (_, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"CONNECT 127.0.0.1:{site.port} HTTP/1.1\r\nHost: 127.0.0.1:{site.port}\r\n\r\n".encode())
        async with asyncio.timeout(5):
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
            writer.write(b"ping")
            assert await reader.readexactly(4) == b"ping"
            writer.write_eof()  # the client is done sending; the destination may still answer
            assert await reader.read() == b"bye"  # ... and the tunnel ends when the destination closes
        writer.close()
    assert site.received == [b"ping"]


@pytest.mark.parametrize(
    ("target", "status", "reason"),
    [
        ("127.0.0.1:{canary}", 403, "loopback"),
        ("[::1]:{canary}", 403, "loopback"),
        ("0x7f.1:{canary}", 403, "loopback"),
        ("169.254.169.254:443", 403, "metadata"),
        ("user@127.0.0.1:{canary}", 400, "host and port"),
        ("127.0.0.1", 400, "host and port"),
    ],
)
async def test_a_refused_tunnel_never_reaches_its_destination(
    canary: Listener, target: str, status: int, reason: str
) -> None:
    async with proxy_for(guard_for()) as (_, port):
        answer = await exchange(port, f"CONNECT {target.format(canary=canary.port)} HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(f"HTTP/1.1 {status}".encode()) and reason.encode() in answer
    assert canary.connections == 0


async def test_a_rebinding_name_is_resolved_once_and_the_checked_address_is_used() -> None:
    """rebind.test answers 127.0.0.2 (allowed) at its first lookup and 127.0.0.1 (the canary) after: only 127.0.0.2
    is reached, by a plain request and by a tunnel, each with its one lookup."""
    async with Listener("127.0.0.2") as site, Listener("127.0.0.1", port=site.port) as canary:
        for request in (
            f"GET http://rebind.test:{site.port}/ HTTP/1.1\r\n\r\n",
            f"CONNECT rebind.test:{site.port} HTTP/1.1\r\n\r\n",
        ):
            lookups: list[str] = []

            def resolver(host: str, port: int, lookups: list[str] = lookups) -> list[str]:
                lookups.append(host)
                return ["127.0.0.2"] if len(lookups) == 1 else ["127.0.0.1"]

            async with proxy_for(guard_for("127.0.0.2/32", resolver=resolver)) as (proxy, port):
                answer = await exchange(port, request.encode(), read_all=request.startswith("GET"))
            assert answer.startswith(b"HTTP/1.1 200") and lookups == ["rebind.test"]
            assert proxy.ledger.refusals == []
    assert site.connections == 2 and canary.connections == 0


# ---- malformed and oversize requests, and limits ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET http://example.org/ HTTP/1.1\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n", 431),
        (b"GET http://example.org/ HTTP/1.1\r\n" + b"X-A: 1\r\n" * 150 + b"\r\n", 431),
        (b"GET / HTTP/1.1\r\nHost: example.org\r\n\r\n", 400),  # not a proxy request
        (b"GET https://example.org/ HTTP/1.1\r\n\r\n", 400),  # https goes through CONNECT
        (b"GET http://example.org/ SPDY/3\r\n\r\n", 400),
        (b"GET http://example.org/ HTTP/1.1\r\nBad Header: x\r\n\r\n", 400),
        (b"GET http://example.org/ HTTP/1.1\r\n folded: x\r\n\r\n", 400),
        (b"GET http://example.org/ HTTP/1.1\r\nX-A: 1\nGET /smuggled HTTP/1.1\r\n\r\n", 400),
    ],
)
async def test_malformed_and_oversize_requests_are_answered_and_closed(request_bytes: bytes, status: int) -> None:
    async with proxy_for(guard_for()) as (proxy, port):
        answer = await exchange(port, request_bytes)
    assert answer.startswith(f"HTTP/1.1 {status}".encode())
    assert proxy.ledger.requests == 0


async def test_a_slow_request_head_is_cut_off() -> None:
    async with proxy_for(guard_for(), head_timeout=0.3) as (_, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET http://example.org/ HTTP/1.1\r\nX-Slow: ")
        async with asyncio.timeout(5):
            assert (await reader.read()).startswith(b"HTTP/1.1 408")
        writer.close()


async def test_the_request_cap_the_connection_cap_and_the_byte_caps_hold() -> None:
    async with Listener("127.0.0.1") as site:
        allowed = guard_for(f"127.0.0.1:{site.port}")
        request = f"GET http://127.0.0.1:{site.port}/ HTTP/1.1\r\n\r\n".encode()
        async with proxy_for(allowed, max_requests=2) as (proxy, port):
            answers = [await exchange(port, request) for _ in range(3)]
        assert [a[:12] for a in answers] == [b"HTTP/1.1 200", b"HTTP/1.1 200", b"HTTP/1.1 403"]
        assert "more than 2 requests" in str(proxy.ledger.refusals[0]) and len(site.received) == 2

        site.respond = lambda _: b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100_000
        async with proxy_for(allowed, max_bytes_per_connection=10_000) as (proxy, port):
            answer = await exchange(port, request)
        assert len(answer) <= 10_000 and "cut at 10000 bytes" in str(proxy.ledger.refusals[0])
        async with proxy_for(allowed, max_bytes=150_000) as (proxy, port):
            first, second, third = [await exchange(port, request) for _ in range(3)]
        assert len(first) > 100_000 and len(second) < 100_000 and third.startswith(b"HTTP/1.1 403")

        async with proxy_for(allowed, max_connections=2) as (proxy, port):
            idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
            await asyncio.sleep(0.05)
            assert (await exchange(port, request)).startswith(b"HTTP/1.1 503")
            for _, writer in idle:
                writer.close()


async def test_an_idle_tunnel_is_closed() -> None:
    async with Listener("127.0.0.1", echo=True) as site:
        allowed = guard_for(f"127.0.0.1:{site.port}")
        async with proxy_for(allowed, idle_timeout=0.3) as (_, port):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"CONNECT 127.0.0.1:{site.port} HTTP/1.1\r\n\r\n".encode())
            async with asyncio.timeout(5):
                await reader.readuntil(b"\r\n\r\n")
                assert await reader.read() == b""  # nothing moved: closed without waiting for either side
            writer.close()


# ---- the Unix socket and the host allow-list (an installer's registries) ------------------------------------------
async def test_a_unix_socket_proxy_opens_only_listed_hosts_at_allowed_addresses(
    tmp_path: Path, canary: Listener
) -> None:
    async with Listener("127.0.0.2") as registry:
        table = {"registry.test": ["127.0.0.2"], "files.registry.test": ["127.0.0.2"], "evil.test": ["127.0.0.2"]}
        table["rebound.registry.test"] = ["127.0.0.1"]
        guard = UrlGuard(AllowList.parse(["127.0.0.2/32"]), resolver=lambda host, port: table[host])
        ports = [registry.port, canary.port]
        policy = HostListPolicy(["registry.test", "*.registry.test"], ports=ports, guard=guard)
        proxy = EgressProxy(policy)
        path = await proxy.listen_unix(tmp_path / "egress.sock")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600

        async def ask(line: str) -> bytes:
            reader, writer = await asyncio.open_unix_connection(str(path))
            writer.write(line.encode())
            async with asyncio.timeout(5):
                answer = await reader.readuntil(b"\r\n\r\n")
                if not answer.startswith(b"HTTP/1.1 200"):
                    answer += await reader.read()
            writer.close()
            return answer

        for host in ("registry.test", "files.registry.test"):
            assert (await ask(f"CONNECT {host}:{registry.port} HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 200")
        refused = {
            f"CONNECT evil.test:{registry.port} HTTP/1.1\r\n\r\n": "not one of the hosts",
            "CONNECT registry.test:8443 HTTP/1.1\r\n\r\n": "port 8443 is not open",
            f"CONNECT 127.0.0.1:{canary.port} HTTP/1.1\r\n\r\n": "not one of the hosts",
            f"GET http://registry.test:{registry.port}/ HTTP/1.1\r\n\r\n": "not a registry this proxy opens over plain",
            # a listed name that resolves to loopback is still refused
            f"CONNECT rebound.registry.test:{canary.port} HTTP/1.1\r\n\r\n": "loopback",
        }
        for line, reason in refused.items():
            answer = await ask(line)
            assert answer.startswith(b"HTTP/1.1 403") and reason.encode() in answer, answer
        await proxy.aclose()
    assert not path.exists() and canary.connections == 0
    with pytest.raises(OSError), socket.socket(socket.AF_UNIX) as client:
        client.connect(str(path))
