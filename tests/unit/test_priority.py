"""Urgent rings ahead of bulk ones, at each place a backlog waits in a worker: the claims
waiting for a slot, the delivery line, and a provider's share of the senders."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from tests.unit.test_line import NOW, firing
from tocsin.clock import FakeClock
from tocsin.delivery.isolation import Slots
from tocsin.delivery.line import Line
from tocsin.domain import Claim, Firing, Priority
from tocsin.scheduler.claimer import Claimer
from tocsin.scheduler.timeline import Entry, Timeline
from tocsin.store import Store

# Batches of (deadline seconds after NOW, bulk?) as claims and takes line them up.
batches = st.lists(
    st.lists(st.tuples(st.integers(min_value=30, max_value=40), st.booleans()), max_size=12),
    min_size=1,
    max_size=8,
)


@given(batches=batches)
def test_the_line_gives_out_every_urgent_firing_before_any_bulk_one(
    batches: list[list[tuple[int, bool]]],
) -> None:
    line = Line()
    everything: list[Firing] = []
    for held_at, batch in enumerate(batches):
        firings = [
            firing(len(everything) + n, deadline, held_at)._replace(
                priority=Priority.BULK if bulk else Priority.URGENT
            )
            for n, (deadline, bulk) in enumerate(batch)
        ]
        line.extend(firings)
        everything += firings

    out = [line.pop() for _ in range(len(everything))]

    arrival = {f.id: n for n, f in enumerate(everything)}
    assert out == sorted(everything, key=lambda f: (f.priority.rank, f.deadline, arrival[f.id]))


async def test_a_freed_slot_goes_to_the_first_urgent_waiter_before_any_bulk_one() -> None:
    slots = Slots(1)
    await slots.acquire()  # the one slot, taken by a send in flight
    order: list[str] = []

    async def send(name: str, rank: int) -> None:
        await slots.acquire(rank)
        order.append(name)
        slots.release()

    waiting = [
        asyncio.create_task(send(name, rank))
        for name, rank in (("bulk-1", 1), ("bulk-2", 1), ("urgent-1", 0), ("urgent-2", 0))
    ]
    await asyncio.sleep(0)
    slots.release()
    await asyncio.gather(*waiting)
    assert order == ["urgent-1", "urgent-2", "bulk-1", "bulk-2"]


class Recording:
    """A store whose claims claim nothing, recording the reminders of each batch claimed."""

    def __init__(self, expected: int) -> None:
        self.batches: list[list[str]] = []
        self.expected = expected
        self.all_claimed = asyncio.Event()

    async def claim(self, claims: Sequence[Claim], **_: Any) -> list[Firing]:
        self.batches.append([claim.reminder_id for claim in claims])
        if len(self.batches) == self.expected:
            self.all_claimed.set()
        return []


async def test_urgent_claims_that_come_due_behind_bulk_ones_are_claimed_next() -> None:
    """Bulk claims wait for delivery's room; urgent ones that come due meanwhile go first."""
    room = asyncio.Event()

    async def wait_for_room(count: int, rank: int) -> None:
        await room.wait()

    async def handoff(firings: Iterable[Firing]) -> None:
        pass

    store = Recording(expected=4)
    timeline = Timeline()
    claimer = Claimer(
        cast(Store, store),
        timeline,
        FakeClock(NOW),
        handoff,
        room=wait_for_room,
        sender="w1",
        lease=timedelta(seconds=30),
        batch=10,
        concurrency=1,
    )

    def entries(prefix: str, count: int, rank: int) -> list[Entry]:
        due = NOW - timedelta(seconds=1)
        return [Entry.make(f"{prefix}{n:03d}", due, 0, None, 600, 1, rank) for n in range(count)]

    claimer.claim_soon(entries("bulk", 30, Priority.BULK.rank))  # one claiming, two waiting
    await asyncio.sleep(0)
    claimer.claim_soon(entries("urgent", 5, Priority.URGENT.rank))
    await asyncio.sleep(0)
    room.set()
    await asyncio.wait_for(store.all_claimed.wait(), timeout=10)

    kinds = [batch[0].rstrip("0123456789") for batch in store.batches]
    assert kinds == ["bulk", "urgent", "bulk", "bulk"]  # the first was claiming already
    assert [len(batch) for batch in store.batches] == [10, 5, 10, 10]
