"""Part leases: renewed every lease/2; the parts held change as workers come and go."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from tocsin.clock import Clock
from tocsin.domain import HeldParts
from tocsin.errors import StoreError
from tocsin.store.base import Store

logger = logging.getLogger(__name__)

Holdings = Callable[[HeldParts], None]

NOTHING = HeldParts(parts=frozenset(), watermarks={}, live_workers=0)


class LeaseKeeper:
    """Renews this worker's leases and reports the parts it holds after each renewal.

    When renewals fail for a whole lease time (the database is away), the leases may have
    gone to others: it reports holding nothing until a renewal succeeds again.
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        on_change: Holdings,
        *,
        worker: str,
        parts: int,
        ttl: timedelta,
    ) -> None:
        self._store = store
        self._clock = clock
        self._on_change = on_change
        self._worker = worker
        self._parts = parts
        self._ttl = ttl
        self._valid_until: datetime | None = None
        self.held: HeldParts = NOTHING

    async def renew(self) -> bool:
        """Renew once, and report what is held; False when the store failed."""
        now = self._clock.now()
        try:
            held = await self._store.renew_leases(
                self._worker, parts=self._parts, ttl=self._ttl, now=now
            )
        except StoreError as error:
            logger.warning("renewing leases failed: %s", error)
            if self._valid_until is not None and self._clock.now() >= self._valid_until:
                logger.warning("leases ran out: holding no part until renewed")
                self._valid_until = None
                self._report(NOTHING)
            return False
        self._valid_until = now + self._ttl
        self._report(held)
        return True

    async def run(self) -> None:
        """Renew every lease/2 — sooner again after a failure."""
        renewed = True
        while True:
            wait = self._ttl / 2 if renewed else min(self._ttl / 4, timedelta(seconds=1))
            await self._clock.sleep_until(self._clock.now() + wait)
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
        self._on_change(held)
