"""Retention on both backends: `prune` deletes only what is old and done, a batch at a time;
one worker at a time holds the retention chore; `Retention` runs passes under it."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from tests.integration.store.factories import LEASE, NOW, claim, reminder, result
from tocsin.clock import FakeClock
from tocsin.domain import Firing, FiringState, IdempotencyRecord, Reminder, ReminderStatus
from tocsin.scheduler.retention import Retention, RetentionTuning
from tocsin.store import Store
from tocsin.store.base import Pruned

DAY = timedelta(days=1)
KEEP = 30 * DAY
CUTOFF = NOW - KEEP


async def _rung(store: Store, due: datetime, *, state: FiringState) -> tuple[Reminder, Firing]:
    """A one-off due at `due`, claimed then, its firing left in `state` (with one attempt
    unless queued)."""
    one_off = reminder(due_at=due, created_at=due - DAY)
    await store.add_reminders([one_off])
    [firing] = await store.claim([claim(one_off)], sender="worker-1", now=due, lease=LEASE)
    if state is not FiringState.SENDING:
        await store.record_attempts([result(firing, state=state, at=due)])
    return one_off, firing


def _key(name: str, created_at: datetime) -> IdempotencyRecord:
    return IdempotencyRecord(
        scope="phone",
        key=name,
        request_hash="h",
        status_code=201,
        body=b"{}",
        created_at=created_at,
    )


async def _prune(store: Store, *, limit: int = 100) -> Pruned:
    return await store.prune(
        firings_before=CUTOFF,
        reminders_before=CUTOFF,
        keys_before=NOW - DAY,
        limit=limit,
    )


async def test_prune_deletes_old_done_rows_and_keeps_the_rest(store: Store) -> None:
    old_sent = await _rung(store, CUTOFF - DAY, state=FiringState.SENT)
    old_failed = await _rung(store, CUTOFF - 2 * DAY, state=FiringState.FAILED)
    old_queued = await _rung(store, CUTOFF - DAY, state=FiringState.QUEUED)  # never final
    young = await _rung(store, CUTOFF + DAY, state=FiringState.SENT)
    old_pending = reminder(due_at=NOW + DAY, created_at=CUTOFF - 5 * DAY)
    old_cancelled = reminder(due_at=NOW + DAY, created_at=CUTOFF - 5 * DAY)
    await store.add_reminders([old_pending, old_cancelled], idempotency=_key("old", NOW - 2 * DAY))
    await store.add_reminders([reminder()], idempotency=_key("young", NOW - timedelta(hours=1)))
    await store.cancel_reminder(old_cancelled.id, now=CUTOFF - DAY)

    pruned = await _prune(store)

    assert pruned == Pruned(firings=2, attempts=2, reminders=3, idempotency_keys=1)
    for gone in (old_sent, old_failed):
        assert await store.get_reminder(gone[0].id) is None
        assert await store.list_firings(gone[0].id) == []
    assert await store.get_reminder(old_cancelled.id) is None
    # A ring not final yet keeps its record, and its reminder stays while it does.
    kept = await store.get_reminder(old_queued[0].id)
    assert kept is not None
    assert kept.status is ReminderStatus.FIRED
    assert [f.id for f in await store.list_firings(old_queued[0].id)] == [old_queued[1].id]
    [young_ring] = await store.list_firings(young[0].id)
    assert len(young_ring.history) == 1
    assert await store.get_reminder(young[0].id) is not None
    assert await store.get_reminder(old_pending.id) is not None
    assert await store.find_idempotency("phone", "old") is None
    assert await store.find_idempotency("phone", "young") is not None
    assert await _prune(store) == Pruned(firings=0, attempts=0, reminders=0, idempotency_keys=0)


async def test_prune_deletes_at_most_a_batch_oldest_first(store: Store) -> None:
    rungs = [
        await _rung(store, CUTOFF - timedelta(hours=hours), state=FiringState.SENT)
        for hours in (5, 1, 3, 2, 4)
    ]
    by_age = sorted(rungs, key=lambda rung: rung[1].due_at)

    first = await _prune(store, limit=2)

    assert (first.firings, first.attempts) == (2, 2)
    left = [rung for rung in by_age if await store.list_firings(rung[0].id)]
    assert left == by_age[2:]
    second = await _prune(store, limit=2)
    third = await _prune(store, limit=2)
    assert (second.firings, third.firings) == (2, 1)


async def test_one_worker_at_a_time_holds_the_retention_chore(store: Store) -> None:
    short = timedelta(milliseconds=300)
    assert await store.hold_chore("retention", worker="w1", ttl=short)
    assert not await store.hold_chore("retention", worker="w2", ttl=short)
    assert await store.hold_chore("retention", worker="w1", ttl=short)  # renewed
    await asyncio.sleep(0.6)  # w1 stopped renewing: its lease ran out
    assert await store.hold_chore("retention", worker="w2", ttl=LEASE)
    assert not await store.hold_chore("retention", worker="w1", ttl=LEASE)
    await store.release_chore("retention", worker="w1")  # not its lease: nothing changes
    assert not await store.hold_chore("retention", worker="w3", ttl=LEASE)
    await store.release_chore("retention", worker="w2")
    assert await store.hold_chore("retention", worker="w3", ttl=LEASE)
    assert await store.hold_chore("other chore", worker="w1", ttl=LEASE)


async def test_retention_passes_in_batches_only_while_it_holds_the_chore(store: Store) -> None:
    rungs = [
        await _rung(store, CUTOFF - timedelta(hours=hours), state=FiringState.SENT)
        for hours in range(1, 6)
    ]
    clock = FakeClock(NOW)
    tuning = RetentionTuning(batch=2, pause=timedelta(0))
    first = Retention(store, clock, worker="w1", keep=KEEP, tuning=tuning)
    second = Retention(store, clock, worker="w2", keep=KEEP, tuning=tuning)
    assert await store.hold_chore("retention", worker="w1", ttl=LEASE)

    assert await second.prune_all() == Pruned(
        firings=0, attempts=0, reminders=0, idempotency_keys=0
    )
    done = await first.prune_all()

    assert done == Pruned(firings=5, attempts=5, reminders=5, idempotency_keys=0)
    for one_off, _ in rungs:
        assert await store.get_reminder(one_off.id) is None
    await first.release()
    assert await store.hold_chore("retention", worker="w2", ttl=LEASE)
