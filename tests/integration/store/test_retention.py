"""Retention on both backends: `prune` deletes only what is old and done, a batch at a time;
one worker at a time holds the retention chore; `Retention` runs passes under it."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import datetime, timedelta

import asyncpg
import pytest

from tests.integration.store.factories import LEASE, NOW, claim, edited, reminder, result
from tests.integration.store.test_plans import _nodes
from tests.support.raw import raw_execute
from tocsin.clock import FakeClock
from tocsin.domain import Firing, FiringState, IdempotencyRecord, Reminder, ReminderStatus
from tocsin.scheduler.retention import Retention, RetentionTuning
from tocsin.store import Store
from tocsin.store.base import Pruned
from tocsin.store.codec import EPOCH

DAY = timedelta(days=1)
KEEP = 30 * DAY
CUTOFF = NOW - KEEP


async def _rung(
    store: Store, due: datetime, *, state: FiringState, claimed: datetime | None = None
) -> tuple[Reminder, Firing]:
    """A one-off due at `due`, claimed then (or at `claimed`), its firing left in `state`
    (with one attempt unless queued or still being sent)."""
    one_off = reminder(due_at=due, created_at=due - DAY)
    await store.add_reminders([one_off])
    return one_off, await _ring(store, one_off, state=state, now=claimed or due)


async def _ring(
    store: Store,
    target: Reminder,
    *,
    state: FiringState,
    now: datetime,
    next_due_at: datetime | None = None,
) -> Firing:
    """`target`'s ring at its due time, claimed at `now` (the series moving on to
    `next_due_at`), its firing left in `state`; recorded at once unless `sending`, its claim
    forgotten once its hold ran out, as every worker's pickup does (PostgreSQL)."""
    [firing] = await store.claim(
        [claim(target, next_due_at=next_due_at)], sender="worker-1", now=now, lease=LEASE
    )
    if state is not FiringState.SENDING:
        await store.record_attempts([result(firing, state=state, at=now)])
        assert await store.recover_claims(now=now + LEASE + timedelta(seconds=1), limit=9) == 0
    return firing


async def _series(store: Store, *rings: tuple[datetime, FiringState]) -> Reminder:
    """A daily series that rang at each due time of `rings`, its firing left in that ring's
    state, and ended with the last."""
    series = reminder(due_at=rings[0][0], rule="FREQ=DAILY", created_at=rings[0][0] - DAY)
    await store.add_reminders([series])
    following = [due for due, _ in rings[1:]] + [None]
    for (due, state), next_due_at in zip(rings, following, strict=True):
        current = await store.get_reminder(series.id)
        assert current is not None
        await _ring(store, current, state=state, now=due, next_due_at=next_due_at)
    return series


async def _text_edited(store: Store, target: Reminder, *, at: datetime, **changes: object) -> None:
    """`target` saved again at `at` with a new text (and `changes`), as an app's edit does."""
    current = await store.get_reminder(target.id)
    assert current is not None
    changed = edited(current, text="Water the tomatoes", updated_at=at, **changes)
    saved = await store.update_reminder(
        changed, expected_version=current.version, waiting=current.due_at
    )
    assert saved is not None


def _key(name: str, created_at: datetime) -> IdempotencyRecord:
    return IdempotencyRecord(
        scope="phone",
        key=name,
        request_hash="h",
        status_code=201,
        body=b"{}",
        created_at=created_at,
    )


async def _prune(store: Store, *, limit: int = 100, now: datetime = NOW) -> Pruned:
    """One batch, without its count of `rings` rows (test_rings_go_once_no_reader_needs_them
    counts those)."""
    pruned = await store.prune(
        firings_before=now - KEEP,
        reminders_before=now - KEEP,
        keys_before=now - DAY,
        limit=limit,
    )
    return replace(pruned, rings=0)


def _pruned(*, firings: int = 0, reminders: int = 0) -> Pruned:
    """What a batch deleted: firings with one attempt each, reminders and no keys."""
    return Pruned(firings=firings, attempts=firings, reminders=reminders, idempotency_keys=0)


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

    assert done == Pruned(
        firings=5, attempts=5, reminders=5, idempotency_keys=0, rings=5, occurrences=5
    )
    for one_off, _ in rungs:
        assert await store.get_reminder(one_off.id) is None
    await first.release()
    assert await store.hold_chore("retention", worker="w2", ttl=LEASE)


async def test_a_fired_one_off_goes_with_its_firing_even_when_claimed_late(store: Store) -> None:
    """A one-off its ring finished is in no age index of reminders: it goes with its ring's
    record, whenever its ring was claimed (here after the cutoff, its last change)."""
    late, _ = await _rung(
        store, CUTOFF - DAY, state=FiringState.SENT, claimed=CUTOFF + timedelta(hours=1)
    )
    young, _ = await _rung(store, CUTOFF + DAY, state=FiringState.SENT)

    assert await _prune(store) == _pruned(firings=1, reminders=1)
    assert await store.get_reminder(late.id) is None
    assert await store.get_reminder(young.id) is not None


async def test_an_ended_series_goes_only_with_its_last_firing(store: Store) -> None:
    series = await _series(
        store, (CUTOFF - 3 * DAY, FiringState.SENT), (CUTOFF - 2 * DAY, FiringState.SENT)
    )

    assert await _prune(store, limit=1) == _pruned(firings=1)  # the first ring's
    ended = await store.get_reminder(series.id)
    assert ended is not None
    assert ended.status is ReminderStatus.ENDED
    assert ended.due_at is None  # the instant it keeps is no next ring
    assert await _prune(store, limit=1) == _pruned(firings=1, reminders=1)
    assert await store.get_reminder(series.id) is None


async def test_an_ended_series_waits_for_a_ring_still_on_its_way(store: Store) -> None:
    """An older ring not final yet (queued for a retry: a freshness longer than retention
    keeps) holds the series' firings, the last one included; once it is final, the series
    goes with its last ring's firing."""
    series = await _series(
        store, (CUTOFF - 3 * DAY, FiringState.QUEUED), (CUTOFF - 2 * DAY, FiringState.SENT)
    )

    assert await _prune(store) == _pruned()
    assert await store.get_reminder(series.id) is not None
    # Taken after its deadline: it expires.
    await store.take_deliveries(sender="worker-1", shards=None, now=NOW, lease=LEASE, limit=9)
    assert await _prune(store) == _pruned(firings=2, reminders=1)
    assert await store.get_reminder(series.id) is None


async def test_a_series_whose_last_ring_is_on_its_way_stays(store: Store) -> None:
    """Its old rings go; the series waits for its last ring's record (on PostgreSQL not
    written yet while it is being sent)."""
    series = await _series(
        store, (CUTOFF - DAY, FiringState.SENT), (NOW - DAY, FiringState.SENDING)
    )

    assert await _prune(store) == _pruned(firings=1)
    kept = await store.get_reminder(series.id)
    assert kept is not None
    assert kept.status is ReminderStatus.ENDED


async def test_a_fired_one_off_edited_later_goes_by_its_last_change(store: Store) -> None:
    """Saved again after its ring (its text only: it stays fired), a one-off is a finished
    reminder like a cancelled one: it goes once its last change is old, not with its ring."""
    one_off, _ = await _rung(store, CUTOFF - DAY, state=FiringState.SENT)
    edit = CUTOFF + DAY
    await _text_edited(store, one_off, at=edit)

    assert await _prune(store) == _pruned(firings=1)
    kept = await store.get_reminder(one_off.id)
    assert kept is not None
    assert (kept.status, kept.text) == (ReminderStatus.FIRED, "Water the tomatoes")
    assert await _prune(store, now=edit + KEEP) == _pruned()  # not before its last change
    assert await _prune(store, now=edit + KEEP + DAY) == _pruned(reminders=1)
    assert await store.get_reminder(one_off.id) is None


async def test_a_fired_one_off_edited_back_to_pending_stays(store: Store) -> None:
    one_off, _ = await _rung(store, CUTOFF - DAY, state=FiringState.SENT)
    await _text_edited(store, one_off, at=CUTOFF, status=ReminderStatus.PENDING, due_at=NOW + DAY)

    assert await _prune(store) == _pruned(firings=1)
    assert await _prune(store, now=NOW + KEEP) == _pruned()
    again = await store.get_reminder(one_off.id)
    assert again is not None
    assert (again.status, again.due_at) == (ReminderStatus.PENDING, NOW + DAY)


async def test_a_cancelled_series_goes_by_its_last_change(store: Store) -> None:
    series = reminder(due_at=CUTOFF - DAY, rule="FREQ=DAILY", created_at=CUTOFF - 2 * DAY)
    await store.add_reminders([series])
    await _ring(store, series, state=FiringState.SENT, now=CUTOFF - DAY, next_due_at=NOW + DAY)
    cancel = CUTOFF + DAY
    await store.cancel_reminder(series.id, now=cancel)

    assert await _prune(store) == _pruned(firings=1)
    assert await store.get_reminder(series.id) is not None
    assert await _prune(store, now=cancel + KEEP + DAY) == _pruned(reminders=1)
    assert await store.get_reminder(series.id) is None


async def test_a_one_off_an_earlier_version_fired_goes_by_its_last_change(
    store: Store, migrated_db_url: str
) -> None:
    """Before migration 0017 a ring left `due_at` NULL: such a reminder is in
    reminders_finished, and goes once its last change (its ring's claim) is old."""
    claimed = CUTOFF + timedelta(hours=1)
    one_off, _ = await _rung(store, CUTOFF - DAY, state=FiringState.SENT, claimed=claimed)
    stored = (  # an instant as each backend stores it
        str((claimed - EPOCH) // timedelta(microseconds=1))
        if migrated_db_url.startswith("sqlite")
        else f"'{claimed.isoformat()}'"
    )
    await raw_execute(  # as its claim of that release left it
        migrated_db_url,
        f"UPDATE reminders SET status = 'fired', due_at = NULL, updated_at = {stored}",
    )

    assert await _prune(store) == _pruned(firings=1)
    assert await store.get_reminder(one_off.id) is not None
    assert await _prune(store, now=NOW + timedelta(hours=2)) == _pruned(reminders=1)


# The reminders reminders_finished holds, read through it alone (on a table this small the
# planner would read the table instead, which says nothing about the index).
_THROUGH_FINISHED = """
SELECT id FROM reminders WHERE status <> 'pending' AND due_at IS NULL ORDER BY updated_at
"""


@pytest.mark.postgres
async def test_a_ring_that_finishes_a_reminder_enters_no_finished_index(
    pg_store: Store, pg_migrated_url: str
) -> None:
    await _rung(pg_store, NOW - DAY, state=FiringState.SENT)
    await _series(pg_store, (NOW - 2 * DAY, FiringState.SENT), (NOW - DAY, FiringState.SENT))
    cancelled = reminder()
    await pg_store.add_reminders([cancelled])
    await pg_store.cancel_reminder(cancelled.id, now=NOW)
    connection = await asyncpg.connect(pg_migrated_url)
    try:
        async with connection.transaction():
            await connection.execute("SET LOCAL enable_seqscan = off")
            await connection.execute("SET LOCAL enable_bitmapscan = off")
            plan = await connection.fetchval("EXPLAIN (FORMAT JSON) " + _THROUGH_FINISHED)
            held = [row["id"] for row in await connection.fetch(_THROUGH_FINISHED)]
    finally:
        await connection.close()

    scans = [n for n in _nodes(json.loads(plan)[0]["Plan"]) if "Index Name" in n]
    assert [n["Index Name"] for n in scans] == ["reminders_finished"], plan
    assert held == [cancelled.id]


# A whole fleet stopped with rings in flight, and back after retention's cutoff passed them:
# their claims' holds ran out long ago, and nobody recovered them yet.
WEEK = 7 * DAY


async def _ring_in_flight(
    store: Store, *, freshness: int, next_due_at: datetime | None = None
) -> tuple[Reminder, Firing]:
    """A daily series that rang the day before (its firing sent) and whose ring at NOW, its
    last unless it goes on to `next_due_at`, was claimed then and never written: the series
    and that ring."""
    series = reminder(due_at=NOW - DAY, rule="FREQ=DAILY", freshness=freshness)
    await store.add_reminders([series])
    await _ring(store, series, state=FiringState.SENT, now=NOW - DAY, next_due_at=NOW)
    current = await store.get_reminder(series.id)
    assert current is not None
    ringing = await _ring(
        store, current, state=FiringState.SENDING, now=NOW, next_due_at=next_due_at
    )
    return series, ringing


async def _back_after(store: Store, gone: timedelta, *, keep: timedelta) -> list[Firing]:
    """The fleet back `gone` after NOW: retention's pass first (keeping `keep`), then a
    pickup's recovery and take, as a worker starting then may run them."""
    back = NOW + gone
    await store.prune(
        firings_before=back - keep, reminders_before=back - keep, keys_before=back, limit=100
    )
    await store.recover_claims(now=back, limit=100)
    return await store.take_deliveries(
        sender="worker-2", shards=None, now=back, lease=LEASE, limit=100
    )


async def test_a_ring_its_claim_kept_past_retention_is_sent_again_while_fresh(
    store: Store,
) -> None:
    """Kept a day, fresh for a week, back after two days: the last ring's reminder would go
    with the ring before it (its only firing), but the ring is still owed."""
    series, ringing = await _ring_in_flight(store, freshness=int(WEEK.total_seconds()))

    [taken] = await _back_after(store, 2 * DAY, keep=DAY)

    assert (taken.id, taken.state, taken.sender) == (ringing.id, FiringState.SENDING, "worker-2")
    assert await store.get_reminder(series.id) is not None


async def test_a_ring_its_claim_kept_past_retention_is_recorded_expired_when_stale(
    store: Store,
) -> None:
    """A series cancelled while its ring was on its way, back after retention's 30 days:
    the ring is recorded expired, and goes with the series in a later pass."""
    series, ringing = await _ring_in_flight(store, freshness=600, next_due_at=NOW + DAY)
    assert await store.cancel_reminder(series.id, now=NOW) is not None

    taken = await _back_after(store, KEEP + DAY, keep=KEEP)
    recorded = await store.list_firings(series.id)
    later = await _prune(store, now=NOW + KEEP + 2 * DAY)

    assert taken == []
    assert (recorded[0].id, recorded[0].state) == (ringing.id, FiringState.EXPIRED)
    assert later.reminders == 1
    assert await store.get_reminder(series.id) is None
    assert await store.list_firings(series.id) == []


async def test_an_assignee_goes_once_retention_deleted_its_reminder(store: Store) -> None:
    cancelled, pending = reminder(due_at=NOW + DAY), reminder(due_at=NOW + DAY)
    await store.add_reminders([cancelled], assignees={cancelled.id: "ben"})
    await store.add_reminders([pending], assignees={pending.id: "cy"})
    await store.cancel_reminder(cancelled.id, now=CUTOFF - DAY)

    pruned = await _prune(store)

    assert (pruned.reminders, pruned.assignees) == (1, 1)
    assert await store.assignees_of([cancelled.id, pending.id]) == {pending.id: "cy"}
    assert (await _prune(store)).assignees == 0
