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
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any
from urllib.parse import urlsplit

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from tocsin.errors import InvalidInput

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Names that always mean this machine or the cloud's metadata service, whatever DNS says.
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "metadata.google.internal"})


class RefusedAddress(OSError):
    """A URL's host is (or resolves to) an address the outbound policy refuses."""


def is_public(address: IPAddress) -> bool:
    """Whether an address is on the public internet: not loopback, private, link-local
    (metadata), shared (CGNAT), multicast, reserved or unspecified."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


def check_url(url: str, *, allow_private: bool, field: str = "url") -> str:
    """`url` if the policy accepts it: `http` or `https`, with a host that is a public
    address or a name (checked again when it resolves, at send time); `InvalidInput` naming
    `field` otherwise."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError as error:
        raise InvalidInput(field, f"not a URL: {error}") from None
    if parts.scheme not in ("http", "https") or not host:
        raise InvalidInput(field, "must be an http:// or https:// URL with a host")
    if not allow_private:
        reason = refused_host(host)
        if reason is not None:
            raise InvalidInput(
                field, f"{reason} (set TOCSIN_ALLOW_PRIVATE_URLS=true to allow private hosts)"
            )
    return url


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
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return None  # a name: checked where it resolves
    if not is_public(address):
        return f"{host} is not a public address (loopback, private, link-local or reserved)"
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
