"""Where Tocsin may send: the outbound URL policy of every channel whose base URL or contact is
a URL (webhooks, Web Push endpoints, provider base URLs).

A reminder service sends requests to URLs its users give it, so a user could point one at
what only the server can reach: the cloud's metadata service (169.254.169.254, with its
credentials), the database, an admin port on loopback, the private network. So only
`http(s)` URLs are accepted, and only to public addresses, unless the operator allows private
ones (`TOCSIN_ALLOW_PRIVATE_URLS`, for a receiver on the same network). The check runs when a
URL is saved and again at every send against the address the name resolves to then, so a
name that resolved to a public address at save time and to a private one later (DNS
rebinding) is refused too.

The host checked is the one the HTTP client will connect to, as it normalises it (yarl: IDNA
for names, and Unicode digits and dots folded, so `http://①②⑦.0.0.1/` is 127.0.0.1), never the
text as written; a legacy IPv4 form (`2130706433`, `0x7f.1`) counts as the address it spells,
and an IPv6 address that carries an IPv4 one (mapped, IPv4-compatible, 6to4, Teredo, NAT64) is
judged by the IPv4 address it reaches.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from typing import Any

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from yarl import URL

from tocsin.errors import InvalidInput

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# A host name as it goes on the wire: ASCII letters, digits, hyphens and dots (IDNA has
# encoded any other letter), and underscores, which some DNS names carry.
_HOST_NAME = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?")

# Names that always mean this machine or the cloud's metadata service, whatever DNS says.
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "metadata.google.internal"})


class RefusedAddress(OSError):
    """A URL's host is (or resolves to) an address the outbound policy refuses."""


# NAT64 prefixes: the well-known one (RFC 6052) and the local-use one (RFC 8215).
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated ::a.b.c.d (RFC 4291)


def is_public(address: IPAddress) -> bool:
    """Whether an address is on the public internet: not loopback, private, link-local
    (metadata), shared (CGNAT), multicast, reserved or unspecified — nor an IPv6 address that
    reaches an IPv4 address that is one of those."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = embedded_ipv4(address)
        if embedded is not None:
            return is_public(embedded)
    return address.is_global and not address.is_multicast


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one leads to (mapped, 6to4, Teredo's client, NAT64,
    IPv4-compatible), or None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if any(address in network for network in _NAT64):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _IPV4_COMPATIBLE and int(address) > 1:  # not :: nor ::1
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def check_url(url: str, *, allow_private: bool, field: str = "url") -> str:
    """`url` if the policy accepts it: `http` or `https`, with a host that is a public
    address or a name (checked again when it resolves, at send time); `InvalidInput` naming
    `field` otherwise."""
    host = http_host(url, field=field)
    if not allow_private:
        reason = refused_host(host)
        if reason is not None:
            raise InvalidInput(
                field, f"{reason} (set TOCSIN_ALLOW_PRIVATE_URLS=true to allow private hosts)"
            )
    return url


def http_host(url: str, *, field: str = "url") -> str:
    """The host an `http(s)` URL leads to, as the HTTP client will connect to it (yarl's
    normalisation: IDNA for names, Unicode digits and dots folded); `InvalidInput` naming
    `field` for anything else, a malformed URL included."""
    try:
        parsed = URL(url)
        host = parsed.raw_host
        parsed.port  # noqa: B018 - raises ValueError for a port out of range
    except (ValueError, UnicodeError) as error:
        raise InvalidInput(field, f"not a URL: {error}") from None
    if parsed.scheme not in ("http", "https") or not host:
        raise InvalidInput(field, "must be an http:// or https:// URL with a host")
    if ip_literal(host) is None and not _HOST_NAME.fullmatch(host):
        raise InvalidInput(field, f"{host!r} is not a valid host name")
    return host


def refused_url(url: str, *, allow_private: bool, what: str) -> str | None:
    """Why a sender must not call `url` as it is written (`what` names it in the reason), or
    None; names are checked again as they resolve, by a session's `GuardedResolver`."""
    try:
        check_url(url, allow_private=allow_private)
    except InvalidInput as error:
        return f"{what} refused: {error.message}"
    return None


def refused_host(host: str) -> str | None:
    """Why a URL's host is refused as it is written (before any DNS), or None."""
    name = host.rstrip(".").lower()
    if name in _LOCAL_NAMES or name.endswith(".localhost"):
        return f"{host} is this machine or a metadata service"
    address = ip_literal(name)
    if address is None:
        return None  # a name: checked where it resolves
    if not is_public(address):
        return f"{host} is not a public address (loopback, private, link-local or reserved)"
    return None


def ip_literal(host: str) -> IPAddress | None:
    """The address `host` spells, in standard form or in a legacy IPv4 one that resolvers
    still accept (`2130706433`, `0x7f.1`, `0177.0.0.1`), or None for a name."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


class GuardedResolver(AbstractResolver):
    """aiohttp's resolver, keeping only public addresses (unless private ones are allowed):
    a name that resolves to none is refused with `RefusedAddress`, at every connection."""

    def __init__(self, *, allow_private: bool) -> None:
        self._allow_private = allow_private
        self._inner = DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if not self._allow_private and refused_host(host) is not None:
            raise RefusedAddress(f"{host}: refused by the outbound URL policy")
        found = await self._inner.resolve(host, port, family)
        if self._allow_private:
            return found
        allowed = [one for one in found if is_public(ipaddress.ip_address(one["host"]))]
        if not allowed:
            raise RefusedAddress(
                f"{host} resolves to non-public addresses only: refused by the outbound URL "
                "policy (TOCSIN_ALLOW_PRIVATE_URLS)"
            )
        return allowed

    async def close(self) -> None:
        await self._inner.close()


def refused_by_policy(error: BaseException) -> RefusedAddress | None:
    """The policy's refusal behind a client error, if that is what it was."""
    seen: Any = error
    while seen is not None:
        if isinstance(seen, RefusedAddress):
            return seen
        seen = getattr(seen, "os_error", None) or seen.__cause__
    return None
