"""The shared URL guard, without a network: every refused range, host forms, the allow-list, pinned addresses."""

from __future__ import annotations

import pytest

from mcp_sections.shared.confinement.guards.urls import AllowList, UrlGuard, address_problem, normalise_url, parse_url
from mcp_sections.shared.ground.errors import ToolFailure


def resolver_of(table: dict[str, list[str]]):
    def resolve(host: str, port: int) -> list[str]:
        return table[host]

    return resolve


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("100.64.0.1", "CGNAT"),
        ("fd12:3456::1", "unique-local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("::ffff:10.0.0.1", "IPv6 form of 10.0.0.1"),
        ("64:ff9b::a9fe:a9fe", "IPv6 form of 169.254.169.254"),
        ("2002:c0a8:0101::", "IPv6 form of 192.168.1.1"),
        ("169.254.169.254", "metadata"),
        ("100.100.100.200", "metadata"),
        ("fd00:ec2::254", "metadata"),
    ],
)
def test_every_non_public_range_is_refused(address: str, kind: str) -> None:
    import ipaddress

    problem = address_problem(ipaddress.ip_address(address))
    assert problem is not None and kind in problem


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "8.8.8.8"])
def test_public_addresses_pass(address: str) -> None:
    import ipaddress

    assert address_problem(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://2130706433/", "127.0.0.1"),
        ("http://0x7f000001/", "127.0.0.1"),
        ("http://0177.0.0.1/", "127.0.0.1"),
        ("http://127.1/", "127.0.0.1"),
        ("http://[::FFFF:7F00:1]/", "::ffff:7f00:1"),
        ("HTTP://Example.COM./a", "example.com"),
        ("http://bücher.example/", "xn--bcher-kva.example"),
    ],
)
def test_host_forms_are_normalised_before_checking(url: str, host: str) -> None:
    assert parse_url(url).host == host


def test_normalised_url_drops_fragment_and_default_port() -> None:
    assert normalise_url("HTTPS://Example.com:443/a/b?x=1#frag") == "https://example.com/a/b?x=1"
    assert normalise_url("http://example.com:8080") == "http://example.com:8080/"


def test_a_name_is_refused_if_any_of_its_addresses_is_private() -> None:
    guard = UrlGuard(resolver=resolver_of({"mixed.example": ["93.184.215.14", "10.0.0.7"]}))
    with pytest.raises(ToolFailure) as caught:
        guard.check("https://mixed.example/")
    assert caught.value.code == "PERMISSION_DENIED" and "10.0.0.7" in caught.value.message


def test_the_checked_addresses_are_the_ones_to_connect_to() -> None:
    guard = UrlGuard(resolver=resolver_of({"www.example": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]}))
    checked = guard.check("https://www.example/page")
    assert checked.addresses == ("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c")


def test_the_allow_list_opens_exactly_what_it_names() -> None:
    allow = AllowList.parse(["127.0.0.1:8080", "intranet.example", "10.20.0.0/16"])
    guard = UrlGuard(allow, resolver=resolver_of({"intranet.example": ["10.9.9.9"], "other.example": ["10.20.3.4"]}))
    guard.check("http://127.0.0.1:8080/")
    guard.check("http://intranet.example:9000/")  # no port in the entry: any port
    guard.check("http://other.example/")  # its address is in the allowed network
    for refused in ("http://127.0.0.1:8081/", "http://localhost:8080/", "http://10.21.0.1/"):
        with pytest.raises(ToolFailure):
            UrlGuard(allow, resolver=resolver_of({"localhost": ["127.0.0.1"]})).check(refused)


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "host:99999"])
def test_bad_allow_list_entries_are_refused(entry: str) -> None:
    with pytest.raises(ValueError):
        AllowList.parse([entry])


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/", "http://user@example.com/", "http://exa mple.com/", "http:\\\\example.com", "http:///x"],
)
def test_malformed_urls_are_invalid_input(url: str) -> None:
    with pytest.raises(ToolFailure) as caught:
        UrlGuard().check(url)
    assert caught.value.code == "INVALID_INPUT"
