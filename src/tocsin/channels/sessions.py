"""The HTTP client session the HTTP channels share the shape of: one keep-alive pool per
sender, `max_connections` in all and no per-host cap, Tocsin's user agent, no cookies kept."""

from __future__ import annotations

import aiohttp
from aiohttp.abc import AbstractResolver

from tocsin import __version__


def http_session(
    max_connections: int, *, resolver: AbstractResolver | None = None
) -> aiohttp.ClientSession:
    """A session for one sender; make it in the event loop that sends (at the first send)."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=max_connections, limit_per_host=0, resolver=resolver),
        headers={"user-agent": f"tocsin/{__version__}"},
        cookie_jar=aiohttp.DummyCookieJar(),  # a receiver's cookies are not kept
    )
