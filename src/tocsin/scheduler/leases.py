"""Part leases: renewed every lease/2, at once when the workers change, and right when another
worker's lease runs out; the parts held change as workers come and go.

Leases are judged by the database's clock (see `Store.renew_leases`), and each part's lease
carries an epoch that claims are fenced by, so a worker that was paused or cut off past its
lease changes nothing once another worker took the part over.

After a failover the clock that judges them is the new primary's. The lease rows came over
with the data, so a new primary whose clock is ahead sees leases run out early (other workers
may take parts over: a new epoch, and the old holder's claims change nothing), and one whose
clock is behind sees them last longer (a dead worker's parts wait longer to be taken). No
clock step lets two workers claim one part: a claim is fenced by holder and epoch, never by
time. docs/operations.md#high-availability-with-pg_auto_failover has the measurements.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from tocsin.clock import Clock
from tocsin.delivery.waiting import sleep_until
from tocsin.domain import Fence, HeldParts
from tocsin.errors import DatabaseReadOnly, StoreError, level_for
from tocsin.metrics.instruments import ENGINE
from tocsin.store.ports import SchedulerStore

logger = logging.getLogger(__name__)

Holdings = Callable[[HeldParts], None]
TimeReading = Callable[[datetime, datetime, datetime], None]
"""Called with (sent, database's clock, received) after each renewal: the worker's clock
before and after, around the database's reading."""

NOTHING = HeldParts(parts=frozenset(), watermarks={}, live_workers=0)

# Renew this long after another worker's lease runs out, so that the database agrees it has.
EXPIRY_MARGIN = timedelta(milliseconds=50)


class LeaseKeeper:
    """Renews this worker's leases and reports the parts it holds after each renewal.

    When renewals fail for a whole lease time (the database is away), the leases may have
    gone to others: it reports holding nothing until a renewal succeeds again.
    """

    def __init__(
        self,
        store: SchedulerStore,
        clock: Clock,
        on_change: Holdings,
        *,
        worker: str,
        parts: int,
        ttl: timedelta,
        on_time: TimeReading | None = None,
        breakers: Callable[[], list[str]] | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._on_change = on_change
        self._on_time = on_time
        self._breakers = breakers  # published at each renewal, for the status board
        self._worker = worker
        self._parts = parts
        self._ttl = ttl
        self._valid_until: datetime | None = None
        self._read_only = False  # the last renewal was refused read-only
        self._changed = asyncio.Event()  # workers joined or let parts go: renew at once
        self.held: HeldParts = NOTHING
        self.takeovers = 0  # parts taken over from a worker whose lease ran out

    def fence(self) -> Fence:
        """The fence of the leases held now, for claims."""
        return self.held.fence(self._parts)

    def leases_changed(self) -> None:
        """Another worker joined or let parts go: renew now rather than at the next period."""
        self._changed.set()

    async def renew(self) -> bool:
        """Renew once, and report what is held; False when the store failed."""
        sent = self._clock.now()
        try:
            held = await self._store.renew_leases(
                self._worker,
                parts=self._parts,
                ttl=self._ttl,
                breakers=self._breakers() if self._breakers is not None else (),
            )
        except DatabaseReadOnly as error:
            # Connected to a standby (a switchover or failover moved the primary): nothing it
            # holds can be renewed or claimed there, so it stops at once rather than after a
            # lease time, and says so, once until it is writable again.
            if not self._read_only:
                logger.warning(
                    "the database is read-only, not the primary: claiming nothing (%s)", error
                )
            self._read_only = True
            self._valid_until = None
            self._report(NOTHING)
            return False
        except StoreError as error:
            logger.log(level_for(error), "renewing leases failed: %s", error)
            if self._valid_until is not None and self._clock.now() >= self._valid_until:
                logger.warning("leases ran out: holding no part until renewed")
                self._valid_until = None
                self._report(NOTHING)
            return False
        self._read_only = False
        received = self._clock.now()
        if self._on_time is not None and held.as_of is not None:
            self._on_time(sent, held.as_of, received)
        self._valid_until = sent + self._ttl
        self._report(held)
        return True

    async def run(self) -> None:
        """Renew every lease/2 — sooner after a failure, at once when the workers change, and
        just after the first lease another worker holds runs out."""
        renewed = True
        while True:
            wait = self._ttl / 2 if renewed else min(self._ttl / 4, timedelta(seconds=1))
            if renewed and self.held.next_expiry is not None:
                expiry = timedelta(seconds=self.held.next_expiry) + EXPIRY_MARGIN
                wait = min(wait, expiry)
            await sleep_until(self._clock, self._clock.now() + wait, self._changed)
            self._changed.clear()
            renewed = await self.renew()

    def _report(self, held: HeldParts) -> None:
        if held.parts != self.held.parts:
            logger.info(
                "holding %d of %d parts (%d live workers)",
                len(held.parts),
                self._parts,
                held.live_workers,
                extra={"parts": sorted(held.parts), "live_workers": held.live_workers},
            )
        self.held = held
        self.takeovers += held.taken_over
        ENGINE.takeovers.add((), held.taken_over)
        ENGINE.holding(self._worker, len(held.parts))
        self._on_change(held)
