"""Many open in-app pages in one process: a connection per owner to `GET /v1/owners/{owner}/
feed` (server-sent events), each a bare asyncio protocol that notes every event's arrival.

A page is an HTTP/1.1 request and a buffer; an event is found by its `data:` line (the
server writes each event in one chunk of its chunked response), and its lateness is the
arrival minus the `due` instant in its JSON. Ten thousand of them take one event loop a
fraction of a core, so the client does not take the CPU the server needs (on a 2-core
machine they share it). The process's open-file limit is raised to its hard limit first.
"""

from __future__ import annotations

import asyncio
import resource
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlsplit

import orjson

from tocsin_bench.stats import spread

CONNECTING_AT_ONCE = 200  # connects in flight while the pages open
OPEN_TIMEOUT_SECONDS = 60.0  # for one page's response head
FD_MARGIN = 1024  # files the process needs besides its pages


def raise_open_files(wanted: int) -> int:
    """Raise this process's open-file limit (and so its children's) to hold `wanted` more
    files; the new soft limit. Raises RuntimeError when the hard limit is too low."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = wanted + FD_MARGIN
    if soft >= need:
        return soft
    if hard != resource.RLIM_INFINITY and hard < need:
        raise RuntimeError(
            f"{wanted} connections need {need} open files; the hard limit is {hard} "
            "(raise it: `ulimit -Hn`, or LimitNOFILE in systemd)"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    return need


@dataclass
class Tally:
    """What every page received."""

    opened: int = 0
    events: int = 0
    lost_connections: int = 0
    seen: dict[str, int] = field(default_factory=dict)  # event id -> arrivals
    lateness: list[float] = field(default_factory=list)  # seconds, arrival - due

    def stats(self) -> dict[str, Any]:
        unique = len(self.seen)
        return {
            "pages": self.opened,
            "events": self.events,
            "unique": unique,
            "duplicates": self.events - unique,
            "lost_connections": self.lost_connections,
            "due_to_received_s": spread(self.lateness),
        }


class Page(asyncio.Protocol):
    """One feed connection."""

    def __init__(self, tally: Tally, request: bytes) -> None:
        self._tally = tally
        self._request = request
        self._buffer = b""
        self._head_seen = False
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass
        transport.write(self._request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        arrived = time.time()
        buffer = self._buffer + data
        if not self._head_seen:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                self._buffer = buffer
                return
            status = buffer[: buffer.find(b"\r\n")]
            if b" 200 " not in status:
                self._fail(f"the feed answered {status.decode(errors='replace')}")
                return
            self._head_seen = True
            self._tally.opened += 1
            self.opened.set_result(None)
            buffer = buffer[end + 4 :]
        *events, self._buffer = buffer.split(b"\n\n")
        for event in events:
            start = event.find(b"data: ")
            if start >= 0:
                self._received(orjson.loads(event[start + 6 :]), arrived)

    def _received(self, document: dict[str, Any], arrived: float) -> None:
        tally = self._tally
        tally.events += 1
        event_id = str(document["id"])
        tally.seen[event_id] = tally.seen.get(event_id, 0) + 1
        tally.lateness.append(arrived - datetime.fromisoformat(document["due"]).timestamp())

    def _fail(self, why: str) -> None:
        if not self.opened.done():
            self.opened.set_exception(RuntimeError(why))
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.opened.done():
            self._tally.lost_connections += 1
        else:
            self._fail(f"connection lost before the answer: {exc}")


class Pages:
    """The open pages of a run, one per owner."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 80
        self.tally = Tally()
        self._pages: list[Page] = []

    async def open(self, owners: list[str]) -> None:
        """Open a page for each owner; returns once every one has its response head."""
        raise_open_files(len(owners))
        limit = asyncio.Semaphore(CONNECTING_AT_ONCE)
        await asyncio.gather(*(self._open_one(owner, limit) for owner in owners))

    async def _open_one(self, owner: str, limit: asyncio.Semaphore) -> None:
        request = (
            f"GET /v1/owners/{quote(owner, safe='')}/feed HTTP/1.1\r\n"
            f"Host: {self._host}:{self._port}\r\nAccept: text/event-stream\r\n\r\n"
        ).encode()
        loop = asyncio.get_running_loop()
        async with limit:
            _, page = await loop.create_connection(
                lambda: Page(self.tally, request), self._host, self._port
            )
            self._pages.append(page)
            await asyncio.wait_for(asyncio.shield(page.opened), OPEN_TIMEOUT_SECONDS)

    def close(self) -> None:
        for page in self._pages:
            if page.transport is not None:
                page.transport.close()
        self._pages.clear()
