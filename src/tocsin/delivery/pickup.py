"""Pickup: takes over firings that need a sender — retries whose time came, and firings
whose sender vanished (lease ran out while `sending`) — from the durable queue."""

from __future__ import annotations

import asyncio
import heapq
import logging
from datetime import datetime, timedelta

from tocsin.clock import Clock
from tocsin.delivery.pool import DeliveryPool
from tocsin.delivery.waiting import sleep_until
from tocsin.errors import StoreError, level_for
from tocsin.store.ports import DeliveryQueue

logger = logging.getLogger(__name__)

# A retry's new state is written in a batch a little after it is decided: when the pickup
# finds nothing at the retry time, it looks again this much later, this many times.
RELOOK = timedelta(milliseconds=100)
RELOOKS = 5

# Claims whose sender's hold ran out are looked for at most this often, this many at a time
# (each of up to a claim batch of rings, nearly all of them written by their sender): a busy
# minute leaves a few dozen claims a second behind it, every one of them to forget.
RECOVER_EVERY = timedelta(seconds=1)
RECOVER_CLAIMS = 100


class Pickup:
    """Polls `take_deliveries` every `interval` seconds, and at the times of the retries this
    worker scheduled; takes only what the pool has room for (`DeliveryPool.free`: what its
    senders start in time), and while it has none, waits for the pool to say it has
    (`wake`) rather than looking again at retries that are due."""

    def __init__(
        self,
        store: DeliveryQueue,
        pool: DeliveryPool,
        clock: Clock,
        *,
        sender: str,
        lease: timedelta,
        interval: float,
        batch: int,
    ) -> None:
        self._store = store
        self._pool = pool
        self._clock = clock
        self._sender = sender
        self._lease = lease
        self._interval = timedelta(seconds=interval)
        self._batch = batch
        self._retries: list[tuple[datetime, int]] = []  # (when, relooks left), soonest first
        self._wake = asyncio.Event()
        self._waiting_for_room = False
        self._recovered_at: datetime | None = None
        self.taken = 0
        self.recovered = 0

    def retry_at(self, when: datetime) -> None:
        """A retry comes due at `when`: look then, not at the next poll."""
        self._look_at(when, RELOOKS)

    def wake(self) -> None:
        """Look now: the pool has room again."""
        self._wake.set()

    def _look_at(self, when: datetime, relooks: int) -> None:
        soonest = self._retries[0][0] if self._retries else None
        heapq.heappush(self._retries, (when, relooks))
        if soonest is None or when < soonest:
            self._wake.set()

    async def run(self) -> None:
        while True:
            more = await self._take()
            if more:
                continue
            await self._sleep()

    async def _take(self) -> bool:
        now = self._clock.now()
        if self._recovered_at is None or now - self._recovered_at >= RECOVER_EVERY:
            # Even while this worker's line is full: what it writes, any worker may take.
            try:
                await self._recover(now)
            except StoreError as error:
                logger.log(level_for(error), "looking for rings left unrecorded failed: %s", error)
        room = self._pool.free
        self._waiting_for_room = room < min(self._batch, self._pool.refill)
        if self._waiting_for_room:
            # Until the pool wakes this: a look at due retries now could take none of them.
            self._pool.want_room()
            return False
        limit = min(self._batch, room)
        relooks = 0
        while self._retries and self._retries[0][0] <= now:
            relooks = max(relooks, heapq.heappop(self._retries)[1])
        try:
            firings = await self._store.take_deliveries(
                sender=self._sender, shards=None, now=now, lease=self._lease, limit=limit
            )
        except StoreError as error:
            logger.log(level_for(error), "taking deliveries failed: %s", error)
            return False
        if firings:
            self.taken += len(firings)
            logger.debug("took %d firings to send", len(firings))
            await self._pool.submit(firings)
        elif relooks:
            # The retry's `queued` state may not be written yet: look again shortly.
            self._look_at(now + RELOOK, relooks - 1)
        return len(firings) == limit

    async def _recover(self, now: datetime) -> None:
        """Write the rings whose sender's hold ran out before it wrote them, for any taker
        (this one, at once, below)."""
        self._recovered_at = now
        written = await self._store.recover_claims(now=now, limit=RECOVER_CLAIMS)
        if written:
            self.recovered += written
            logger.warning(
                "%d rings were claimed by a sender that did not record them before its hold "
                "ran out: queued to be sent again under the same identity",
                written,
            )

    async def _sleep(self) -> None:
        until = self._clock.now() + self._interval
        if self._retries and self._retries[0][0] < until and not self._waiting_for_room:
            until = self._retries[0][0]
        await sleep_until(self._clock, until, self._wake)
        self._wake.clear()
