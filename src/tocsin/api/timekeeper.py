"""Keeps an API process's clock in step with the database's.

The API decides by time too: that an `at` is not in the past, which rings the in-app feed
still shows, when a ring it delivered counts as `sent` before its deadline. Workers judge
all of that by the database's clock (`DatabaseClock`, corrected at every lease renewal),
so an API host whose clock is off would disagree with them: a host 300 s behind accepted a
reminder already due, and a slow one could show and record as sent a ring past its deadline.
So the API rings by the same clock: it reads the database's every `every` seconds (one
`SELECT clock_timestamp()`), starting before it serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from tocsin.clock import DatabaseClock
from tocsin.errors import StoreError
from tocsin.store.ports import SchedulerStore

logger = logging.getLogger(__name__)

READ_EVERY = 30.0  # seconds between readings of the database's clock


class Timekeeper:
    """A service of `serve_api`: corrects `clock` by the database's, now and every `every`
    seconds. A failed reading keeps the last correction (the store's own calls fail then)."""

    def __init__(
        self, store: SchedulerStore, clock: DatabaseClock, *, every: float = READ_EVERY
    ) -> None:
        self._store = store
        self._clock = clock
        self._every = every
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        for _ in range(3):  # the shortest round trip of a few is the truest reading
            await self.read()
        self._task = asyncio.create_task(self._run(), name="tocsin-timekeeper")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def read(self) -> None:
        """One reading of the database's clock."""
        sent = self._clock.now()
        try:
            database = await self._store.database_time()
        except StoreError as error:
            logger.warning("reading the database's clock failed: %s", error)
            return
        self._clock.reading(sent, database, self._clock.now())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._every)
            await self.read()
