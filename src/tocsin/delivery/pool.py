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
from tocsin.delivery.pace import Pace
from tocsin.delivery.recorder import Recorder
from tocsin.domain import PRIORITY_RANKS, Firing, FiringState
from tocsin.metrics import instruments
from tocsin.metrics.instruments import ENGINE

logger = logging.getLogger(__name__)

RetryListener = Callable[[datetime], None]
RoomListener = Callable[[], None]

# A sender whose channel answers without waiting (null, log) would otherwise keep the event
# loop to itself for a whole burst; it lets the others run after this many firings.
YIELD_EVERY = 200


class DeliveryPool:
    """Sends firings this worker holds (`sending`), `concurrency` at a time.

    The line gives out the firing closest to its deadline first (`Line`): under a backlog,
    what goes stale soonest goes first. A sender takes the next firing without a hand-off
    through a future, and only idle senders are woken.

    A firing must be sent while its hold lasts: its send starts at the latest when the
    hold has `Deliverer.reserve` left, and a firing may wait in the line half of the time
    before that (`may_wait`). So the pool takes (`free_for`, `room`) only what its senders
    start within that wait at the pace they keep (`Pace`), as well as no more than
    `max_queued` in all. One whose turn comes too late anyway is handed back untried
    (`Deliverer.deliver`), or, when its hold ran out, left to whoever takes it over.
    """

    def __init__(
        self,
        deliverer: Deliverer,
        recorder: Recorder,
        clock: Clock,
        *,
        concurrency: int,
        max_queued: int,
        lease: timedelta,
        on_retry: RetryListener | None = None,
    ) -> None:
        self._deliverer = deliverer
        self._recorder = recorder
        self._clock = clock
        self._concurrency = concurrency
        self._max = max_queued
        reserve = deliverer.reserve
        self.may_wait = max(lease - reserve, timedelta(0)) / 2
        self._wait_seconds = self.may_wait.total_seconds()
        # The line's oldest firing waited its fill once its hold has this little left.
        self._waited = reserve + self.may_wait
        self._pace = Pace(concurrency)
        self._line = Line()
        self._ready = asyncio.Event()  # set while the line has firings
        self._spare = asyncio.Event()  # set when room may have come: `room` looks again
        self._spare.set()
        self._idle = asyncio.Event()  # set when nothing is lined up or being sent
        self._on_retry = on_retry
        self.on_room: RoomListener | None = None  # told when room came that a taker wanted
        self._room_wanted = False
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
        """How many more firings the pool takes without waiting (`free_for`)."""
        return self.free_for(1)

    def free_for(self, rank: int) -> int:
        """How many more firings of this `Priority.rank` the pool takes: as many as its
        senders start within `may_wait` — one for each idle sender, and what the busy ones
        get through in that time at their pace — less those lined up ahead of them, and
        within `max_queued`. Urgent firings go before every bulk one lined up: only urgent
        ones are ahead of them, and bulk ones leave them room (a bulk firing whose turn
        then comes too late is handed back).

        No bulk firing is taken while the longest-held firing lined up has waited more than
        `may_wait` already: the senders slowed down since it was taken, and the pace will
        show it only as their slow rounds end."""
        line = self._line
        ahead = len(line) if rank else len(line) - line.bulk
        if rank and ahead:
            oldest = line.oldest_hold()
            if oldest is not None and oldest - self._clock.now() < self._waited:
                return 0
        held = self.held if rank else self.held - line.bulk
        idle = self._concurrency - len(self._sending)
        in_time = idle + self._in_time - ahead
        return max(0, min(self._max - held, in_time))

    @property
    def _in_time(self) -> int:
        """How many firings the busy senders take off the line within `may_wait`."""
        return self._pace.within(self._wait_seconds)

    def want_room(self) -> None:
        """A taker found no room: `on_room` is called once there is enough to take a share
        (`refill`)."""
        self._room_wanted = True

    @property
    def refill(self) -> int:
        """The room worth a take: half of what the senders start within `may_wait`, so
        that a taker neither waits for the line to run dry nor takes one firing at a time."""
        return max(1, min(self._in_time, self._max) // 2)

    @property
    def in_flight(self) -> int:
        return len(self._line) + len(self._sending)

    def wake(self) -> None:
        """Room may have come free (a batch of results was written)."""
        self._spare.set()
        self._room_came()

    def _room_came(self) -> None:
        if self._room_wanted and self.on_room is not None and self.free >= self.refill:
            self._room_wanted = False
            self.on_room()

    async def room(self, count: int, rank: int) -> None:
        """Wait until the pool has room for `count` more firings of `Priority.rank` (or
        holds none). Urgent ones wait only for room for what the senders start within
        `may_wait` when that is less: they go ahead of every bulk firing, and a claim of
        them must not wait for a bulk backlog to drain."""
        wanted = min(count, self._max)
        if not rank:
            wanted = min(wanted, max(1, self._in_time))
        while self.held and self.free_for(rank) < wanted:
            self._spare.clear()
            await self._spare.wait()

    async def submit(self, firings: Iterable[Firing]) -> None:
        """Line these firings up to be sent: once the senders' pace is known, as many as
        they start within `may_wait`. The rest go straight back to the queue, untried, for
        pickup to take when the senders can send them, rather than waiting out their hold
        in the line: a claim takes a whole batch once there is room (`room`), and claims
        made at once each saw the same room."""
        batch = [f for f in firings if f.state is FiringState.SENDING]
        if self._pace.measured:
            batch = self._in_time_of(batch)
        line = self._line
        line.extend(batch)
        if line:
            self._ready.set()

    def _in_time_of(self, batch: list[Firing]) -> list[Firing]:
        """Those of `batch` the senders start within `may_wait`, urgent first, then closest
        deadline first; the others handed back."""
        line, idle = self._line, self._concurrency - len(self._sending)
        urgent = idle + self._in_time - (len(line) - line.bulk)
        bulk = idle + self._in_time - len(line)
        if len(batch) <= min(urgent, bulk):
            return batch  # the common case: no sort
        lined: list[Firing] = []
        back: list[Firing] = []
        for firing in sorted(batch, key=lambda f: (PRIORITY_RANKS[f.priority], f.deadline)):
            if PRIORITY_RANKS[firing.priority]:
                fits, bulk = bulk > 0, bulk - 1
            else:  # an urgent one goes ahead of every bulk one
                fits, urgent, bulk = urgent > 0, urgent - 1, bulk - 1
            (lined if fits else back).append(firing)
        self._hand_back(back)
        return lined

    def _hand_back(self, firings: list[Firing]) -> None:
        for firing in firings:
            ENGINE.retried(firing.channel, instruments.RETRY_NO_TIME_IN_HOLD)
            result = self._deliverer.hand_back(firing)
            if result is not None:
                self._recorder.add(result)
        if firings and self._on_retry is not None:
            self._on_retry(self._clock.now())  # due at once: pickup takes them with room

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
            self._room_came()
            done += 1
            if done % YIELD_EVERY == 0:
                await asyncio.sleep(0)

    async def _deliver(self, firing: Firing) -> None:
        now = self._clock.now()
        result = await self._deliverer.deliver(firing, now)
        if result is None:
            logger.warning("hold ran out before sending", extra={"firing_id": firing.id})
            return
        if result.attempt is not None:
            self._pace.sent((self._clock.now() - now).total_seconds())
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
