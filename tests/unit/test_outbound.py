"""The outbound URL policy: http(s) only, public addresses only unless allowed, checked as
written and again where a name resolves."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tocsin.errors import InvalidInput
from tocsin.outbound import (
    GuardedResolver,
    RefusedAddress,
    check_url,
    embedded_ipv4,
    is_public,
)
from tocsin.settings import Settings

REFUSED = [
    "file:///etc/passwd",
    "gopher://example.org/",
    "not a url",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00:ec2::254]/",
    "http://127.0.0.1:8000/hook",
    "http://localhost/hook",
    "http://api.localhost/hook",
    "http://10.1.2.3/hook",
    "http://192.168.0.10/hook",
    "http://172.16.5.4/hook",
    "http://100.64.0.1/hook",
    "http://[::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://0.0.0.0/hook",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://example.org:99999/",
    # Unicode digits and dots, folded by the HTTP client into an IP literal it connects to.
    "http://①②⑦.0.0.1:8000/k",
    "http://１２７.0.0.1/k",
    "http://127。0。0。1/k",
    "http://①⑥⑨.②⑤④.①⑥⑨.②⑤④/latest/meta-data/",
    # Legacy IPv4 forms that resolvers still read as addresses.
    "http://2130706433/k",
    "http://0x7f.1/k",
    "http://0177.0.0.1/k",
    # IPv6 forms that reach an IPv4 address: IPv4-compatible, 6to4, NAT64, Teredo.
    "http://[::127.0.0.1]/k",
    "http://[2002:7f00:1::]/k",
    "http://[2002:a9fe:a9fe::]/k",
    "http://[64:ff9b::a9fe:a9fe]/k",
    "http://[64:ff9b:1::7f00:1]/k",
    # Malformed: a clear 422, never a 500.
    "http://[x]/",
    "http://[::1",
]


@pytest.mark.parametrize("url", REFUSED)
def test_what_the_server_alone_can_reach_is_refused(url: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_url(url, allow_private=False, field="webhook_url")
    assert refused.value.field == "webhook_url"


@pytest.mark.parametrize(
    "url", ["https://example.com/hooks/tocsin", "http://93.184.216.34/x", "https://[2606:4700::1]/"]
)
def test_public_http_urls_pass(url: str) -> None:
    assert check_url(url, allow_private=False) == url


def test_the_operator_may_allow_private_hosts_but_never_other_schemes() -> None:
    assert check_url("http://127.0.0.1:9/hook", allow_private=True)
    for refused in ("file:///etc/passwd", "http://[x]/", "http://[::1"):
        with pytest.raises(InvalidInput):
            check_url(refused, allow_private=True)


def test_a_unicode_name_is_judged_as_its_idna_form() -> None:
    assert check_url("https://bücher.example/hook", allow_private=False)


@given(st.ip_addresses())
def test_an_address_is_public_only_if_global_and_unicast(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    if isinstance(address, ipaddress.IPv6Address) and embedded_ipv4(address) is not None:
        return  # the next properties
    assert is_public(address) == (address.is_global and not address.is_multicast)


@given(st.ip_addresses(v=4))
def test_an_ipv6_address_that_reaches_an_ipv4_one_is_judged_as_it(
    address: ipaddress.IPv4Address,
) -> None:
    """6to4 (2002::/16), NAT64 (64:ff9b::/96) and Teredo carry the IPv4 address they lead
    to; each is public exactly when that address is."""
    packed = int(address)
    sixtofour = ipaddress.IPv6Address((0x2002 << 112) | (packed << 80))
    nat64 = ipaddress.IPv6Address((0x64FF9B << 96) | packed)
    teredo = ipaddress.IPv6Address((0x20010000 << 96) | (0xFFFFFFFF ^ packed))
    for carrier in (sixtofour, nat64, teredo):
        assert embedded_ipv4(carrier) == address
        assert is_public(carrier) == is_public(address)


@given(st.ip_addresses(v=4))
def test_an_ipv4_mapped_address_is_judged_as_its_ipv4_address(
    address: ipaddress.IPv4Address,
) -> None:
    mapped = ipaddress.IPv6Address(f"::ffff:{address}")
    assert is_public(mapped) == is_public(address)


async def test_a_name_that_resolves_to_loopback_is_refused_at_connect() -> None:
    resolver = GuardedResolver(allow_private=False)
    try:
        with pytest.raises(RefusedAddress):
            await resolver.resolve("localhost", 80)
        with pytest.raises(RefusedAddress):
            await resolver.resolve("127.0.0.1", 80)  # what a rebinding name would give
    finally:
        await resolver.close()
    allowing = GuardedResolver(allow_private=True)
    try:
        assert await allowing.resolve("127.0.0.1", 80)
    finally:
        await allowing.close()


def test_a_private_webhook_setting_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match="TOCSIN_WEBHOOK_URL"):
        Settings(webhook_url="http://169.254.169.254/")
    assert Settings(webhook_url="http://10.0.0.5/h", allow_private_urls=True).webhook_url
