"""The client's address behind reverse proxies: read from the one forwarding header the
operator names (`TOCSIN_FORWARDED_HEADER`), and only on connections from the proxies the
operator trusts (`TOCSIN_TRUSTED_PROXIES`).

Anyone can send `X-Forwarded-For` or `Forwarded`, so the header means something only when the
peer that sent it is one of ours; and each proxy appends the address it saw, so the client is
the right-most address that is not a trusted proxy: what stands to its left is the client's
own claim. uvicorn's own handling stays off (it trusts loopback, and `FORWARDED_ALLOW_IPS`
from the environment, by default: 40 bad keys from 127.0.0.1, each with another
`X-Forwarded-For`, were never limited), so that this is the one place these headers are read.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from typing import Literal

from starlette.types import ASGIApp, Receive, Scope, Send

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
ForwardedHeader = Literal["x-forwarded-for", "forwarded"]

# A `Forwarded` value's pieces (RFC 7239 section 4): a quoted string (which may hold `,` and
# `;`), a run of anything else, or one of the two separators.
_FORWARDED_PIECE = re.compile(r'("(?:[^"\\]|\\.)*")|([^",;]+)|([,;])')
_ESCAPE = re.compile(r"\\(.)")


class TrustedProxies:
    """The proxies whose forwarding header is believed."""

    def __init__(self, networks: Iterable[IPNetwork]) -> None:
        self._networks = tuple(networks)

    def __bool__(self) -> bool:
        return bool(self._networks)

    def __contains__(self, host: object) -> bool:
        address = node_address(host) if isinstance(host, str) else None
        return address is not None and self._trusts(address)

    def client(self, peer: str, chain: Sequence[str | None]) -> str:
        """The client's address, from the forwarded `chain` (left to right, as the header
        lists them) of a request whose connection comes from `peer`, a trusted proxy."""
        for node in reversed(chain):
            address = node_address(node)
            if address is None:
                # Only a trusted proxy can have written what stands right of every trusted
                # proxy (`unknown`, an obfuscated name): the proxy is all that is known.
                return peer
            if not self._trusts(address):
                return str(address)
        # Every address is a trusted proxy's: the request came from one (a health check).
        first = node_address(chain[0]) if chain else None
        return peer if first is None else str(first)

    def _trusts(self, address: IPAddress) -> bool:
        return any(address in net for net in self._networks)


def node_address(node: str | None) -> IPAddress | None:
    """The IP address of a forwarded node (`192.0.2.7`, `192.0.2.7:4711`, `2001:db8::7`,
    `[2001:db8::7]:4711`), IPv4-mapped IPv6 as IPv4; None for anything else (`unknown`,
    `_hidden`, a name)."""
    if node is None:
        return None
    node = node.strip()
    if node.startswith("["):
        host, bracket, _ = node[1:].partition("]")
        if not bracket:
            return None
    elif node.count(":") == 1:  # IPv4 with a port; a bare IPv6 address has several colons
        host = node.partition(":")[0]
    else:
        host = node
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def x_forwarded_for(values: Sequence[str]) -> list[str | None]:
    """The nodes of `X-Forwarded-For` header lines, left to right."""
    return [node.strip() for value in values for node in value.split(",") if node.strip()]


def forwarded_for(values: Sequence[str]) -> list[str | None]:
    """The `for=` node of each element of `Forwarded` header lines (RFC 7239), left to
    right; None for an element without one."""
    nodes: list[str | None] = []
    node: str | None = None
    pair, pairs = "", 0
    for quoted, plain, separator in _FORWARDED_PIECE.findall(",".join(values) + ","):
        if not separator:
            pair += quoted or plain
            continue
        name, equals, value = pair.partition("=")
        if equals:
            pairs += 1
            if name.strip().lower() == "for":
                node = _unquoted(value.strip())
        if separator == ",":
            if pairs:  # empty list elements do not count (RFC 9110 section 5.6.1)
                nodes.append(node)
            node, pairs = None, 0
        pair = ""
    return nodes


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
        return _ESCAPE.sub(r"\1", value[1:-1])
    return value


_READERS = {"x-forwarded-for": x_forwarded_for, "forwarded": forwarded_for}


class ClientAddress:
    """ASGI middleware: on a connection from a trusted proxy, the scope's `client` becomes
    the address its forwarding header gives (the port unknown: 0); elsewhere it stays the
    peer's. Everything below reads it there, as `request.client` (the failed-authentication
    limit does)."""

    def __init__(self, app: ASGIApp, *, proxies: TrustedProxies, header: ForwardedHeader) -> None:
        self.app = app
        self._proxies = proxies
        self._name = header.encode("latin-1")
        self._read = _READERS[header]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        peer = scope.get("client")
        if scope["type"] == "http" and self._proxies and peer and peer[0] in self._proxies:
            values = [v.decode("latin-1") for k, v in scope["headers"] if k == self._name]
            if values:
                scope["client"] = (self._proxies.client(peer[0], self._read(values)), 0)
        await self.app(scope, receive, send)
