"""Pickup: takes over firings that need a sender — retries whose time came, and firings
whose sender vanished (lease ran out while `sending`) — from the durable queue."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta

from tocsin.clock import Clock
from tocsin.delivery.pool import DeliveryPool
from tocsin.delivery.waiting import sleep_until
from tocsin.errors import StoreError
from tocsin.store.base import Store

logger = logging.getLogger(__name__)


class Pickup:
    """Polls `take_deliveries` every `interval` seconds, and sooner when a retry this worker
    scheduled comes due; hands what it takes to the pool while it has room."""

    def __init__(
        self,
        store: Store,
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
        self._soonest: datetime | None = None
        self._wake = asyncio.Event()
        self.taken = 0

    def retry_at(self, when: datetime) -> None:
        """A retry comes due at `when`: look then, not at the next poll."""
        if self._soonest is None or when < self._soonest:
            self._soonest = when
            self._wake.set()

    async def run(self) -> None:
        while True:
            more = await self._take()
            if more:
                continue
            await self._sleep()

    async def _take(self) -> bool:
        limit = min(self._batch, self._pool.free)
        if limit <= 0:
            return False
        now = self._clock.now()
        if self._soonest is not None and self._soonest <= now:
            self._soonest = None
        try:
            firings = await self._store.take_deliveries(
                sender=self._sender, shards=None, now=now, lease=self._lease, limit=limit
            )
        except StoreError as error:
            logger.warning("taking deliveries failed: %s", error)
            return False
        if firings:
            self.taken += len(firings)
            logger.debug("took %d firings to send", len(firings))
            await self._pool.submit(firings)
        return len(firings) == limit

    async def _sleep(self) -> None:
        until = self._clock.now() + self._interval
        if self._soonest is not None and self._soonest < until:
            until = self._soonest
        await sleep_until(self._clock, until, self._wake)
        self._wake.clear()
