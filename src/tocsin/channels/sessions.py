"""The HTTP client session the HTTP channels share the shape of: one keep-alive pool per
sender, `max_connections` in all and no per-host cap, Tocsin's user agent, no cookies kept,
and the CAs its peers are verified with."""

from __future__ import annotations

import ssl
from pathlib import Path

import aiohttp
from aiohttp.abc import AbstractResolver

from tocsin import __version__


def http_session(
    max_connections: int,
    *,
    resolver: AbstractResolver | None = None,
    tls: ssl.SSLContext | None = None,
) -> aiohttp.ClientSession:
    """A session for one sender; make it in the event loop that sends (at the first send).
    Peers are verified with `tls`, or with the system's CAs when it is None."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(
            limit=max_connections, limit_per_host=0, resolver=resolver, ssl=tls or True
        ),
        headers={"user-agent": f"tocsin/{__version__}"},
        cookie_jar=aiohttp.DummyCookieJar(),  # a receiver's cookies are not kept
    )


def trusting(ca_file: Path | None, *, also_the_systems: bool = False) -> ssl.SSLContext | None:
    """A TLS context that verifies peers against the CAs in `ca_file`, instead of the
    system's or, with `also_the_systems`, as well; None (the system's) when it is unset."""
    if ca_file is None:
        return None
    context = ssl.create_default_context(cafile=str(ca_file))
    if also_the_systems:
        context.load_default_certs()
    return context
