"""Delivery: the firings table is the durable queue; this sends what a worker holds.

`Delivery` wires the parts: a `DeliveryPool` of sender tasks, which takes only what they
start within a firing's hold at the pace they keep (`Pace`), each attempt made by a
`Deliverer` and decided by the `RetryPolicy`, results written in batches by a `Recorder`,
and a `Pickup` loop that takes over retries, firings handed back and firings whose sender
vanished, as the pool has room.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from tocsin.channels import Channels
from tocsin.clock import Clock
from tocsin.delivery.attempt import Deliverer
from tocsin.delivery.destinations import Destinations, DestinationStore
from tocsin.delivery.isolation import Isolation
from tocsin.delivery.pickup import Pickup
from tocsin.delivery.pool import DeliveryPool
from tocsin.delivery.recorder import Recorder
from tocsin.delivery.retry import RetryPolicy
from tocsin.domain import Firing
from tocsin.errors import StoreError
from tocsin.metrics.instruments import ENGINE

__all__ = ["Delivery", "DeliveryTuning", "RetryPolicy"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class DeliveryTuning:
    """Knobs of delivery that operators rarely touch (the rest are in `Settings`)."""

    concurrency: int = 256
    max_queued: int = 20_000  # firings waiting for a sender task; claims wait beyond this
    lease: timedelta = timedelta(seconds=20)  # how long a firing is held while `sending`
    pickup_seconds: float = 1.0
    pickup_batch: int = 1000
    record_batch: int = 1000
    record_seconds: float = 0.05
    # A send is made only while this long is left in the firing's hold (what the hold adds
    # to the part lease: the webhook timeout); else it is handed back, untried, to be taken
    # again with a fresh hold.
    send_timeout: float = 10.0


class Delivery:
    """Sends the firings handed to it and those it picks up, and records every attempt."""

    def __init__(
        self,
        store: DestinationStore,
        channels: Channels,
        policy: RetryPolicy,
        clock: Clock,
        *,
        sender: str,
        tuning: DeliveryTuning,
        destinations: Destinations | None = None,
    ) -> None:
        destinations = destinations or Destinations(store, null=channels.null)
        self._store = store
        self._sender = sender
        self._clock = clock
        self.recorder = Recorder(
            store,
            batch=tuning.record_batch,
            interval=tuning.record_seconds,
        )
        self.isolation = Isolation(concurrency=tuning.concurrency)
        ENGINE.watch(self.isolation)
        deliverer = Deliverer(
            channels,
            destinations,
            policy,
            clock,
            sender=sender,
            isolation=self.isolation,
            send_timeout=tuning.send_timeout,
            hold=tuning.lease,
        )
        self.pool = DeliveryPool(
            deliverer,
            self.recorder,
            clock,
            concurrency=tuning.concurrency,
            max_queued=tuning.max_queued,
            lease=tuning.lease,
            on_retry=self._retry_at,
        )
        self.recorder.on_written = self.pool.wake
        self.pickup = Pickup(
            store,
            self.pool,
            clock,
            sender=sender,
            lease=tuning.lease,
            interval=tuning.pickup_seconds,
            batch=tuning.pickup_batch,
        )
        self.pool.on_room = self.pickup.wake
        self._tasks: list[asyncio.Task[None]] = []

    def _retry_at(self, when: datetime) -> None:
        self.pickup.retry_at(when)

    def start(self) -> None:
        self.pool.start()
        self._tasks = [
            asyncio.create_task(self.recorder.run(), name="record-attempts"),
            asyncio.create_task(self.pickup.run(), name="pickup"),
        ]

    async def room(self, count: int, rank: int) -> None:
        """Wait until delivery has room for `count` more firings of `Priority.rank`: claim
        only then."""
        await self.pool.room(count, rank)

    async def submit(self, firings: Iterable[Firing]) -> None:
        """Send these firings (claimed by this worker, `sending`, once `room` allowed)."""
        await self.pool.submit(firings)

    async def stop(self, grace: float) -> None:
        """Stop picking up, finish what is queued for up to `grace` seconds, write every
        result, and hand the firings left unsent back to the queue (`queued`), so any worker
        takes them at once rather than when their hold runs out."""
        recorder, pickup = self._tasks or (None, None)
        await _cancel(pickup)
        left = await self.pool.drain(grace)
        await _cancel(recorder)
        await self.recorder.close(grace)
        self._tasks = []
        if left:
            await self._release(left)

    async def _release(self, firings: list[Firing]) -> None:
        try:
            released = await self._store.release_deliveries(
                firings, sender=self._sender, now=self._clock.now()
            )
        except StoreError as error:
            logger.warning(
                "%d firings left unsent at stop; handing them back failed (others take them "
                "over when their hold runs out): %s",
                len(firings),
                error,
            )
            return
        logger.info("%d firings left unsent at stop: handed back to the queue", released)


async def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
