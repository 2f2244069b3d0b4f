"""The URL guard: which URLs a section may fetch, and the addresses it may connect to for them.

Everything that fetches goes through `UrlGuard.check`: http/https only, no credentials in the URL, the host
normalised (IDNA; the decimal, hex, octal and short IPv4 forms browsers accept, e.g. `2130706433`, `0x7f.1`,
`0177.0.0.1`), resolved, and *every* address checked: loopback, private, link-local, CGNAT, unique-local,
multicast, reserved and unspecified ranges are refused, and so are IPv4 addresses hidden in IPv6 (IPv4-mapped,
NAT64, 6to4, Teredo) and the cloud metadata endpoints. The caller connects to the checked addresses it gets
back (`CheckedUrl.addresses`), never to a second resolution, so DNS rebinding has no window.

An allow-list opens chosen destinations: `host[:port]` entries (a name or an IP literal; any port when none is
given) and CIDR networks. Tests use it to reach a local site on one port; everything else on loopback stays
refused.

A guard for the pages of published dev servers (`UrlGuard(published=…)`, web_ops) reaches `127.0.0.1:<port>` and
`localhost:<port>` (any spelling of 127.0.0.1, never a name that merely resolves there: DNS rebinding) for the ports
a shell_ops relay publishes right now (`shared.confinement.published_ports`), plus the allow-list, and nothing else: no
other loopback address or port, and not the network either — the program behind a dev server has no network, and a page
it serves (its scripts, its redirects) must not get one through the fetcher.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

from mcp_sections.shared.ground.errors import invalid_input, not_found, permission_denied

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Sequence[str]]

MAX_URL_LENGTH = 2048
DEFAULT_PORTS = {"http": 80, "https": 443}

#: Cloud metadata endpoints that are (or may be) globally routable, refused on top of the non-global ranges.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "168.63.129.16", "fd00:ec2::254")
)
METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata", "metadata.azure.internal", "instance-data"})
NAT64_NETWORKS = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_LEGACY_IPV4 = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}$")
_HOST_CHARS = re.compile(r"^[a-z0-9.\-_]+$")


@dataclass(frozen=True)
class ParsedUrl:
    """A URL split and normalised, before any resolution."""

    scheme: str
    host: str  # lower-case ASCII name, or the canonical text of an IP address (IPv6 without brackets)
    port: int
    path_and_query: str
    url: str  # the normalised URL (fragment dropped)

    @property
    def ip(self) -> IPAddress | None:
        try:
            return ipaddress.ip_address(self.host)
        except ValueError:
            return None

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{_netloc(self.scheme, self.host, self.port)}"


@dataclass(frozen=True)
class CheckedUrl:
    """A URL that passed the guard, with the addresses to connect to (in resolver order)."""

    parsed: ParsedUrl
    addresses: tuple[str, ...]

    @property
    def url(self) -> str:
        return self.parsed.url


@dataclass(frozen=True)
class AllowList:
    """Destinations opened despite the address rules: `host[:port]` entries and CIDR networks."""

    hosts: frozenset[tuple[str, int | None]] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        hosts: set[tuple[str, int | None]] = set()
        networks: list[IPNetwork] = []
        for raw in entries:
            entry = raw.strip().lower()
            if not entry:
                continue
            if "/" in entry:
                try:
                    networks.append(ipaddress.ip_network(entry, strict=False))
                except ValueError:
                    raise ValueError(f"allow-list entry {raw!r} is not a CIDR network (e.g. 10.0.0.0/8)") from None
                continue
            host, port = _split_host_port(entry)
            if port is not None and not 0 < port < 65536:
                raise ValueError(f"allow-list entry {raw!r} has an invalid port")
            hosts.add((normalise_host(host), port))
        return cls(frozenset(hosts), tuple(networks))

    def allows_host(self, host: str, port: int) -> bool:
        return (host, port) in self.hosts or (host, None) in self.hosts

    def allows_address(self, address: IPAddress) -> bool:
        return any(address in network for network in self.networks)

    def __bool__(self) -> bool:
        return bool(self.hosts or self.networks)


def parse_url(url: str) -> ParsedUrl:
    """Split and normalise a URL (no DNS). INVALID_INPUT for what is no absolute http(s) URL."""
    if len(url) > MAX_URL_LENGTH:
        raise invalid_input(f"the URL is longer than {MAX_URL_LENGTH} characters.")
    if any(ord(ch) < 0x21 or ch == "\\" for ch in url.strip()):
        raise invalid_input("the URL contains spaces, control characters or backslashes; percent-encode them.")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise invalid_input(f"the URL cannot be parsed: {exc}.") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise invalid_input(f"only http and https URLs can be fetched, not {scheme or 'a relative URL'!r}.")
    if parts.username is not None or parts.password is not None:
        raise invalid_input("URLs with credentials (user:password@host) are refused; remove them from the URL.")
    if not parts.hostname:
        raise invalid_input("the URL has no host; give an absolute URL such as https://example.com/page.")
    host = normalise_host(parts.hostname)
    port = port or DEFAULT_PORTS[scheme]
    path = parts.path or "/"
    path_and_query = path + (f"?{parts.query}" if parts.query else "")
    normalised = urlunsplit((scheme, _netloc(scheme, host, port), path, parts.query, ""))
    return ParsedUrl(scheme, host, port, path_and_query, normalised)


def normalise_url(url: str) -> str:
    """The URL as the guard sees it (scheme and host lower-cased, IP forms canonical, default port and fragment
    dropped): the key of caches and of the brain's deterministic page ids."""
    return parse_url(url).url


_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
#: What refuses an address, in the order asked (the first that holds names it); an address none holds is public.
_REFUSED_KINDS: tuple[tuple[Callable[[IPAddress], bool], str], ...] = (
    (lambda address: address.is_loopback, "a loopback address"),
    (lambda address: address.is_link_local, "a link-local address"),
    (lambda address: address.is_multicast, "a multicast address"),
    (lambda address: address.is_unspecified, "the unspecified address"),
    (
        lambda address: isinstance(address, ipaddress.IPv4Address) and address in _CGNAT,
        "a carrier-grade NAT (CGNAT) address",
    ),
    (
        lambda address: isinstance(address, ipaddress.IPv6Address) and address in _UNIQUE_LOCAL,
        "a unique-local address",
    ),
    (lambda address: address.is_reserved, "a reserved address"),
    (lambda address: address.is_private, "a private address"),
    (lambda address: not address.is_global, "a reserved address"),
)


def address_problem(address: IPAddress) -> str | None:
    """Why a connection to this address is refused, or None when it is a public address."""
    if address in METADATA_ADDRESSES:
        return "a cloud metadata endpoint"
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            problem = address_problem(embedded)
            return f"an IPv6 form of {embedded} ({problem})" if problem else None
    return next((why for refuses, why in _REFUSED_KINDS if refuses(address)), None)


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for host (IPv4 and IPv6), in its order, without duplicates."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise not_found(f"the host {host!r} could not be resolved ({exc}); check the URL.") from None
    addresses: list[str] = []
    for info in infos:
        address = str(info[4][0]).split("%", 1)[0]
        if address not in addresses:
            addresses.append(address)
    return addresses


class Published(Protocol):
    """The loopback ports published right now (`shared.confinement.published_ports.PublishedPorts`)."""

    def live(self, port: int) -> bool: ...

    def ports(self) -> list[int]: ...


PUBLISHED_HOSTS = frozenset({"127.0.0.1", "localhost"})  # where a relay's port is reached (it listens on 127.0.0.1)


def is_loopback_host(host: str) -> bool:
    """Whether a host names this machine's loopback: `localhost`, `ip6-localhost` or a loopback address (brackets
    allowed) — a host to bind or to reach over plain HTTP, not a URL (`is_loopback_url`)."""
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: str) -> bool:
    """Whether the URL names this machine's loopback by itself: a loopback address in any spelling, `localhost` or a
    name under it (not a name that resolves there)."""
    host = parse_url(url).host
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


class UrlGuard:
    """Checks URLs against the address rules and the allow-list; one per section (and one for published dev servers:
    `published`, see the module docstring)."""

    def __init__(
        self,
        allow: AllowList | None = None,
        resolver: Resolver = system_resolver,
        allow_setting: str = "the allow-list setting",
        published: Published | None = None,
    ) -> None:
        self.allow = allow or AllowList()
        self.resolver = resolver
        self.allow_setting = allow_setting  # named in refusals, e.g. "`[sections.web_ops] allow`"
        self.published = published

    def check(self, url: str) -> CheckedUrl:
        """Parse, resolve and check a URL (blocking: DNS). PERMISSION_DENIED names the rule that refused it."""
        parsed = parse_url(url)
        if self.published is not None:
            return self._check_published(parsed)
        host_allowed = self.allow.allows_host(parsed.host, parsed.port)
        if not host_allowed and parsed.host.rstrip(".") in METADATA_HOSTS:
            raise permission_denied(f"{parsed.host} is a cloud metadata host; it is never fetched.")
        literal = parsed.ip
        addresses = [parsed.host] if literal is not None else list(self.resolver(parsed.host, parsed.port))
        if not addresses:
            raise not_found(f"the host {parsed.host!r} has no address; check the URL.")
        if not host_allowed:
            for text in addresses:
                address = ipaddress.ip_address(text)
                problem = None if self.allow.allows_address(address) else address_problem(address)
                if problem:
                    shown = parsed.host if literal is not None else f"{parsed.host} (resolves to {address})"
                    raise permission_denied(
                        f"{shown} is {problem}; web fetches only reach public addresses. To open it on purpose, "
                        f"add '{_netloc('http', parsed.host, parsed.port).removeprefix('http://')}' to "
                        f"{self.allow_setting}."
                    )
        return CheckedUrl(parsed, tuple(addresses))

    def _check_published(self, parsed: ParsedUrl) -> CheckedUrl:
        """A published dev server's port on 127.0.0.1, or an allow-listed destination; nothing else."""
        assert self.published is not None
        if parsed.host in PUBLISHED_HOSTS and self.published.live(parsed.port):
            return CheckedUrl(parsed, ("127.0.0.1",))  # where the relay listens (never ::1: not the relay)
        opened = f"'{_netloc('http', parsed.host, parsed.port).removeprefix('http://')}' in {self.allow_setting}"
        if self.allow.allows_host(parsed.host, parsed.port):
            return UrlGuard(self.allow, self.resolver, self.allow_setting).check(parsed.url)
        if is_loopback_url(parsed.url):
            published = self.published.ports()
            now = f"published now: {', '.join(map(str, published))}" if published else "none is published now"
            raise permission_denied(
                f"{parsed.origin} is a loopback address; web_ops reads loopback only at a port that a dev server "
                f"started with shell_ops' start_process publishes right now (ports=[{parsed.port}]), as "
                f"http://127.0.0.1:{parsed.port}/ or http://localhost:{parsed.port}/ ({now}). Start the dev server "
                f"that way, or open the address on purpose with {opened}."
            )
        if self.allow.networks:  # an allow-listed network, the one other way open
            literal = parsed.ip
            addresses = [parsed.host] if literal is not None else list(self.resolver(parsed.host, parsed.port))
            if addresses and all(self.allow.allows_address(ipaddress.ip_address(a)) for a in addresses):
                return CheckedUrl(parsed, tuple(addresses))
        raise permission_denied(
            f"{parsed.origin} is not a published dev server: a dev server's page, its scripts and its redirects reach "
            "only the dev servers published right now, never the network (the program behind it has no network, and "
            f"web_ops does not give it one). Fetch {parsed.url} on its own, or open it on purpose with {opened}."
        )


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if any(address in network for network in NAT64_NETWORKS):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if int(address) >> 32 == 0 and int(address) > 1:  # deprecated IPv4-compatible form ::a.b.c.d
        return ipaddress.IPv4Address(int(address))
    return None


def normalise_host(host: str) -> str:
    """A host as the guard compares it: lower-case ASCII (IDNA), an IP address in its canonical text whatever the
    spelling (`2130706433`, `0x7f.1`, `127.1`, `[::ffff:7f00:1]`). INVALID_INPUT for what no host can be."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            return str(ipaddress.IPv6Address(host.split("%", 1)[0]))
        except ValueError:
            raise invalid_input(f"{host!r} is not a valid IPv6 address.") from None
    if _LEGACY_IPV4.match(host):
        try:  # inet_aton accepts what browsers accept: 2130706433, 0x7f.1, 0177.0.0.1, 127.1
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            raise invalid_input(f"{host!r} is not a valid IPv4 address.") from None
    try:
        ascii_host = host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError:
        raise invalid_input(f"the host name {host!r} is not a valid internationalised domain name.") from None
    if not ascii_host or not _HOST_CHARS.match(ascii_host) or len(ascii_host) > 253:
        raise invalid_input(f"the host name {host!r} contains characters a host name cannot have.")
    return ascii_host


def _split_host_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else None
    if entry.count(":") == 1:
        host, port = entry.split(":")
        return host, int(port)
    return entry, None


def _netloc(scheme: str, host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return shown if DEFAULT_PORTS.get(scheme) == port else f"{shown}:{port}"
