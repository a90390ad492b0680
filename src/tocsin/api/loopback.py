"""The guard of loopback dev mode (no API key yet): this machine's programs only, not its
browser's pages.

With no key, a server on loopback accepts any request without credentials. Two browser
attacks would otherwise reach it from any web page the developer opens:
- DNS rebinding: `evil.example` resolves to 127.0.0.1 after the page loaded, and the page
  then reads and writes the API as a same-origin site. Its requests carry
  `Host: evil.example`, so only loopback names are served.
- Cross-site request forgery: a page posts a form (or a `no-cors` fetch) to
  `http://127.0.0.1:8000/v1/reminders`. Browsers label such requests with `Origin` and
  `Sec-Fetch-Site`, so a write whose origin is not this server is refused. A read of an
  owner's feed is a write here: it takes the rings waiting for the owner's pages (they are
  marked `sent`) even when the page that opened it may not read the answer.
Both checks apply only while the server runs open: with keys, every request proves who sent
it, and a reverse proxy may pass any `Host` it serves.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from tocsin.api.problems import Problem
from tocsin.auth import is_loopback
from tocsin.errors import StoreError

_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_FEED = re.compile(r"/v1/owners/[^/]+/feed/?")  # `GET …/feed` (routes/feed.py)
_FOREIGN_FETCH = frozenset({"cross-site", "same-site"})


class LoopbackGuard:
    """ASGI middleware: in open (dev) mode, 403 for a non-loopback `Host` and for a write
    (or a feed read) from another origin."""

    def __init__(self, app: ASGIApp, *, is_open: Callable[[], Awaitable[bool]]) -> None:
        self.app = app
        self._is_open = is_open

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and await self._open():
            refusal = refused(Headers(scope=scope), scope["method"], scope["path"])
            if refusal is not None:
                await refusal.response()(scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def _open(self) -> bool:
        try:
            return await self._is_open()
        except StoreError:
            # The database is away: the route answers 503 itself (or /healthz, 200), and
            # no request gets past authentication meanwhile.
            return False


def refused(headers: Headers, method: str, path: str) -> Problem | None:
    """Why an open-mode request must be refused, or None."""
    host = headers.get("host", "")
    if not is_loopback(_hostname(host)):
        return Problem(
            403,
            "host-not-allowed",
            f"Host {host!r} is not a loopback name: without API keys this server answers "
            "requests to localhost, 127.0.0.1 or [::1] only (create a key to serve others)",
        )
    feed = _FEED.fullmatch(path) is not None
    if method not in _WRITES and not feed:
        return None
    origin = headers.get("origin")
    if headers.get("sec-fetch-site") in _FOREIGN_FETCH or (
        origin is not None and urlsplit(origin).netloc != host
    ):
        what = "a feed read (it takes the waiting rings)" if feed else "a write"
        return Problem(
            403,
            "cross-origin-write",
            f"{what} from {origin or 'another site'} to a server without API keys is refused "
            "(cross-site request forgery); send it from this machine, or create a key",
        )
    return None


def _hostname(host: str) -> str:
    """The name part of a `Host` header: `[::1]:8000` → `::1`, `localhost:8000` → `localhost`."""
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rpartition(":")[0] if ":" in host else host
