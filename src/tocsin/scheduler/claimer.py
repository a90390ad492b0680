"""Claims due rings in batches — one `store.claim` transaction per batch — and hands the
firings straight to delivery."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import timedelta

from tocsin.clock import Clock
from tocsin.delivery.isolation import Slots
from tocsin.domain import Fence, Firing, FiringState
from tocsin.errors import StoreError
from tocsin.metrics.instruments import ENGINE, EXPIRED_AT_CLAIM
from tocsin.scheduler.planning import Plan, plan
from tocsin.scheduler.timeline import Entry, Timeline
from tocsin.store.ports import SchedulerStore

logger = logging.getLogger(__name__)

Handoff = Callable[[Iterable[Firing]], Awaitable[None]]
Room = Callable[[int, int], Awaitable[None]]  # (rings, `Priority.rank`)
Fencing = Callable[[], Fence | None]

DRAIN_POLL_SECONDS = 0.05


class Claimer:
    """Runs up to `concurrency` claim transactions of up to `batch` rings at once.

    A claim that fails on the database changes nothing durable: its entries go back to the
    timeline (`Timeline.give_back`) after `retry`, and are claimed again. A claim whose row
    moved on (edited, snoozed, cancelled, claimed by another worker) simply inserts no
    firing; so does one
    whose part's lease another worker took meanwhile (`fence`: the leases held now, whose
    epochs every claim carries).
    """

    def __init__(
        self,
        store: SchedulerStore,
        timeline: Timeline,
        clock: Clock,
        handoff: Handoff,
        *,
        room: Room | None = None,
        fence: Fencing | None = None,
        sender: str,
        lease: timedelta,
        batch: int,
        concurrency: int,
        retry: timedelta = timedelta(seconds=1),
    ) -> None:
        self._store = store
        self._timeline = timeline
        self._clock = clock
        self._handoff = handoff
        self._room = room
        self._fence = fence or (lambda: None)
        self._sender = sender
        self._lease = lease
        self._batch = batch
        self._retry = retry
        # Urgent and bulk claims each have `concurrency` transactions of their own: bulk
        # claims waiting for delivery's room never hold the slot an urgent one needs.
        self._lanes = (Slots(concurrency), Slots(concurrency))
        self._tasks: set[asyncio.Task[None]] = set()
        self._applying: set[asyncio.Task[None] | None] = set()  # in their claim statement now
        self.claimed = 0
        self.expired = 0
        self.failed = 0  # rings whose row could not be planned, recorded failed
        self.lost = 0  # claims whose row had moved on

    def claim_soon(self, entries: Sequence[Entry]) -> None:
        """Start claiming these due entries, `batch` at a time, urgent and bulk ones apart:
        an urgent ring coming due behind a bulk backlog waits neither for the bulk claims'
        slots nor for delivery's room that bulk rings take (`DeliveryPool.room`)."""
        bulk = [entry for entry in entries if entry.priority]
        if bulk:
            entries = [entry for entry in entries if not entry.priority]
        for rank, some in enumerate((entries, bulk)):
            for start in range(0, len(some), self._batch):
                claim = self._claim(some[start : start + self._batch], rank)
                task = asyncio.create_task(claim)
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait for every claim being applied to finish and be handed to delivery. A claim
        still waiting for a slot or for delivery's room has claimed nothing: it is dropped
        (its rows stay pending for the next holder of the part). Delivery may never make
        room while the database is away, and a stop must not wait for it."""
        while self._tasks:
            for task in self._tasks:
                if task not in self._applying:
                    task.cancel()
            # Again shortly: one whose statement ends now waits for room to hand over.
            await asyncio.wait(set(self._tasks), timeout=DRAIN_POLL_SECONDS)

    async def _claim(self, entries: Sequence[Entry], rank: int) -> None:
        slots = self._lanes[rank]
        await slots.acquire()
        try:
            if self._room is not None:
                # Claim only what delivery has room for: a claimed firing is held under a
                # lease, and must not wait in memory until it runs out.
                await self._room(len(entries), rank)
            task = asyncio.current_task()
            self._applying.add(task)
            try:
                firings = await self._apply(entries)
            finally:
                self._applying.discard(task)
        finally:
            slots.release()
        if firings:
            # Handed over at once (delivery lines them up before it waits for room): a
            # stop that cancels the wait leaves them with delivery, which drains them.
            await self._handoff(firings)

    async def _apply(self, entries: Sequence[Entry]) -> list[Firing]:
        now = self._clock.now()
        decided = Plan([], {})
        started = time.perf_counter()
        try:
            decided = plan(entries, now)
            firings = await self._store.claim(
                decided.claims,
                sender=self._sender,
                now=now,
                lease=self._lease,
                fence=self._fence(),
            )
        except StoreError as error:
            logger.warning("claiming %d rings failed (again shortly): %s", len(entries), error)
            self._give_back(entries)
            return []
        except Exception:
            logger.exception("claiming %d rings failed (again shortly)", len(entries))
            self._give_back(entries)
            return []
        self._timeline.release(entries)
        ENGINE.claim_seconds.observe(time.perf_counter() - started)
        ENGINE.claim_batch.observe(len(entries))
        self._count(firings, len(entries))
        if decided.follow_ups:
            landed = {firing.id for firing in firings}
            self._timeline.add(e for k, e in decided.follow_ups.items() if k in landed)
        return firings

    def _give_back(self, entries: Sequence[Entry]) -> None:
        """The entries of a failed claim, back to the timeline after `retry` (a database
        that is away is not asked again at every tick)."""
        loop = asyncio.get_running_loop()
        loop.call_later(self._retry.total_seconds(), self._timeline.give_back, entries)

    def _count(self, firings: list[Firing], tried: int) -> None:
        expired = failed = 0
        for firing in firings:
            # Besides the feed's rings, which a claim queues for a page, few: only after an
            # outage or a bug.
            if firing.state not in (FiringState.SENDING, FiringState.QUEUED):
                expired += firing.state is FiringState.EXPIRED
                failed += firing.state is FiringState.FAILED
                ENGINE.finished(firing.channel, firing.state, None)
        claimed, lost = len(firings) - expired - failed, tried - len(firings)
        self.claimed += claimed
        self.expired += expired
        self.failed += failed
        self.lost += lost
        for result, count in (("claimed", claimed), ("expired", expired), ("failed", failed)):
            ENGINE.claims.add((result,), count)
        ENGINE.claims.add(("lost",), lost)
        if expired:
            ENGINE.expired(EXPIRED_AT_CLAIM, expired)
            logger.info("%d rings were too stale to send: recorded expired", expired)
