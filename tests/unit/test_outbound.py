"""The outbound URL policy: http(s) only, public addresses only unless allowed, checked as
written and again where a name resolves."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tocsin.errors import InvalidInput
from tocsin.outbound import GuardedResolver, RefusedAddress, check_url, is_public
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
    with pytest.raises(InvalidInput):
        check_url("file:///etc/passwd", allow_private=True)


@given(st.ip_addresses())
def test_an_address_is_public_only_if_global_and_unicast(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return  # the next property
    assert is_public(address) == (address.is_global and not address.is_multicast)


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
