"""The delivery pool: a bounded line of firings and a fixed number of sender tasks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from tocsin.clock import Clock
from tocsin.delivery.attempt import Deliverer
from tocsin.delivery.line import Line
from tocsin.delivery.recorder import Recorder
from tocsin.domain import Firing, FiringState
from tocsin.metrics.instruments import ENGINE

logger = logging.getLogger(__name__)

RetryListener = Callable[[datetime], None]

# A sender whose channel answers without waiting (null, log) would otherwise keep the event
# loop to itself for a whole burst; it lets the others run after this many firings.
YIELD_EVERY = 200


class DeliveryPool:
    """Sends firings this worker holds (`sending`), `concurrency` at a time.

    The line gives out the firing closest to its deadline first (`Line`): under a backlog,
    what goes stale soonest goes first. A sender takes the next firing without a hand-off
    through a future, and only idle senders are woken. `room` lets the claimer wait
    *before* claiming until the line has space, so claiming slows to what delivery carries
    and a claimed firing does not wait in memory past its hold. One whose hold ran out
    before its turn anyway is left alone — another sender (or this one's pickup) takes it
    over.
    """

    def __init__(
        self,
        deliverer: Deliverer,
        recorder: Recorder,
        clock: Clock,
        *,
        concurrency: int,
        max_queued: int,
        lease: timedelta | None = None,
        on_retry: RetryListener | None = None,
    ) -> None:
        self._deliverer = deliverer
        self._recorder = recorder
        self._clock = clock
        self._concurrency = concurrency
        self._max = max_queued
        self._max_wait = None if lease is None else lease / 2
        self._line = Line()
        self._ready = asyncio.Event()  # set while the line has firings
        self._spare = asyncio.Event()  # set while the line is below `max_queued`
        self._spare.set()
        self._idle = asyncio.Event()  # set when nothing is lined up or being sent
        self._on_retry = on_retry
        self._tasks: list[asyncio.Task[None]] = []
        self._sending: dict[str, Firing] = {}  # being sent now, by id
        self.delivered = 0

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._work(), name=f"deliver-{n}") for n in range(self._concurrency)
        ]

    @property
    def held(self) -> int:
        """Firings this worker holds in memory: lined up, being sent, or sent with their
        result not written yet (each keeps its firing `sending` under this worker's hold)."""
        return len(self._line) + len(self._sending) + self._recorder.pending

    @property
    def free(self) -> int:
        """How many more firings the pool takes without waiting: none while the longest-held
        firing in the line has less than half its hold left (the line is longer than the
        channel sends in that time — with a slow channel, `max_queued` alone would let held
        firings time out in line, be taken over by pickup, time out again…)."""
        return self.free_for(1)

    def free_for(self, rank: int) -> int:
        """`free`, for firings of this `Priority.rank`. Urgent ones go before every bulk one
        lined up, so those bulk ones leave them room, and their holds say nothing of how
        long an urgent one would wait (a bulk firing whose hold runs out in line is left to
        pickup, which takes it again)."""
        line = self._line
        if self._max_wait is not None and (rank or len(line) > line.bulk):
            oldest = line.oldest_hold()
            if oldest is not None and oldest - self._clock.now() < self._max_wait:
                return 0
        held = self.held if rank else self.held - line.bulk
        return max(0, self._max - held)

    @property
    def in_flight(self) -> int:
        return len(self._line) + len(self._sending)

    def wake(self) -> None:
        """Room may have come free (a batch of results was written)."""
        self._spare.set()

    async def room(self, count: int, rank: int) -> None:
        """Wait until the pool has room for `count` more firings of `Priority.rank` (or
        holds none)."""
        while self.held and self.free_for(rank) < min(count, self._max):
            self._spare.clear()
            await self._spare.wait()

    async def submit(self, firings: Iterable[Firing]) -> None:
        """Line these firings up to be sent; waits while the line is full."""
        line = self._line
        line.extend(f for f in firings if f.state is FiringState.SENDING)
        if line:
            self._ready.set()
        await self.room(1, rank=1)  # as full for every kind: the line is for all of them

    async def drain(self, grace: float) -> list[Firing]:
        """Finish what is lined up and being sent, for up to `grace` seconds; then stop.
        Return the firings left unsent (to hand back to the queue)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._finished(), grace)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        left = [*self._sending.values(), *self._line]
        self._sending.clear()
        self._line.clear()
        return left

    async def _finished(self) -> None:
        while self.in_flight:
            self._idle.clear()
            await self._idle.wait()

    async def _work(self) -> None:
        line = self._line
        done = 0
        while True:
            while not line:
                self._ready.clear()
                await self._ready.wait()
            firing = line.pop()
            self._sending[firing.id] = firing
            try:
                await self._deliver(firing)
            except Exception:
                # Never expected (a channel classifies its own failures); the firing's hold
                # runs out and another sender takes it over.
                logger.exception("delivering failed", extra={"firing_id": firing.id})
            self._sending.pop(firing.id, None)  # not when cancelled: it goes back unsent
            if not self.in_flight:
                self._idle.set()
            if self.free_for(0):  # room for urgent firings at least (`room` checks again)
                self._spare.set()
            done += 1
            if done % YIELD_EVERY == 0:
                await asyncio.sleep(0)

    async def _deliver(self, firing: Firing) -> None:
        now = self._clock.now()
        if firing.lease_until is not None and firing.lease_until <= now:
            logger.warning("lease ran out before sending", extra={"firing_id": firing.id})
            return
        result = await self._deliverer.deliver(firing, now)
        self._recorder.add(result)
        self.delivered += 1
        state = result.state
        late = None
        if state is FiringState.SENT:
            late = (self._clock.now() - firing.due_at).total_seconds()
        ENGINE.finished(firing.channel, state, late)
        retry_at = result.next_attempt_at
        if result.state is FiringState.QUEUED and retry_at and self._on_retry is not None:
            self._on_retry(retry_at)
