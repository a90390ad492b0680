"""A reminder's priority, on both backends: kept with the reminder and its edits, read by
the load, copied onto each of its firings (written at the claim, after a first try, or by
recovery), and the order in which retries are handed out: urgent ones first."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from tests.integration.store.factories import LEASE, NOW, claim, reminder, result
from tocsin.domain import FiringState, Outcome, Priority
from tocsin.store import Store
from tocsin.store.codec import bucket_of

ALL = range(1024)


async def test_a_priority_is_kept_loaded_and_copied_onto_the_firing(store: Store) -> None:
    bulk = replace(reminder("reader-1"), priority=Priority.BULK)
    urgent = reminder("ana")
    await store.add_reminders([bulk])
    await store.add_reminders([urgent])  # a single create takes another statement
    assert bulk.due_at is not None

    saved = await store.get_reminder(bulk.id)
    due = bucket_of(bulk.due_at)
    loaded = await store.load_due(shards=ALL, first_bucket=due, last_bucket=due, limit=10)
    firings = await store.claim([claim(bulk), claim(urgent)], sender="w", now=NOW, lease=LEASE)
    await store.record_attempts([result(f, sender="w") for f in firings])
    [history] = await store.list_firings(bulk.id)

    assert saved is not None
    assert saved.priority is Priority.BULK
    assert {ring.reminder_id: ring.priority for ring in loaded} == {bulk.id: 1, urgent.id: 0}
    assert {f.reminder_id: f.priority for f in firings} == {
        bulk.id: Priority.BULK,
        urgent.id: Priority.URGENT,
    }
    assert history.priority is Priority.BULK


async def test_an_edit_changes_the_priority(store: Store) -> None:
    made = reminder()
    await store.add_reminders([made])
    edited = await store.update_reminder(
        replace(made, priority=Priority.BULK), expected_version=made.version, waiting=made.due_at
    )
    assert edited is not None
    assert edited.priority is Priority.BULK
    back = await store.update_reminder(
        replace(edited, priority=Priority.URGENT),
        expected_version=edited.version,
        waiting=edited.due_at,
    )
    assert back is not None
    assert back.priority is Priority.URGENT


async def test_retries_are_handed_out_urgent_first_whatever_their_deadlines(
    store: Store,
) -> None:
    """Bulk firings with the closest deadlines and urgent ones with later deadlines, all due
    for a retry: a take of fewer than all gives the urgent ones."""
    bulk = [
        replace(reminder(f"reader-{n}", freshness=120), priority=Priority.BULK) for n in range(4)
    ]
    urgent = [reminder(f"ana-{n}", freshness=600) for n in range(2)]
    everything = [*bulk, *urgent]
    await store.add_reminders(everything)
    claimed = await store.claim([claim(r) for r in everything], sender="w1", now=NOW, lease=LEASE)
    retry_at = NOW + timedelta(seconds=5)
    failed = [
        result(
            f,
            sender="w1",
            state=FiringState.QUEUED,
            outcome=Outcome.RETRY,
            error="503",
            next_attempt_at=retry_at,
        )
        for f in claimed
    ]
    assert await store.record_attempts(failed) == len(everything)

    later = retry_at + timedelta(seconds=1)
    first = await store.take_deliveries(sender="w2", shards=None, now=later, lease=LEASE, limit=3)
    rest = await store.take_deliveries(sender="w2", shards=None, now=later, lease=LEASE, limit=9)

    assert [f.priority for f in first].count(Priority.URGENT) == 2
    assert {f.reminder_id for f in first} >= {r.id for r in urgent}
    assert {f.reminder_id for f in [*first, *rest]} == {r.id for r in everything}


async def test_a_ring_recovered_after_its_senders_hold_keeps_its_priority(store: Store) -> None:
    bulk = replace(reminder("reader-1"), priority=Priority.BULK)
    await store.add_reminders([bulk])
    await store.claim([claim(bulk)], sender="w1", now=NOW, lease=LEASE)  # w1 says no more

    later = NOW + LEASE + timedelta(seconds=1)
    await store.recover_claims(now=later, limit=10)
    [taken] = await store.take_deliveries(
        sender="w2", shards=None, now=later, lease=LEASE, limit=10
    )

    assert taken.priority is Priority.BULK
