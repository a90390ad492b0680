"""Rings at the right second, once: one-offs and series, on both backends (injected clock),
and a few seconds of real time."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from tests.integration.engine.support import (
    T0,
    eventually,
    firings_of,
    reminder,
    running,
    settings,
)
from tocsin.clock import FakeClock, SystemClock
from tocsin.domain import FiringState, Outcome, ReminderStatus
from tocsin.store import Store


async def ring_at(store: Store, clock: FakeClock, reminder_id: str, count: int) -> None:
    """Move the clock to the reminder's due time, one second at a time for the last two,
    checking it did not ring early and rang exactly then."""
    row = await store.get_reminder(reminder_id)
    assert row is not None
    assert row.due_at is not None
    due = row.due_at
    clock.set(due - timedelta(seconds=1))
    await asyncio.sleep(0.15)
    assert len(await firings_of(store, reminder_id)) == count - 1, "rang early"
    clock.set(due)

    async def rang() -> bool:
        firings = await firings_of(store, reminder_id)
        return len(firings) == count and firings[-1].state is FiringState.SENT

    await eventually(rang)
    firing = (await firings_of(store, reminder_id))[-1]
    assert firing.due_at == due
    assert firing.sent_at == due, "sent at its second (the clock stood still on it)"
    assert [a.outcome for a in firing.history] == [Outcome.SENT]
    assert firing.history[0].at == due


async def test_one_offs_and_a_series_ring_at_their_second(store: Store) -> None:
    clock = FakeClock(T0)
    early = reminder("ana", now=T0, at=T0 + timedelta(seconds=45))
    later = reminder("bob", now=T0, at=T0 + timedelta(minutes=2, seconds=30))
    series = reminder("cy", now=T0 + timedelta(seconds=1), repeat="every 30 minutes")
    await store.add_reminders([early, later, series])
    async with running(store, settings(), clock):
        await ring_at(store, clock, early.id, 1)
        await ring_at(store, clock, later.id, 1)
        for count in (1, 2, 3):
            await ring_at(store, clock, series.id, count)
    firings = await firings_of(store, series.id)
    assert [f.due_at - firings[0].due_at for f in firings] == [
        timedelta(0),
        timedelta(minutes=30),
        timedelta(minutes=60),
    ]
    after = await store.get_reminder(series.id)
    assert after is not None
    assert after.status is ReminderStatus.PENDING
    assert after.due_at == firings[-1].due_at + timedelta(minutes=30)
    one_off = await store.get_reminder(early.id)
    assert one_off is not None
    assert one_off.status is ReminderStatus.FIRED


# Its bound is on the real clock: run alone, after the parallel suite (six jobs on two cores
# once left a ring 1.7 s late), so that it measures the engine and not the machine's load.
@pytest.mark.heavy
async def test_real_clock_rings_within_a_second(store: Store) -> None:
    clock = SystemClock()
    now = clock.now().replace(microsecond=0)
    due = [now + timedelta(seconds=s) for s in (2, 3, 4)]
    saved = [reminder(f"owner-{n}", now=now, at=at) for n, at in enumerate(due)]
    await store.add_reminders(saved)
    async with running(store, settings(), clock):

        async def all_sent() -> bool:
            for one in saved:
                firings = await firings_of(store, one.id)
                if not firings or firings[0].state is not FiringState.SENT:
                    return False
            return True

        await eventually(all_sent, within=15)
    for one, at in zip(saved, due, strict=True):
        (firing,) = await firings_of(store, one.id)
        assert firing.sent_at is not None
        lateness = (firing.sent_at - at).total_seconds()
        assert 0 <= lateness < 1.0, lateness
