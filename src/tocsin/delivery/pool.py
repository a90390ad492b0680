"""The delivery pool: a bounded queue of firings and a fixed number of sender tasks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from datetime import datetime

from tocsin.clock import Clock
from tocsin.delivery.attempt import Deliverer
from tocsin.delivery.recorder import Recorder
from tocsin.domain import Firing, FiringState

logger = logging.getLogger(__name__)

RetryListener = Callable[[datetime], None]


class DeliveryPool:
    """Sends firings this worker holds (`sending`), `concurrency` at a time.

    `submit` waits while the queue is full, which slows claiming down to what delivery can
    carry: a firing never waits in memory longer than its lease. One whose lease ran out
    before its turn is left alone — another sender (or this one's pickup) takes it over.
    """

    def __init__(
        self,
        deliverer: Deliverer,
        recorder: Recorder,
        clock: Clock,
        *,
        concurrency: int,
        max_queued: int,
        on_retry: RetryListener | None = None,
    ) -> None:
        self._deliverer = deliverer
        self._recorder = recorder
        self._clock = clock
        self._concurrency = concurrency
        self._queue: asyncio.Queue[Firing] = asyncio.Queue(maxsize=max_queued)
        self._on_retry = on_retry
        self._tasks: list[asyncio.Task[None]] = []
        self._sending: set[str] = set()  # ids being sent now
        self.delivered = 0

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._work(), name=f"deliver-{n}") for n in range(self._concurrency)
        ]

    @property
    def free(self) -> int:
        """How many more firings the queue takes without waiting."""
        return self._queue.maxsize - self._queue.qsize()

    @property
    def in_flight(self) -> int:
        return self._queue.qsize() + len(self._sending)

    async def submit(self, firings: Iterable[Firing]) -> None:
        for firing in firings:
            if firing.state is FiringState.SENDING:
                await self._queue.put(firing)

    async def drain(self, grace: float) -> list[str]:
        """Finish what is queued and being sent, for up to `grace` seconds; then stop.
        Return the ids of the firings left unsent (to hand back to the queue)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), grace)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        left = list(self._sending)
        while not self._queue.empty():
            left.append(self._queue.get_nowait().id)
        self._sending.clear()
        return left

    async def _work(self) -> None:
        while True:
            firing = await self._queue.get()
            self._sending.add(firing.id)
            try:
                await self._deliver(firing)
                self._sending.discard(firing.id)  # not when cancelled: it goes back unsent
            finally:
                self._queue.task_done()

    async def _deliver(self, firing: Firing) -> None:
        if firing.lease_until is not None and firing.lease_until <= self._clock.now():
            logger.warning("lease ran out before sending", extra={"firing_id": firing.id})
            return
        result = await self._deliverer.deliver(firing)
        self._recorder.add(result)
        self.delivered += 1
        retry_at = result.next_attempt_at
        if result.state is FiringState.QUEUED and retry_at and self._on_retry is not None:
            self._on_retry(retry_at)
