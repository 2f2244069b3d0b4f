"""A host as it stands in a URL or an `host:port` authority (RFC 3986 §3.2.2): an IPv6 literal goes in brackets."""

from __future__ import annotations


def url_host(host: str) -> str:
    """`::1` → `[::1]`; a name, an IPv4 address or an already bracketed literal as it is."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
