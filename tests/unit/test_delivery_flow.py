"""Delivery takes only what its senders send within a firing's hold: pickup, the pool and its
line, the deliverer and the recorder, in process, on a fake clock, against a queue in memory
and a sender whose sends take a set time on that clock.

A firing taken is held for 4 s, and a send must start with a whole send (2 s) and a second
to write its result left in the hold: a firing may wait 1 s before its send starts, and the
pool lines up what its senders start in half of that. Before this, pickup took up to 1,000
at once whatever the senders' pace, each firing whose send could not start in time was
recorded as an attempt ("not tried") and queued again at once, and pickup took it back at
once: a loop that recorded thousands of attempts while a handful went out.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from tests.integration.channels.firing_factory import DUE, firing
from tocsin.channels import Channels, DeliveryResult, Destination, DestinationSender
from tocsin.clock import FakeClock
from tocsin.delivery import Delivery, DeliveryTuning, RetryPolicy
from tocsin.delivery.attempt import Deliverer
from tocsin.delivery.destinations import Destinations
from tocsin.delivery.isolation import Isolation
from tocsin.domain import (
    PRIORITY_RANKS,
    Attempt,
    AttemptResult,
    Channel,
    Firing,
    FiringState,
    Outcome,
    Priority,
)
from tocsin.store import Store

HOLD = timedelta(seconds=4)
SEND_TIMEOUT = 2.0
SENDERS = 4  # three of them may send to the one provider at once (its share)
STEP = timedelta(milliseconds=50)


class Queue:
    """The firings table as the durable queue, in memory: what the store's tests hold each
    backend to, for the parts delivery uses."""

    def __init__(self, firings: Sequence[Firing]) -> None:
        self.firings = {f.id: f for f in firings}
        self.attempts: list[tuple[str, Attempt]] = []
        self.taken: Counter[str] = Counter()  # how many times each firing was taken
        self.takes = 0

    async def take_deliveries(
        self, *, sender: str, shards: range | None, now: datetime, lease: timedelta, limit: int
    ) -> list[Firing]:
        self.takes += 1
        due = [
            f
            for f in self.firings.values()
            if (f.state is FiringState.QUEUED and f.next_attempt_at and f.next_attempt_at <= now)
            or (f.state is FiringState.SENDING and f.lease_until and f.lease_until < now)
        ]
        due.sort(key=lambda f: (PRIORITY_RANKS[f.priority], f.deadline))
        taken = [
            f._replace(state=FiringState.SENDING, sender=sender, lease_until=now + lease)
            for f in due[:limit]
        ]
        for one in taken:
            self.firings[one.id] = one
            self.taken[one.id] += 1
        return taken

    async def record_attempts(self, results: Sequence[AttemptResult]) -> int:
        applied = 0
        for result in results:
            held = self.firings[result.firing_id]
            if (held.state, held.sender) != (FiringState.SENDING, result.sender):
                continue
            made = [*result.earlier, *([result.attempt] if result.attempt else [])]
            self.attempts += [(held.id, attempt) for attempt in made]
            self.firings[held.id] = held._replace(
                state=result.state,
                attempts=made[-1].number if made else held.attempts,
                next_attempt_at=result.next_attempt_at,
                sender=None,
                lease_until=None,
                last_error=result.last_error,
            )
            applied += 1
        return applied

    async def release_deliveries(
        self, firings: Sequence[Firing], *, sender: str, now: datetime
    ) -> int:
        return 0

    async def recover_claims(self, *, now: datetime, limit: int) -> int:
        return 0

    async def settled_destinations(self, firing_id: str) -> dict[str, Outcome]:
        return {}


class Slow(DestinationSender):
    """Accepts each send after `seconds` of the fake clock (for ever while None); keeps
    the ids it was sent."""

    def __init__(self, clock: FakeClock, seconds: float | None) -> None:
        self._clock = clock
        self.seconds = seconds
        self.sent: Counter[str] = Counter()

    async def send(
        self, firing: Firing, destination: Destination, *, time_limit: float
    ) -> DeliveryResult:
        self.sent[firing.id] += 1
        if self.seconds is None:
            await asyncio.Event().wait()
        else:
            await self._clock.sleep_until(self._clock.now() + timedelta(seconds=self.seconds))
        return DeliveryResult.sent()


class CountingClock(FakeClock):
    """A fake clock that counts its readings: a loop that looks again and again without
    time passing reads it each time."""

    reads = 0

    def now(self) -> datetime:
        self.reads += 1
        return super().now()


def backlog(count: int) -> list[Firing]:
    """`count` bulk webhook firings queued, due now."""
    return [
        firing(channel=Channel.WEBHOOK, owner=f"reader-{n}")._replace(
            state=FiringState.QUEUED,
            next_attempt_at=DUE,
            sender=None,
            lease_until=None,
            priority=Priority.BULK,
        )
        for n in range(count)
    ]


@dataclass
class Rig:
    """Delivery running on a fake clock, against `queue`, sending through `sender`."""

    clock: FakeClock
    queue: Queue
    sender: Slow
    delivery: Delivery

    async def play(self, seconds: float) -> None:
        """Let `seconds` of the fake clock pass, a step at a time, results written each step
        (as the recorder's task does every 50 ms)."""
        for _ in range(round(seconds / STEP.total_seconds())):
            await settle()
            await self.delivery.recorder.flush()
            await settle()
            self.clock.advance(STEP)


@asynccontextmanager
async def running(
    queued: int, send_seconds: float | None, clock: FakeClock | None = None
) -> AsyncIterator[Rig]:
    """Delivery's senders and pickup at work on `queued` firings, each send taking
    `send_seconds`, until the block ends."""
    clock = clock or FakeClock(DUE)
    queue = Queue(backlog(queued))
    sender = Slow(clock, send_seconds)
    delivery = Delivery(
        cast(Store, queue),
        Channels({Channel.WEBHOOK: sender}),
        RetryPolicy(max_attempts=5),
        clock,
        sender="w1",
        tuning=DeliveryTuning(
            concurrency=SENDERS, lease=HOLD, send_timeout=SEND_TIMEOUT, pickup_batch=1000
        ),
        # Every firing has one destination, the same provider.
        destinations=Destinations(cast(Store, queue), null=True),
    )
    delivery.pool.start()
    pickup = asyncio.create_task(delivery.pickup.run())
    try:
        yield Rig(clock, queue, sender, delivery)
    finally:
        pickup.cancel()
        await delivery.pool.drain(0)
        await asyncio.gather(pickup, return_exceptions=True)


async def settle(turns: int = 50) -> None:
    for _ in range(turns):
        await asyncio.sleep(0)


async def test_a_backlog_is_taken_as_the_senders_get_through_it() -> None:
    """300 firings due at once, sent at 10 a second (0.3 s each, three at a time): each is
    taken once, sent once, and has one attempt — its send."""
    async with running(300, 0.3) as rig:
        await rig.play(40)
    queue = rig.queue

    assert all(f.state is FiringState.SENT for f in queue.firings.values())
    assert set(rig.sender.sent.values()) == {1}
    assert len(queue.attempts) == 300, Counter(a.error for _, a in queue.attempts)
    assert max(queue.taken.values()) == 1, "each was taken when it could be sent in time"


async def test_senders_that_slow_down_hand_back_what_they_cannot_send_untried() -> None:
    """The sends slow from 0.3 s to 3 s each (from 10 a second to 1) while a line is waiting:
    firings whose turn comes too late for their hold are handed back with no attempt
    recorded and taken again later, never in a loop; every firing is sent once."""
    async with running(60, 0.3) as rig:
        await rig.play(2)
        rig.sender.seconds = 3.0
        await rig.play(90)
    queue = rig.queue

    assert all(f.state is FiringState.SENT for f in queue.firings.values())
    assert set(rig.sender.sent.values()) == {1}
    attempts = Counter(firing_id for firing_id, _ in queue.attempts)
    assert set(attempts.values()) == {1}, "only the sends are attempts"
    assert all(a.outcome is Outcome.SENT for _, a in queue.attempts)
    assert sum(queue.taken.values()) > 60, "some were handed back, as they should be"
    # Each was handed back at most a few times: taken again only when the pool could send
    # it, not at once in a loop (a hold is 4 s, and 90 s passed).
    assert max(queue.taken.values()) <= 5, queue.taken.most_common(3)


async def test_what_a_claim_took_beyond_what_the_senders_start_in_time_goes_back_at_once() -> None:
    """A claim hands over a whole batch (it claims once there is room for some): those the
    senders cannot start in time are handed back at once, untried, and sent later."""
    async with running(10, 0.3) as rig:
        await rig.play(2)  # the senders' pace is known
        claimed = [
            f._replace(state=FiringState.SENDING, sender="w1", lease_until=rig.clock.now() + HOLD)
            for f in backlog(100)
        ]
        rig.queue.firings.update((f.id, f) for f in claimed)
        await rig.delivery.submit(claimed)
        await rig.delivery.recorder.flush()
        back = [f for f in rig.queue.firings.values() if f.state is FiringState.QUEUED]
        await rig.play(30)

    assert 80 < len(back) < 100, "of 100, about what 4 senders start in 0.5 s was kept"
    assert {(f.attempts, f.next_attempt_at) for f in back} == {(0, DUE + timedelta(seconds=2))}
    assert all(f.state is FiringState.SENT for f in rig.queue.firings.values())
    assert set(rig.sender.sent.values()) == {1}
    assert len(rig.queue.attempts) == 110


async def test_with_no_room_pickup_waits_for_room_rather_than_looking_again() -> None:
    """Every sender is held by a peer that does not answer, and a retry is due: pickup
    neither takes more nor looks again and again (it waits for the pool to have room)."""
    clock = CountingClock(DUE)
    async with running(300, None, clock) as rig:
        await rig.play(2.5)
        takes = rig.queue.takes
        rig.delivery.pickup.retry_at(clock.now())
        clock.reads = 0
        await settle(500)  # time stands still: a loop that looks again reads the clock each turn
        reads = clock.reads

    assert sum(rig.queue.taken.values()) == SENDERS, "it took what the senders could start"
    assert rig.queue.takes == takes
    assert reads < 20


async def test_a_firing_whose_hold_is_too_short_for_a_send_is_handed_back_untried() -> None:
    """With less of its hold left than a send and the time to write its result need, a
    firing is not sent: it goes back to the queue at once, its attempts and last error as
    they were; with too little left even to write that, it is left to its hold."""
    clock = FakeClock(DUE)
    sender = Slow(clock, 0.3)
    deliverer = Deliverer(
        Channels({Channel.WEBHOOK: sender}),
        Destinations(cast(Store, None), null=True),
        RetryPolicy(max_attempts=5),
        clock,
        sender="worker-1",
        isolation=Isolation(concurrency=SENDERS),
        send_timeout=SEND_TIMEOUT,
        hold=HOLD,
    )
    assert deliverer.reserve == timedelta(seconds=3)  # the send, and a second to write it
    short = firing(channel=Channel.WEBHOOK)._replace(
        lease_until=DUE + timedelta(seconds=2.5), last_error="HTTP 503", attempts=2
    )
    ending = firing(channel=Channel.WEBHOOK, owner="bob")._replace(
        lease_until=DUE + timedelta(seconds=0.5)
    )

    handed_back = await deliverer.deliver(short)
    left = await deliverer.deliver(ending)

    assert handed_back == AttemptResult(
        firing_id=short.id,
        sender="worker-1",
        state=FiringState.QUEUED,
        next_attempt_at=DUE,
        error="HTTP 503",
    )
    assert left is None
    assert not sender.sent
