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

A connection stays open only while the credential that opened it would still be admitted
(`Authenticator.still_admits`): checked again when the store tells of a revocation of its
owner's tokens (`Store.listen_revocations`: at once on PostgreSQL, in every process), and
at each heartbeat as the backstop (a revocation the store could not tell: SQLite and another
process, or a LISTEN connection lost; an app's key revoked; dev mode left). Checked before
the rings queued meanwhile are written, so a ring announced after the revocation was told of
reaches no connection it revoked. Each process holds at most `max_per_owner` connections of
one owner: a client that opens pages without end cannot exhaust its sockets.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime
from typing import Any, Protocol

import orjson

from tocsin.actions import ActionLinks
from tocsin.api import sse
from tocsin.api.collector import CollectorPause
from tocsin.api.problems import Problem
from tocsin.api.security import Authenticator, Principal
from tocsin.clock import Clock
from tocsin.domain import Firing
from tocsin.errors import StoreError
from tocsin.store.ports import FeedStore, Notifier

logger = logging.getLogger(__name__)

RETRY_MILLISECONDS = 3000  # a page that lost its connection tries again after this
HEARTBEAT = "keep-alive"
ACK_RETRY_SECONDS = 1.0  # a failed `sent` record is tried again this much later
GAP_RETRY_SECONDS = 1.0  # a failed re-read after a gap is tried again this much later
MAX_SEEN = 4096  # ids a connection remembers having written, to write each only once


class FeedAndNotifier(FeedStore, Notifier, Protocol):
    """The in-app rings in the store, and the notifier that announces them (and owners'
    revoked tokens) to this process."""


class Subscription:
    """One open feed connection, and the rings handed to it.

    While its task waits for rings with none queued (it is parked), a ring handed to it is
    written at once, by the task that hands it (`offer`): a burst of a ring for each of ten
    thousand connections is written from one task, without waking a task per connection
    (docs/benchmarks.md, the in-app row). Otherwise — its task is writing, re-reading the
    store, or finishing a write to a page that reads slowly — the ring is queued, and its task
    writes the queue in order. Its task waits on a bare future with a timer, not
    `asyncio.wait_for` on an event, which made a task per wait."""

    def __init__(self, feed: Feed, owner: str, principal: Principal, *, check_at: float) -> None:
        self._feed = feed
        self.owner = owner
        self.principal = principal  # the caller that opened it, checked again while open
        self.tenant = principal.tenant  # an app key's connection gets that app's rings only
        self.closed = False
        self.stale = False  # announcements may have been missed: read the store again
        self.check_due = False  # its credential may have been revoked: check before writing
        self.check_at = check_at  # the event loop's time of the next periodic check
        self._rings: deque[Firing] = deque()
        self._seen: dict[str, None] = {}  # ids written, to write each only once
        self._waiter: asyncio.Future[None] | None = None
        self._parked: sse.EventWriter | None = None  # while parked: write rings at once
        self._wrote = False  # written at once while parked: no heartbeat due
        self._unfinished: tuple[Awaitable[None], Firing] | None = None  # a slow page's write

    def offer(self, firing: Firing, now: datetime) -> None:
        if self.tenant is not None and firing.source != self.tenant:
            return
        writer = self._parked
        if writer is None:  # its task takes the queue when it waits next
            self._rings.append(firing)
            self._wake()
            return
        if not self.wants(firing, now):
            return
        self.remember(firing.id)
        try:
            rest = writer.write_now(_event(firing, self._feed.links))
        except Exception as error:  # the connection broke under the write: as a disconnect
            logger.debug("writing to a feed of %s failed: %s", self.owner, error)
            self.close()
            return
        self._wrote = True
        if rest is None:
            self._feed.written(self, firing)
        else:
            self._unfinished = (rest, firing)
            self._wake()

    def wants(self, firing: Firing, now: datetime) -> bool:
        """Not written to this connection yet, and still fresh."""
        return firing.id not in self._seen and firing.deadline > now

    def remember(self, firing_id: str) -> None:
        seen = self._seen
        seen[firing_id] = None
        if len(seen) > MAX_SEEN:  # the oldest were written long ago: past their deadlines
            del seen[next(iter(seen))]

    def missed(self) -> None:
        self.stale = True
        self._wake()

    def recheck(self) -> None:
        self.check_due = True
        self._wake()

    def close(self) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        self._parked = None
        if self._waiter is not None:
            _set_done(self._waiter)

    async def wait(self, idle: float, writer: sse.EventWriter) -> list[Firing] | None:
        """The rings queued since the last call, once there are any; None when `idle` seconds
        passed with nothing written (time for a heartbeat), or the subscription was closed.
        While it waits, rings are written at once through `writer`."""
        if not self._rings and not self.stale and not self.closed and not self.check_due:
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            self._parked, self._wrote = writer, False
            timer = loop.call_later(idle, self._wake)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = self._parked = None
        if self._unfinished is not None:
            rest, firing = self._unfinished
            self._unfinished = None
            if await writer.finish(rest):
                self._feed.received(firing)
        if not self._rings:
            return [] if self._wrote else None
        rings = list(self._rings)
        self._rings.clear()
        return rings


def _set_done(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Feed:
    """The feed connections of this API process, and the rings that reach them."""

    def __init__(
        self,
        store: FeedAndNotifier,
        clock: Clock,
        *,
        heartbeat: float,
        auth: Authenticator,
        max_per_owner: int = 0,
        links: ActionLinks | None = None,
    ) -> None:
        self._store = store
        self.links = links  # the Done and Snooze of each ring written
        self._clock = clock
        self.heartbeat = heartbeat
        self._auth = auth
        self.max_per_owner = max_per_owner  # 0: no cap
        self._owners: dict[str, set[Subscription]] = {}
        self._stop_listening: Callable[[], None] | None = None
        self._stop_hearing_revocations: Callable[[], None] | None = None
        self._starting = asyncio.Lock()
        self._closed = False
        self._announced: list[str] = []  # firing ids announced this turn, for one read
        self._acks: dict[str, datetime] = {}  # firing id -> deadline, to mark `sent`
        self._written: list[tuple[Subscription, Firing]] = []  # at once, this turn
        self._tasks: set[asyncio.Task[None]] = set()
        self._collector = CollectorPause()  # not collecting while a burst is written

    async def open(self, owner: str, caller: Principal) -> Subscription:
        """A subscription to `owner`'s rings for `caller`; raises StoreError when the store
        cannot listen, a 429 problem when this process holds `max_per_owner` of the owner's
        connections already."""
        async with self._starting:
            if self._stop_listening is None:
                self._stop_listening = await self._store.listen_feed(
                    self._on_ring, on_gap=self._on_gap
                )
            if self._stop_hearing_revocations is None:
                self._stop_hearing_revocations = await self._store.listen_revocations(
                    self._on_revoked
                )
        held = self._owners.setdefault(owner, set())
        if 0 < self.max_per_owner <= len(held):
            raise _too_many_connections(owner, len(held))
        check_at = asyncio.get_running_loop().time() + self.heartbeat
        subscription = Subscription(self, owner, caller, check_at=check_at)
        if self._closed:
            subscription.close()
        held.add(subscription)
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

    def written(self, subscription: Subscription, firing: Firing) -> None:
        """`firing` was written at once to `subscription`'s connection: received, unless the
        connection turns out closed in the next turn of the event loop (a disconnect the
        server had already seen is noticed by then, as in `EventWriter.write`)."""
        if not self._written:
            asyncio.get_running_loop().call_soon(self._confirm)
        self._written.append((subscription, firing))

    def _confirm(self) -> None:
        written, self._written = self._written, []
        for subscription, firing in written:
            if not subscription.closed:
                self.received(firing)

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
                subscription.recheck()  # a revocation may have gone unheard too

    def _on_revoked(self, owner: str) -> None:
        self._auth.forget_owner(owner)
        for subscription in self._owners.get(owner, ()):
            subscription.recheck()

    async def _read_announced(self) -> None:
        ids, self._announced = self._announced, []
        try:
            firings = await self._store.feed_rings(ids, now=self._clock.now())
        except StoreError as error:
            # They stay queued: a page gets them when it reconnects, or they expire.
            logger.warning("reading %d announced in-app rings failed: %s", len(ids), error)
            self._on_gap()
            return
        now = self._clock.now()
        for firing in firings:
            for subscription in self._owners.get(firing.owner, ()):
                subscription.offer(firing, now)

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

    async def serve(
        self, subscription: Subscription, waiting: list[Firing], writer: sse.EventWriter
    ) -> None:
        """The event stream of one connection (an `sse.EventStream`'s body), starting with the
        rings `waiting` in the store, until the connection closes; then it leaves the feed."""
        try:
            if not await writer.write(sse.retry(RETRY_MILLISECONDS)):
                return
            rings: list[Firing] | None = waiting
            while not subscription.closed:
                for firing in rings or ():
                    if not subscription.wants(firing, self.now()):
                        continue
                    subscription.remember(firing.id)
                    if not await writer.write(_event(firing, self.links)):
                        return
                    self.received(firing)
                rings = await self._next(subscription, writer)
                if not await self._still_admitted(subscription, heartbeat=rings is None):
                    return
                if rings is None and not await writer.write(sse.comment(HEARTBEAT)):
                    return
        finally:
            self.leave(subscription)

    async def _still_admitted(self, subscription: Subscription, *, heartbeat: bool) -> bool:
        """Whether the connection may go on: its credential checked again when told to, at
        a heartbeat, and at least every heartbeat's time on a connection too busy for one."""
        now = asyncio.get_running_loop().time()
        if subscription.closed or not (
            subscription.check_due or heartbeat or now >= subscription.check_at
        ):
            return True
        subscription.check_due = False
        subscription.check_at = now + self.heartbeat
        try:
            admitted = await self._auth.still_admits(subscription.principal)
        except StoreError as error:  # the database is away: the next heartbeat asks again
            logger.warning("checking a feed of %s failed: %s", subscription.owner, error)
            return True
        if not admitted:
            logger.info(
                "ended a feed connection: its credential is no longer admitted",
                extra={"owner": subscription.owner, "caller": subscription.principal.scope},
            )
        return admitted

    async def _next(
        self, subscription: Subscription, writer: sse.EventWriter
    ) -> list[Firing] | None:
        """The next rings to write: queued, or re-read after a gap; None for a heartbeat."""
        rings = await subscription.wait(self.heartbeat, writer)
        if subscription.stale and not subscription.closed:
            subscription.stale = False
            try:
                rings = [*(rings or []), *(await self.waiting(subscription, after=None))]
            except StoreError as error:
                logger.warning("re-reading the feed of %s failed: %s", subscription.owner, error)
                asyncio.get_running_loop().call_later(GAP_RETRY_SECONDS, subscription.missed)
        if subscription.closed:
            return []
        return rings


def _too_many_connections(owner: str, held: int) -> Problem:
    return Problem(
        429,
        "too-many-feed-connections",
        f"{owner} has {held} feed connections open on this server process, the most it "
        "allows (TOCSIN_MAX_FEED_CONNECTIONS_PER_OWNER): close a page or tab, then try again",
    )


# Instants as `format_utc` writes them (the store's are UTC), by orjson: 1/10 the time.
_INSTANTS = orjson.OPT_UTC_Z | orjson.OPT_OMIT_MICROSECONDS


def _event(firing: Firing, links: ActionLinks | None) -> bytes:
    """The firing as one event: its identity as the `id`, its JSON as the data (with the
    actions it offers, when this server makes links)."""
    fields: dict[str, Any] = {
        "id": firing.id,
        "reminder_id": firing.reminder_id,
        "owner": firing.owner,
        "text": firing.text,
        "due": firing.due_at,
        "deadline": firing.deadline,
        "metadata": firing.metadata,
    }
    if links is not None:
        fields["actions"] = links.of(firing).offered()
    data = orjson.dumps(fields, option=_INSTANTS)
    return sse.event(firing.id, data)
