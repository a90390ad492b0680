"""Where a firing goes: its destinations, worked out by delivery so that a channel only sends.

- `log`: the log itself, one destination.
- `inapp`: the owner's feed, one destination: whichever pages are open (the owner needs no
  contact; an API process holding a connection settles the firing).
- `webhook`: the endpoint of the reminder's app (`tocsin keys create --webhook-url`), else the
  deployment-wide `TOCSIN_WEBHOOK_URL`, and the owner's own webhook contacts.
- every other channel: the owner's enabled contacts of that kind (a phone and a tablet).

A shared list's reminder (owner `list#<id>`) rings, instead of one owner's contacts, those of
each member of the list who joined it, or of its assignee alone; decided here, when the ring
is sent, so a member who left gets no later ring, and one still invited none. Each member's
contacts are his own, under the same tenancy: an app's list ring goes to the contacts that
app saved for him and those he saved himself. Every destination keeps its own attempts under
the ring's one identity, as a ring to two contacts of one owner does.

Apps are tenants, and so are their contacts (`Contact.source`): a ring of an app's reminder
goes to the contacts that app saved and to those the owner saved himself, never to another
app's (app X's webhook must not receive app Y's ring). A reminder the owner saved himself
(an owner token, the page) rings every contact of his: all of them are his to manage.
- the benchmark's null channels: one destination, the counter.

Contacts are looked up in batches: the lookups of every firing being sent in one turn of the
event loop go to the database as one query (an index lookup per (owner, kind)), so a burst
costs a query per batch, not one per ring. Apps are kept for `APP_CACHE_SECONDS`. A list's
rings are known by their owner alone, so the lookup of their members (one query a batch,
too) is made for them only: a ring of no list reads nothing more than before. A list's bulk
ring reads the quiet hours of the members it goes to (`quiet_members`), not the list's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection
from datetime import datetime
from typing import Generic, Protocol, TypeVar

from tocsin.channels import Destination
from tocsin.domain import App, Channel, Firing, Outcome, list_of
from tocsin.store.ports import (
    AppStore,
    ContactStore,
    DeliveryQueue,
    ListStore,
    QuietHoursStore,
)
from tocsin.time.quiet import quiet_until

APP_CACHE_SECONDS = 30.0
LOG = Destination(id="log", kind=Channel.LOG, address={})
NULL = Destination(id="null", kind=Channel.LOG, address={})
FEED = Destination(id="feed", kind=Channel.INAPP, address={})
APP_PREFIX = "app:"
DEFAULT = "default"  # the deployment-wide webhook endpoint

Wanted = tuple[str, Channel]
K = TypeVar("K")
V = TypeVar("V")


class DestinationStore(ContactStore, AppStore, DeliveryQueue, QuietHoursStore, ListStore, Protocol):
    """What finding destinations reads and writes: the owners' contacts by kind, the apps'
    webhook endpoints, what a firing's earlier attempts settled, gone ones disabled, the
    owners' quiet hours, and whom a list's ring goes to."""


class Nowhere(Exception):
    """A firing has no destination: the reason is recorded as its error (`no-destination`)."""


class Destinations:
    """Finds firings' destinations, and disables those their provider called gone."""

    def __init__(
        self,
        store: DestinationStore,
        *,
        default_webhook: tuple[str, str | None] | None = None,
        null: bool = False,
    ) -> None:
        self._store = store
        self._default = (
            None
            if default_webhook is None
            else Destination(
                id=DEFAULT,
                kind=Channel.WEBHOOK,
                address={"url": default_webhook[0]},
                secret=default_webhook[1],
            )
        )
        self._null = null
        self._apps: dict[str, tuple[float, App | None]] = {}
        # Looked up at call time: the benchmarks' null destinations and tests have no store.
        self._contacts = Batched(lambda wanted: self._store.destinations(wanted))
        self._quiet = Batched(lambda owners: self._store.quiet_hours_of(owners))
        self._ignoring = Batched(self._ignoring_quiet_hours)
        self._members = Batched(lambda rings: self._store.list_rings(rings))

    async def of(self, firing: Firing, channel: Channel) -> list[Destination]:
        """Where `firing` goes now on `channel` (one of its route's). Raises `Nowhere`
        (saying why) when it has no destination there, and StoreError when the database
        cannot say (the firing is retried)."""
        if self._null:
            return [NULL]
        if channel is Channel.LOG:
            return [LOG]
        if channel is Channel.INAPP:
            return [FEED]
        found: list[Destination] = []
        owners, why = await self._owners(firing, channel)
        if channel is Channel.WEBHOOK:
            endpoint, why = await self._endpoint(firing.source, why)
            if endpoint is not None:
                found.append(endpoint)
        if len(owners) == 1:  # an owner's ring (nearly every one): no task to gather
            looked_up = [await self._contacts.get((owners[0], channel))]
        else:  # a list's: every member's lookup in the one batch of this turn
            looked_up = await asyncio.gather(*(self._contacts.get((o, channel)) for o in owners))
        found.extend(
            Destination(id=c.id, kind=c.kind, address=c.address, secret=c.secret, owner=c.owner)
            for contacts in looked_up
            for c in contacts
            if c.takes_rings_of(firing.source)
        )
        if not found:
            raise Nowhere(why)
        return found

    async def _owners(self, firing: Firing, channel: Channel) -> tuple[list[str], str]:
        """Whose contacts `firing` rings, and what to say when none is there: its owner's,
        or for a list's ring the members it goes to now (those who joined, or its assignee
        alone), looked up with every other list ring of this turn."""
        list_id = list_of(firing.owner)
        if list_id is None:
            return [
                firing.owner
            ], f"no-destination: {firing.owner} has no {channel} contact to ring"
        members = await self._members.get((list_id, firing.reminder_id))
        if not members:
            return [], f"no-destination: no member of list {list_id} it rings has joined"
        return (
            members,
            f"no-destination: no member of list {list_id} it rings has a {channel} contact",
        )

    async def quiet_until(self, firing: Firing, now: datetime) -> datetime | None:
        """When the quiet hours that hold `firing` at `now` end, or None when none do: the
        owner's own, and those the reminder's app saved for him (looked up with every other
        lookup of this turn), unless its reminder ignores them. Only a bulk ring is held; the
        caller asks for those alone."""
        if self._null:  # the benchmarks' counter: it reads no owner's settings
            return None
        until = await self._until(firing.owner, firing, now)
        if until is None or await self._ignoring.get(firing.reminder_id):
            return None
        return until

    async def quiet_members(
        self, firing: Firing, members: Collection[str], now: datetime
    ) -> dict[str, datetime]:
        """Those of `members` (whom a list's bulk ring goes to) inside their quiet hours at
        `now`, each with when they end; none when its reminder ignores them. A member's are
        his own and those the reminder's app saved for him, every member's looked up in the
        one batch of this turn, with every other ring's."""
        if self._null or not members:
            return {}
        ends = await asyncio.gather(*(self._until(member, firing, now) for member in members))
        quiet = {m: until for m, until in zip(members, ends, strict=True) if until is not None}
        if quiet and await self._ignoring.get(firing.reminder_id):
            return {}
        return quiet

    async def _until(self, owner: str, firing: Firing, now: datetime) -> datetime | None:
        """When `owner`'s quiet hours that apply to `firing` (his own, its app's) and hold
        `now` end; None when none does."""
        spans = await self._quiet.get(owner)
        return quiet_until([span for span in spans if span.source in (None, firing.source)], now)

    async def _ignoring_quiet_hours(self, reminder_ids: list[str]) -> dict[str, list[bool]]:
        """The reminders that ring through quiet hours, as they are now (an edit after the
        ring was claimed counts): read only for rings quiet hours would hold."""
        return {id_: [True] for id_ in await self._store.ignoring_quiet_hours(reminder_ids)}

    async def settled(self, firing: Firing) -> dict[str, Outcome]:
        """The destinations earlier attempts settled for good (none on a first attempt)."""
        if firing.attempts == 0:
            return {}
        return await self._store.settled_destinations(firing.id)

    async def gone(self, destination: Destination, reason: str, now: datetime) -> None:
        """The provider called `destination` gone: disable it, so no ring tries it again."""
        if destination.id.startswith(APP_PREFIX):
            name = destination.id.removeprefix(APP_PREFIX)
            await self._store.disable_webhook(name)
            self._apps.pop(name, None)
        elif destination.id not in (DEFAULT, LOG.id, NULL.id, FEED.id):
            await self._store.disable_contact(destination.id, reason=reason, now=now)

    async def _endpoint(self, source: str | None, why: str) -> tuple[Destination | None, str]:
        """The webhook endpoint of the app (or the deployment's), and what to say if there
        is no destination at all."""
        app = await self._app(source) if source else None
        if app is not None and app.webhook_url:
            if app.webhook_disabled:  # it answered 410 Gone: only the owner's contacts remain
                return None, f"{why}, and app {app.name}'s webhook was disabled (410 Gone)"
            destination = Destination(
                id=APP_PREFIX + app.name,
                kind=Channel.WEBHOOK,
                address={"url": app.webhook_url},
                secret=app.webhook_secret,
            )
            return destination, why
        if self._default is None:
            return None, f"{why}, and no webhook URL is set (the app's, or TOCSIN_WEBHOOK_URL)"
        return self._default, why

    async def _app(self, name: str) -> App | None:
        cached = self._apps.get(name)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        app = await self._store.find_app(name=name)
        self._apps[name] = (time.monotonic() + APP_CACHE_SECONDS, app)
        return app


class Batched(Generic[K, V]):
    """Lookups by key that wait for one another: every key asked for in one turn of the event
    loop goes to `lookup` in one call (an index lookup a key, one query a batch), and each
    asker gets its key's values (none when the lookup left the key out)."""

    def __init__(self, lookup: Callable[[list[K]], Awaitable[dict[K, list[V]]]]) -> None:
        self._lookup = lookup
        self._wanted: dict[K, asyncio.Future[list[V]]] = {}
        self._running: set[asyncio.Future[dict[K, list[V]]]] = set()

    async def get(self, key: K) -> list[V]:
        future = self._wanted.get(key)
        if future is None:
            if not self._wanted:
                asyncio.get_running_loop().call_soon(self._flush)
            future = self._wanted[key] = asyncio.get_running_loop().create_future()
        return await asyncio.shield(future)

    def _flush(self) -> None:
        batch, self._wanted = self._wanted, {}
        task = asyncio.ensure_future(self._lookup(list(batch)))
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        task.add_done_callback(lambda done: _settle(batch, done))


def _settle(
    batch: dict[K, asyncio.Future[list[V]]], done: asyncio.Future[dict[K, list[V]]]
) -> None:
    error = done.exception()
    for key, future in batch.items():
        if future.done():
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(done.result().get(key, []))
