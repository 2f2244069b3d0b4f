"""The suite's own endpoints on this machine: ports no program may publish (issue #38).

A program's port published on the host's loopback (shell_ops' `start_process(ports=[…])`) receives whatever is sent
there. On a port the suite itself listens or connects to, that is what was meant for the suite: the HTTP gateway's
clients send their bearer token to a program that bound the port first, a sub-agent's model endpoint that is down
gets the API key and answers with the tool calls the sub-agent then makes, an OTLP collector gets every span. So
these ports are reserved, computed from the trusted configuration alone (never from anything inside the roots):

- the HTTP listeners of this process and of the gateway that started it: `SUITE_ENDPOINTS` in the environment, which a
  server listening over HTTP adds its address to (`announce_listener`) and which the gateway passes on to the
  sections it starts with its own model and section URLs (`passed_on`);
- every URL in the config file of each section server built in this process (`shared.settings.served`): `[gateway.model]
  base_url`, `[gateway.sections.<id>] url`, `embedding_base_url` of `[sections.memory]` and `[sections.rag_ops]`,
  web_ops' `searxng_url`, media_ops' endpoints…;
- every URL in an `MCP_SECTIONS_*` variable, and the OTLP endpoints (`OTEL_EXPORTER_OTLP_*ENDPOINT`);
- of those, the ones whose host may be this machine: a loopback or unspecified address in any spelling (`127.1`,
  `2130706433`, `[::1]`, `0.0.0.0`), `localhost` and the names under it, or a name that resolves to such an address
  or does not resolve within a second (a name that cannot be checked is taken to be here).
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mcp_sections.shared.confinement.guards.urls import normalise_host
from mcp_sections.shared.ground.errors import ToolFailure
from mcp_sections.shared.ground.hosts import url_host
from mcp_sections.shared.settings import served
from mcp_sections.shared.settings.config import Settings

SUITE_ENDPOINTS = "MCP_SECTIONS_SUITE_ENDPOINTS"
OTLP_VARIABLE = re.compile(r"^OTEL_EXPORTER_OTLP_(?:[A-Z]+_)?ENDPOINT$")
URL = re.compile(r"[a-z][a-z0-9+.\-]*://[^\s\"'<>,;]+", re.IGNORECASE)
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
RESOLVE_SECONDS = 1.0


@dataclass(frozen=True)
class Endpoint:
    """One URL the suite itself listens on or connects to, and what configures it."""

    url: str
    where: str  # e.g. "[gateway.model] base_url in /home/me/.config/mcp-sections/config.toml"

    @property
    def host_and_port(self) -> tuple[str, int] | None:
        try:
            parts = urlsplit(self.url)
            port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
        except ValueError:
            return None
        return (parts.hostname, port) if parts.hostname and port else None


def announce_listener(host: str, port: int, environ: dict[str, str] | None = None) -> None:
    """Add this server's HTTP listener to `SUITE_ENDPOINTS` (before it binds): the sections it starts inherit it."""
    env = os.environ if environ is None else environ
    env[SUITE_ENDPOINTS] = _joined([*URL.findall(env.get(SUITE_ENDPOINTS, "")), f"http://{url_host(host)}:{port}"])


def passed_on(urls: Iterable[str | None], environ: Mapping[str, str] | None = None) -> str:
    """`SUITE_ENDPOINTS` for a section the gateway starts: what the gateway inherited and announced, plus `urls` (its
    model's and its sections' URLs, which may come from variables a section does not get)."""
    env = os.environ if environ is None else environ
    return _joined([*URL.findall(env.get(SUITE_ENDPOINTS, "")), *(url for url in urls if url)])


def suite_endpoints(
    environ: Mapping[str, str] | None = None, configured: Iterable[Settings] | None = None
) -> list[Endpoint]:
    """Every endpoint of the trusted configuration (see the module docstring), wherever its host is."""
    env = os.environ if environ is None else environ
    found: list[Endpoint] = []
    for name, value in env.items():
        if name.upper() == SUITE_ENDPOINTS:
            where = f"{SUITE_ENDPOINTS} (the HTTP listener, model or section URLs of the server that started this one)"
            found += [Endpoint(url, where) for url in URL.findall(value)]
        elif name.upper().startswith("MCP_SECTIONS_"):
            found += [Endpoint(url, name) for url in URL.findall(value)]
        elif OTLP_VARIABLE.match(name) and value.strip():
            url = value.strip() if "://" in value else f"http://{value.strip()}"
            found += [Endpoint(url, name) for url in URL.findall(url)]
    for settings in served.all_settings() if configured is None else configured:
        found += [Endpoint(url, f"{where} in {settings.config_file}") for where, url in _config_urls(settings)]
    return found


def reserved_ports(
    environ: Mapping[str, str] | None = None, configured: Iterable[Settings] | None = None
) -> dict[int, Endpoint]:
    """The ports of the endpoints whose host may be this machine, each with the first endpoint that reserves it
    (`configured`: the settings whose config tables to read; default: those of the servers built here)."""
    endpoints = [(e, hp) for e in suite_endpoints(environ, configured) if (hp := e.host_and_port) is not None]
    here = _hosts_here({host for _, (host, _) in endpoints})
    reserved: dict[int, Endpoint] = {}
    for endpoint, (host, port) in endpoints:
        if host in here:
            reserved.setdefault(port, endpoint)
    return reserved


def reserved_refusal(ports: Iterable[int], environ: Mapping[str, str] | None = None) -> str | None:
    """Why publishing `ports` is refused (the first one that is a suite endpoint), or None."""
    wanted = list(ports)
    if not wanted:
        return None
    reserved = reserved_ports(environ)
    for port in wanted:
        endpoint = reserved.get(port)
        if endpoint is not None:
            return (
                f"port {port} is one of mcp-sections' own endpoints ({endpoint.url}, from {endpoint.where}); a program "
                "may not publish it, so that what is meant for the suite (a client's token, a model's API key, traces) "
                "never reaches a program. Have the program listen on another port and publish that one."
            )
    return None


def _joined(urls: Iterable[str]) -> str:
    return ",".join(dict.fromkeys(urls))


def _config_urls(settings: Settings) -> list[tuple[str, str]]:
    """(where, url) for every URL among the string values of the config tables these settings were read from (the
    one parse of the file: `[sections.*]` and `[gateway]`; nothing without a config file)."""
    if settings.config_file is None:
        return []
    tables = {"sections": settings.sections, "gateway": settings.gateway}
    return [(where, url) for where, text in _strings(tables, ()) for url in URL.findall(text)]


def _strings(value: Any, keys: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        table, key = ".".join(keys[:-1]), keys[-1] if keys else ""
        yield (f"[{table}] {key}" if table else key), value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*keys, str(key)))
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, keys)


def _hosts_here(hosts: set[str]) -> set[str]:
    """The hosts that may be this machine (see the module docstring); names are resolved at once, for a second."""
    here: set[str] = set()
    names: list[str] = []
    for host in hosts:
        verdict = _literally_here(host)
        if verdict is None:
            names.append(host)
        elif verdict:
            here.add(host)
    resolved = _resolve_all(names, RESOLVE_SECONDS)
    for name in names:
        addresses = resolved.get(name)
        if not addresses or any(_is_local(ipaddress.ip_address(address)) for address in addresses):
            here.add(name)
    return here


def _literally_here(host: str) -> bool | None:
    """Whether a host is this machine by its spelling alone (an address, `localhost`, an unreadable host: taken to be
    here); None for a name that must be resolved."""
    try:
        normal = normalise_host(host)
    except ToolFailure:
        return True
    try:
        address = ipaddress.ip_address(normal)
    except ValueError:
        return True if normal == "localhost" or normal.endswith(".localhost") else None
    return _is_local(address)


def _resolve_all(names: list[str], seconds: float) -> dict[str, list[str] | None]:
    """Each name's addresses, resolved at once on threads, for at most `seconds` (a name not resolved by then: absent;
    one that does not resolve: None)."""
    results: dict[str, list[str] | None] = {}

    def resolve(name: str) -> None:
        try:
            results[name] = [str(info[4][0]).split("%", 1)[0] for info in socket.getaddrinfo(name, None)]
        except (OSError, UnicodeError):
            results[name] = None

    threads = [threading.Thread(target=resolve, args=(name,), daemon=True) for name in names]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return dict(results)


def _is_local(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified
