"""The in-app feed of one API process: its open feed connections by owner, the rings that
reach them, and the record that a page received one.

The claim queues each in-app ring `queued` until its deadline and announces it (owner,
firing id) at its commit; a worker's `inapp` sender does the same for an in-app firing it
is handed (`tocsin.channels.inapp`). Here, `Feed` listens to those announcements
(`Store.listen_feed`: NOTIFY on PostgreSQL, in-process on SQLite) only while it holds a
connection, reads the firings announced for owners it holds (in one query per turn of the
event loop), and hands them to each of that owner's connections. A connection writes the
event, and once it was written to an open connection the firing is marked `sent`
(`Store.mark_feed_sent`, conditional: only while still fresh and not final). While it
writes a burst, automatic garbage collection is paused (`tocsin.api.collector`).

On connect (and after the LISTEN connection was lost) a connection reads what waits for its
owner in the store (`Store.feed_firings`): the rings announced while no page was open, and,
with `Last-Event-ID`, the ones sent after that event. At least once, with one identity: a
page may get an event twice (the same `id`), never one past its deadline.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine
from datetime import datetime
from typing import Any

import orjson

from tocsin.api import sse
from tocsin.api.collector import CollectorPause
from tocsin.clock import Clock
from tocsin.domain import Firing
from tocsin.errors import StoreError
from tocsin.store.base import Store
from tocsin.time import format_utc

logger = logging.getLogger(__name__)

RETRY_MILLISECONDS = 3000  # a page that lost its connection tries again after this
HEARTBEAT = "keep-alive"
ACK_RETRY_SECONDS = 1.0  # a failed `sent` record is tried again this much later
GAP_RETRY_SECONDS = 1.0  # a failed re-read after a gap is tried again this much later
MAX_SEEN = 4096  # ids a connection remembers having written, to write each only once


class Subscription:
    """One open feed connection: the rings handed to it, waiting to be written.

    Its task waits on a bare future with a timer (`wait`), not `asyncio.wait_for` on an
    event: that made a task per wait, and with ten thousand pages woken at once by a burst,
    it was half of the API process's work (docs/benchmarks.md, the in-app row)."""

    def __init__(self, owner: str, tenant: str | None) -> None:
        self.owner = owner
        self.tenant = tenant  # an app key's connection gets that app's rings only
        self.closed = False
        self.stale = False  # announcements may have been missed: read the store again
        self._rings: deque[Firing] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def offer(self, firing: Firing) -> None:
        if self.tenant is None or firing.source == self.tenant:
            self._rings.append(firing)
            self._wake()

    def missed(self) -> None:
        self.stale = True
        self._wake()

    def close(self) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None:
            _set_done(self._waiter)

    async def wait(self, idle: float) -> list[Firing] | None:
        """The rings handed over since the last call; None when `idle` seconds passed
        without any (time for a heartbeat), or the subscription was closed."""
        if not self._rings and not self.stale and not self.closed:
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(idle, _set_done, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
        if not self._rings:
            return None
        rings = list(self._rings)
        self._rings.clear()
        return rings


def _set_done(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Feed:
    """The feed connections of this API process, and the rings that reach them."""

    def __init__(self, store: Store, clock: Clock, *, heartbeat: float) -> None:
        self._store = store
        self._clock = clock
        self.heartbeat = heartbeat
        self._owners: dict[str, set[Subscription]] = {}
        self._stop_listening: Callable[[], None] | None = None
        self._starting = asyncio.Lock()
        self._closed = False
        self._announced: list[str] = []  # firing ids announced this turn, for one read
        self._acks: dict[str, datetime] = {}  # firing id -> deadline, to mark `sent`
        self._tasks: set[asyncio.Task[None]] = set()
        self._collector = CollectorPause()  # not collecting while a burst is written

    async def open(self, owner: str, tenant: str | None) -> Subscription:
        """A subscription to `owner`'s rings; raises StoreError when the store cannot listen."""
        async with self._starting:
            if self._stop_listening is None:
                self._stop_listening = await self._store.listen_feed(
                    self._on_ring, on_gap=self._on_gap
                )
        subscription = Subscription(owner, tenant)
        if self._closed:
            subscription.close()
        self._owners.setdefault(owner, set()).add(subscription)
        return subscription

    def leave(self, subscription: Subscription) -> None:
        subscription.close()
        held = self._owners.get(subscription.owner)
        if held is not None:
            held.discard(subscription)
            if not held:
                del self._owners[subscription.owner]

    def close(self) -> None:
        """End every connection (the server is stopping: pages reconnect to another)."""
        self._closed = True
        self._collector.resume()
        for held in self._owners.values():
            for subscription in held:
                subscription.close()

    async def waiting(self, subscription: Subscription, *, after: str | None) -> list[Firing]:
        """What waits in the store for the subscription's owner (see `Store.feed_firings`)."""
        found = await self._store.feed_firings(
            subscription.owner, now=self._clock.now(), after=after
        )
        tenant = subscription.tenant
        return [f for f in found if tenant is None or f.source == tenant]

    def now(self) -> datetime:
        return self._clock.now()

    def received(self, firing: Firing) -> None:
        """A page received `firing`: mark it `sent`, with every other of this turn."""
        if not self._acks:
            asyncio.get_running_loop().call_soon(self._spawn, self._mark_sent())
        self._acks[firing.id] = firing.deadline

    # -- announcements -----------------------------------------------------------------------

    def _on_ring(self, owner: str, firing_id: str) -> None:
        if owner not in self._owners:
            return  # no page of this owner here: another process has it, or nobody
        if not self._announced:
            self._collector.burst()
            asyncio.get_running_loop().call_soon(self._spawn, self._read_announced())
        self._announced.append(firing_id)

    def _on_gap(self) -> None:
        for held in self._owners.values():
            for subscription in held:
                subscription.missed()

    async def _read_announced(self) -> None:
        ids, self._announced = self._announced, []
        try:
            firings = await self._store.feed_rings(ids, now=self._clock.now())
        except StoreError as error:
            # They stay queued: a page gets them when it reconnects, or they expire.
            logger.warning("reading %d announced in-app rings failed: %s", len(ids), error)
            self._on_gap()
            return
        for firing in firings:
            for subscription in self._owners.get(firing.owner, ()):
                subscription.offer(firing)

    async def _mark_sent(self) -> None:
        while self._acks:
            now = self._clock.now()
            acks, self._acks = self._acks, {}
            try:
                await self._store.mark_feed_sent(list(acks), at=now)
                return
            except StoreError as error:
                logger.warning("recording %d in-app rings sent failed: %s", len(acks), error)
            # Tried again while still fresh: the page did get them.
            self._acks = {i: d for i, d in acks.items() if d > now} | self._acks
            await asyncio.sleep(ACK_RETRY_SECONDS)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


async def events(
    feed: Feed, subscription: Subscription, waiting: list[Firing]
) -> AsyncIterator[bytes]:
    """The event stream of one connection, starting with the rings `waiting` in the store.
    Each `yield` resumes only once its chunk was written to the open connection
    (`sse.EventStream`): then the firing counts as received. Leaves the feed at the end."""
    seen: dict[str, None] = {}
    rings = waiting
    try:
        yield sse.retry(RETRY_MILLISECONDS)
        while not subscription.closed:
            for firing in rings:
                if firing.id in seen or firing.deadline <= feed.now():
                    continue
                yield sse.event(firing.id, _data(firing))
                feed.received(firing)
                _remember(seen, firing.id)
            handed = await _next(feed, subscription)
            if handed is None:
                yield sse.comment(HEARTBEAT)
            rings = handed or []
    finally:
        feed.leave(subscription)


async def _next(feed: Feed, subscription: Subscription) -> list[Firing] | None:
    """The next rings to write: handed over, or re-read after a gap; None for a heartbeat."""
    rings = await subscription.wait(feed.heartbeat)
    if subscription.stale and not subscription.closed:
        subscription.stale = False
        try:
            rings = [*(rings or []), *(await feed.waiting(subscription, after=None))]
        except StoreError as error:
            logger.warning("re-reading the feed of %s failed: %s", subscription.owner, error)
            asyncio.get_running_loop().call_later(GAP_RETRY_SECONDS, subscription.missed)
    if subscription.closed:
        return []
    return rings


def _remember(seen: dict[str, None], firing_id: str) -> None:
    seen[firing_id] = None
    if len(seen) > MAX_SEEN:  # the oldest were written long ago: past their deadlines
        del seen[next(iter(seen))]


def _data(firing: Firing) -> str:
    return orjson.dumps(
        {
            "id": firing.id,
            "reminder_id": firing.reminder_id,
            "owner": firing.owner,
            "text": firing.text,
            "due": format_utc(firing.due_at),
            "deadline": format_utc(firing.deadline),
            "metadata": firing.metadata,
        }
    ).decode()
