"""The `inapp` channel: a ring for the owner's open pages, announced to the API processes that
hold their feed connections (`GET /v1/owners/{owner}/feed`, server-sent events).

The sender does not reach a page itself: the connections live in the API processes. It
announces the ring — `(owner, firing id)`, NOTIFY `tocsin_feed` on PostgreSQL, in-process on
SQLite — and answers `held`: the firing waits `queued` until its deadline. The API process
that writes it to a connected page marks it `sent`; with no page connected it is sent when
one connects, and pickup records it `expired` at its deadline (docs/channels.md, "inapp").

A ring for the feed alone never reaches the sender: its claim queues and announces it
(`Store.claim`). The sender is for an in-app firing a worker is handed all the same, such as
one claimed by a worker of an earlier version and taken over.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from tocsin.channels.base import DeliveryResult, Destination, DestinationSender
from tocsin.domain import Firing
from tocsin.errors import TocsinError
from tocsin.outside import outside_text
from tocsin.store.ports.feed import FEED_WAITING

Announce = Callable[[Sequence[tuple[str, str]]], Awaitable[None]]
"""Tells every API process that these (owner, firing id) rings wait for the owner's feed
(`Store.announce_feed`)."""


class InappSender(DestinationSender):
    """Announces rings to the feed. The announcements of every ring sent in one turn of the
    event loop go out as one statement (a burst is one NOTIFY round trip per batch, not one
    per ring). Without `announce` (a process that only validates channels) nothing is sent."""

    def __init__(self, announce: Announce | None) -> None:
        self._announce = announce
        self._batch: list[tuple[str, str]] = []
        self._done: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()  # announcing now (kept from the GC)

    async def send(
        self, firing: Firing, destination: Destination, *, time_limit: float
    ) -> DeliveryResult:
        if self._announce is None:
            return DeliveryResult.failed("the in-app feed is not wired in this process")
        try:
            await asyncio.wait_for(asyncio.shield(self._queue(firing)), time_limit)
        except TimeoutError:
            return DeliveryResult.retry("announcing to the in-app feed timed out")
        except TocsinError as error:
            return DeliveryResult.retry(
                f"could not announce to the in-app feed: {outside_text(error)}"
            )
        return DeliveryResult.held_until_deadline(FEED_WAITING)

    def _queue(self, firing: Firing) -> asyncio.Future[None]:
        self._batch.append((firing.owner, firing.id))
        if self._done is None:
            loop = asyncio.get_running_loop()
            self._done = loop.create_future()
            loop.call_soon(self._flush)
        return self._done

    def _flush(self) -> None:
        batch, done = self._batch, self._done
        self._batch, self._done = [], None
        if self._announce is None or done is None:  # never: `send` checked, `_queue` made it
            return
        task = asyncio.ensure_future(self._announce(batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda finished: _settle(done, finished))


def _settle(done: asyncio.Future[None], finished: asyncio.Future[None]) -> None:
    if done.done():
        return
    if finished.cancelled():
        done.cancel()
        return
    error = finished.exception()
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(None)
