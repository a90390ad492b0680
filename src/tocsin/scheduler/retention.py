"""Retention: old rings, finished reminders and idempotency keys deleted in small batches.

Every worker runs a `Retention`, but only the one holding the `retention` chore's lease
deletes (judged by the database's clock, like the scheduler parts' leases): two workers
deleting at once would only fight over the same oldest rows. A pass deletes batches, each a
few short statements that stop at the batch size (`Store.prune`), with a pause between them
so that rings and API writes never wait long behind it, until every kind of row is caught up;
then it waits `idle` (half the chore's lease) and passes again. At 200 million rings a day
the oldest day's firings come due for deletion at ~2,300 a second, so a pass that keeps up
deletes ~70,000 firings every half minute.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from tocsin.clock import Clock
from tocsin.errors import StoreError, level_for
from tocsin.store.ports import UpkeepStore
from tocsin.store.ports.upkeep import Pruned

logger = logging.getLogger(__name__)

CHORE = "retention"
KEEP_IDEMPOTENCY_KEYS = timedelta(hours=24)
"""An idempotency key protects a retried request; a client retries within minutes, not days."""
TIDY_AFTER = timedelta(minutes=10)
"""How long the occurrences a claim decided stay in `due` after their minute: their pages are
read by the minute's claims and loads until then, and the tidying deletes a page's decided
rows together."""

NOTHING = Pruned(firings=0, attempts=0, reminders=0, idempotency_keys=0)


@dataclass(frozen=True, kw_only=True)
class RetentionTuning:
    """How retention paces itself; the defaults are for production."""

    batch: int = 1000  # rows of each kind a batch deletes at most (a few ms of locks)
    pause: timedelta = timedelta(milliseconds=20)  # between batches
    # The chore's lease (`TOCSIN_RETENTION_LEASE_SECONDS`). Every worker passes every half of
    # it: the holder renews before its lease runs out, so no other worker's look ever lands
    # in a gap (a pass every whole lease would let the lease lapse just before each renewal).
    lease: timedelta = timedelta(minutes=1)

    @property
    def idle(self) -> timedelta:
        """Between passes, once caught up."""
        return self.lease / 2


def added(one: Pruned, other: Pruned) -> Pruned:
    return Pruned(
        firings=one.firings + other.firings,
        attempts=one.attempts + other.attempts,
        reminders=one.reminders + other.reminders,
        idempotency_keys=one.idempotency_keys + other.idempotency_keys,
        rings=one.rings + other.rings,
        occurrences=one.occurrences + other.occurrences,
        assignees=one.assignees + other.assignees,
    )


class Retention:
    """Deletes what is older than `keep` (rings and finished reminders) and idempotency keys
    older than a day, while this worker holds the retention chore."""

    def __init__(
        self,
        store: UpkeepStore,
        clock: Clock,
        *,
        worker: str,
        keep: timedelta,
        tuning: RetentionTuning | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._worker = worker
        self._keep = keep
        self._tuning = tuning or RetentionTuning()
        self._held_until: datetime | None = None

    async def run(self) -> None:
        """Pass after pass while held; forever (cancel it to stop)."""
        while True:
            try:
                if await self._hold():
                    done = await self.prune_all()
                    if done.rows:
                        logger.info("retention deleted old rows", extra=_fields(done))
            except StoreError as error:
                logger.log(level_for(error), "retention failed (trying again later): %s", error)
                self._held_until = None
            await self._clock.sleep_until(self._clock.now() + self._tuning.idle)

    async def prune_all(self) -> Pruned:
        """Delete batches until every kind is caught up, or the lease is lost; the total."""
        total = NOTHING
        batch = self._tuning.batch
        while await self._hold():
            now = self._clock.now()
            done = await self._store.prune(
                firings_before=now - self._keep,
                reminders_before=now - self._keep,
                keys_before=now - KEEP_IDEMPOTENCY_KEYS,
                limit=batch,
                due_before=now - TIDY_AFTER,
            )
            total = added(total, done)
            kinds = (done.firings, done.reminders, done.idempotency_keys, done.rings)
            if max(*kinds, done.occurrences, done.assignees) < batch:
                return total
            await asyncio.sleep(self._tuning.pause.total_seconds())
        return total

    async def release(self) -> None:
        """Let the chore go (at stop), so that another worker takes it at once."""
        self._held_until = None
        try:
            await self._store.release_chore(CHORE, worker=self._worker)
        except StoreError as error:
            logger.warning("letting retention go failed (its lease runs out): %s", error)

    async def _hold(self) -> bool:
        """Whether this worker holds the chore, renewing the lease once half of it passed."""
        now = self._clock.now()
        if self._held_until is not None and now < self._held_until - self._tuning.lease / 2:
            return True
        lease = self._tuning.lease
        held = await self._store.hold_chore(CHORE, worker=self._worker, ttl=lease)
        self._held_until = now + lease if held else None
        return held


def _fields(done: Pruned) -> dict[str, int]:
    return {
        "firings": done.firings,
        "attempts": done.attempts,
        "reminders": done.reminders,
        "idempotency_keys": done.idempotency_keys,
        "rings": done.rings,
        "occurrences": done.occurrences,
        "assignees": done.assignees,
    }
