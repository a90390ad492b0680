"""Limits on connections, below HTTP: a deadline for each request's head and for its body,
a size for each head (`tocsin.heads`), and a cap on the connections one client address holds
open.

uvicorn reads a request as slowly as its client sends it, and has no deadline for either
part: 400 sockets sending a header or a body a byte a second stayed open 30-40 s and were
never closed (a body is read before authentication, so this needs no key). `guarded` wraps
uvicorn's HTTP protocol, whichever it is (httptools when installed, as with
`uvicorn[standard]`, else h11), and watches each connection from outside: both keep the
request being served as `cycle`, made once its head is complete and holding whether its body
still has `more_body` and its answer `response_complete`. After every read:

- until a head is complete (from the connection's start, or from the first byte after an
  answer), the head deadline runs;
- from a complete head until its body is, the body deadline runs;
- an answer that stays open (the in-app feed) has neither: its request was complete.

The same `cycle` says where a body is, so that the heads alone are measured. Where a body
ends inside a read, what follows it there (a pipelined head) is passed on unmeasured: at most
one read (256 KiB), and measured again from the next read on.

Idle connections between requests are uvicorn's to close (its keep-alive timeout, 5 s).
The cap counts the transport's peer, never a forwarded header (no header is read yet when a
connection opens); trusted proxies are exempt, since every client behind one arrives from it
(the proxy caps connections per client itself: nginx's `limit_conn`, HAProxy's stick tables).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

from uvicorn import Config
from uvicorn.protocols.http.auto import AutoHTTPProtocol
from uvicorn.protocols.utils import get_remote_addr
from uvicorn.server import ServerState

from tocsin.api.proxies import TrustedProxies
from tocsin.heads import HEAD_LIMITS, HeadGuard, HeadLimits, HeadTooLarge
from tocsin.settings import Settings

log = logging.getLogger("tocsin.api.connections")

HEAD = "head"
BODY = "body"


@dataclass(frozen=True, kw_only=True, slots=True)
class ConnectionLimits:
    """The deadlines of a request's head and body, and the cap per address of one server."""

    head_seconds: float
    body_seconds: float
    per_address: int  # 0: no cap
    uncapped: Callable[[str], bool] = lambda host: False  # peers not counted (trusted proxies)
    head: HeadLimits = HEAD_LIMITS

    @classmethod
    def of(cls, settings: Settings) -> ConnectionLimits:
        proxies = TrustedProxies(settings.trusted_proxy_networks)
        return cls(
            head_seconds=settings.client_header_timeout_seconds,
            body_seconds=settings.client_body_timeout_seconds,
            per_address=settings.connections_per_address,
            uncapped=proxies.__contains__,
        )


class _Request(Protocol):
    """What is read of uvicorn's request-response cycle (the same in h11 and httptools)."""

    more_body: bool
    response_complete: bool


class OpenConnections:
    """The connections each client address holds open to one server."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._open: dict[str, int] = {}
        self._refused: set[str] = set()  # over the cap, said once until below it again

    def admit(self, host: str) -> bool:
        """Count one more connection of `host`'s; False (not counted) when over the cap."""
        count = self._open.get(host, 0)
        if self.cap and count >= self.cap:
            if host not in self._refused:
                self._refused.add(host)
                log.warning(
                    "closing connections over the cap of one client address",
                    extra={"client": host, "cap": self.cap},
                )
            return False
        self._open[host] = count + 1
        return True

    def release(self, host: str) -> None:
        count = self._open.pop(host) - 1
        if count:
            self._open[host] = count
        self._refused.discard(host)


def guarded(
    limits: ConnectionLimits, base: Callable[..., asyncio.Protocol] = AutoHTTPProtocol
) -> type[asyncio.Protocol]:
    """An HTTP protocol for `uvicorn.Config(http=…)`: `base` (uvicorn's default) under
    `limits`, with one count of open connections for every connection of the server."""
    book = OpenConnections(limits.per_address)

    class Guarded(GuardedConnection):
        def __init__(
            self,
            config: Config,
            server_state: ServerState,
            app_state: dict[str, Any],
            _loop: asyncio.AbstractEventLoop | None = None,
        ) -> None:
            inner = base(config=config, server_state=server_state, app_state=app_state, _loop=_loop)
            super().__init__(inner, limits, book)

    return Guarded


class GuardedConnection(HeadGuard):
    """One connection: passes everything to uvicorn's protocol (`inner`), and closes the
    connection when a deadline of `limits` passes, a head is too large or its address is
    over the cap."""

    def __init__(
        self, inner: asyncio.Protocol, limits: ConnectionLimits, book: OpenConnections
    ) -> None:
        super().__init__(inner, limits.head)
        self._limits = limits
        self._book = book
        self._counted = False
        self._request: _Request | None = None  # the last request whose head was complete
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting_for = HEAD

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        peer = get_remote_addr(cast(asyncio.Transport, transport))
        self._host = peer[0] if peer is not None else "-"
        if peer is not None and not self._limits.uncapped(self._host):
            if not self._book.admit(self._host):
                transport.close()
                return
            self._counted = True
        self._arm(HEAD)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        try:
            super().connection_lost(exc)
        finally:
            if self._counted:
                self._book.release(self._host)
                self._counted = False

    def _in_body(self) -> bool:
        request: _Request | None = getattr(self._inner, "cycle", None)
        return request is not None and request.more_body

    def _answering(self) -> bool:
        request: _Request | None = getattr(self._inner, "cycle", None)
        return request is not None and not request.response_complete

    def _pass(self, data: bytes) -> None:
        super()._pass(data)
        self._follow()

    def _refuse(self, error: HeadTooLarge) -> None:
        self._disarm()
        super()._refuse(error)

    def _follow(self) -> None:
        """Sets the deadline for what the client is to send next, after a read."""
        request: _Request | None = getattr(self._inner, "cycle", None)
        if request is not self._request:  # a head was completed by this read
            self._request = request
            self._disarm()
            if request is not None and request.more_body:
                self._arm(BODY)
        elif request is None or request.response_complete:  # the first bytes of a next head
            if self._deadline is None:
                self._arm(HEAD)
        elif self._waiting_for == BODY and not request.more_body:
            self._disarm()

    def _arm(self, what: str) -> None:
        self._disarm()
        seconds = self._limits.head_seconds if what == HEAD else self._limits.body_seconds
        self._waiting_for = what
        self._deadline = asyncio.get_running_loop().call_later(seconds, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self._transport is None or self._transport.is_closing():
            return
        log.info(
            "closing a connection whose client was too slow",
            extra={"client": self._host, "waiting_for": self._waiting_for},
        )
        self._transport.close()
