"""The client's address behind trusted proxies: the header's nodes read as written (ports,
brackets, quotes, RFC 7239 pairs), the right-most untrusted one taken, and the setting
checked when read."""

from __future__ import annotations

from ipaddress import ip_network

import pytest

from tocsin.api.proxies import TrustedProxies, forwarded_for, node_address, x_forwarded_for
from tocsin.settings import SettingsInvalid, load_settings

PROXIES = TrustedProxies([ip_network("10.0.0.0/8"), ip_network("fd00::/8")])


@pytest.fixture(autouse=True)
def _no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOCSIN_TRUSTED_PROXIES", raising=False)
    monkeypatch.delenv("TOCSIN_FORWARDED_HEADER", raising=False)


@pytest.mark.parametrize(
    ("node", "address"),
    [
        ("192.0.2.7", "192.0.2.7"),
        (" 192.0.2.7:4711 ", "192.0.2.7"),
        ("2001:db8::7", "2001:db8::7"),
        ("[2001:DB8::7]:4711", "2001:db8::7"),
        ("[2001:db8::7]", "2001:db8::7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("unknown", None),
        ("_hidden", None),
        ("[2001:db8::7", None),
        ("example.com:80", None),
        ("", None),
    ],
)
def test_a_node_is_an_address_with_or_without_its_port(node: str, address: str | None) -> None:
    found = node_address(node)
    assert (str(found) if found is not None else None) == address


def test_x_forwarded_for_lists_every_line_in_order() -> None:
    assert x_forwarded_for(["198.51.100.1, 10.0.0.1", "10.0.0.2,,"]) == [
        "198.51.100.1",
        "10.0.0.1",
        "10.0.0.2",
    ]


def test_forwarded_gives_each_elements_for_quoted_or_not() -> None:
    values = [
        'for=192.0.2.60;proto=http;by=203.0.113.43, For="[2001:db8:cafe::17]:4711"',
        'by="a,b;c", for=unknown,, proto=https',
    ]
    assert forwarded_for(values) == [
        "192.0.2.60",
        "[2001:db8:cafe::17]:4711",
        None,
        "unknown",
        None,
    ]
    assert forwarded_for(['for="\\"quoted\\""']) == ['"quoted"']


def test_the_client_is_the_right_most_untrusted_address() -> None:
    # A client's own claims stand to the left of what the first proxy appended.
    chain: list[str | None] = ["203.0.113.9", "198.51.100.7", "10.0.0.3"]
    assert PROXIES.client("10.0.0.2", chain) == "198.51.100.7"
    assert PROXIES.client("10.0.0.2", ["[fd00::1]", "2001:db8::9", "fd00::2"]) == "2001:db8::9"


def test_what_a_trusted_proxy_could_not_name_leaves_the_proxy() -> None:
    assert PROXIES.client("10.0.0.2", ["198.51.100.7", "unknown"]) == "10.0.0.2"
    assert PROXIES.client("10.0.0.2", ["198.51.100.7", None]) == "10.0.0.2"
    assert PROXIES.client("10.0.0.2", []) == "10.0.0.2"


def test_a_chain_of_proxies_alone_gives_its_first() -> None:
    assert PROXIES.client("10.0.0.2", ["10.0.0.7", "10.0.0.3"]) == "10.0.0.7"


def test_trust_is_by_address_and_network() -> None:
    assert "10.1.2.3" in PROXIES
    assert "::ffff:10.1.2.3" in PROXIES  # a dual-stack socket's form of an IPv4 peer
    assert "fd12::1" in PROXIES
    assert "127.0.0.1" not in PROXIES
    assert "not-an-address" not in PROXIES
    assert not TrustedProxies([])


def test_the_settings_read_addresses_and_networks() -> None:
    settings = load_settings(trusted_proxies=" 10.0.0.5, 10.1.0.0/16,fd00::/8 ")
    assert [str(n) for n in settings.trusted_proxy_networks] == [
        "10.0.0.5/32",
        "10.1.0.0/16",
        "fd00::/8",
    ]
    assert load_settings().trusted_proxy_networks == ()  # trusting no one by default
    assert load_settings(forwarded_header="Forwarded").forwarded_header == "forwarded"


def test_a_wrong_proxy_is_named_on_one_line() -> None:
    with pytest.raises(SettingsInvalid) as refused:
        load_settings(trusted_proxies="10.0.0.5,proxy.internal")
    assert str(refused.value) == (
        "TOCSIN_TRUSTED_PROXIES: 'proxy.internal' is not an IP address or network "
        "(10.0.0.5, 10.1.0.0/16, fd00::/8) (got '10.0.0.5,proxy.internal')"
    )
