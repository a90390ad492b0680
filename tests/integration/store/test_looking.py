"""A reader finds a reminder's newest ring where its timeline says it may be (`looking`): the
rings are kept in due order, with nothing indexing them by reminder, and retention prunes
the ones before a version's newest. Tested on both backends, through the store's readers."""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial

import pytest

from tests.integration.store.factories import LEASE, NOW, claim, edited, reminder, result
from tests.integration.store.schema import knowing
from tests.support.raw import raw_execute
from tocsin.domain import FiringState, Reminder, ReminderStatus
from tocsin.ids import firing_id
from tocsin.store import Store, codec, open_store
from tocsin.store.codec import bucket_of
from tocsin.store.migrations import migrations_for

DAY = timedelta(days=1)
START = NOW - 40 * DAY


async def _daily(store: Store, rings: int) -> Reminder:
    """A daily series from START that rang `rings` times, each ring recorded sent, its next
    occurrence waiting after the last."""
    series = reminder(due_at=START, rule="FREQ=DAILY", created_at=START - DAY)
    await store.add_reminders([series])
    for n in range(rings):
        due = START + n * DAY
        current = await store.get_reminder(series.id, now=due)
        assert current is not None
        assert current.due_at == due
        await _ring(store, current, due)
    return series


async def _ring(store: Store, current: Reminder, due: datetime) -> None:
    """`current`'s ring at `due`, claimed as a load of it makes the claim (with the ring
    before it, `prev_due`), the series moving on a day; recorded sent."""
    [loaded] = [
        ring
        for ring in await store.load_due(
            shards=range(1024), first_bucket=0, last_bucket=bucket_of(due), limit=10
        )
        if ring.reminder_id == current.id
    ]
    assert (loaded.due_at, loaded.version) == (due, current.version)
    ringing = claim(current, next_due_at=due + DAY, prev_due=loaded.prev_due)
    [firing] = await store.claim([ringing], sender="worker-1", now=due, lease=LEASE)
    await store.record_attempts([result(firing, at=due)])
    assert await store.recover_claims(now=due + LEASE + timedelta(seconds=1), limit=9) == 0


async def _prune(store: Store, before: datetime) -> None:
    for _ in range(20):
        pruned = await store.prune(
            firings_before=before, reminders_before=before, keys_before=before, limit=100
        )
        if pruned.firings == pruned.rings == 0:
            return


async def test_a_series_newest_ring_is_found_with_its_first_rings_pruned(store: Store) -> None:
    series = await _daily(store, 40)
    await _prune(store, NOW - 5 * DAY)

    now = await store.get_reminder(series.id, now=NOW - timedelta(seconds=1))
    assert now is not None
    assert now.status is ReminderStatus.PENDING
    assert now.due_at == NOW  # the 41st occurrence waits
    assert now.last_firing is not None
    assert now.last_firing.due_at == NOW - DAY
    assert now.last_firing.state is FiringState.SENT
    [listed] = await store.list_reminders("ana", now=NOW - timedelta(seconds=1))
    assert (listed.due_at, listed.last_firing) == (now.due_at, now.last_firing)


async def test_a_series_behind_for_longer_than_the_first_look_is_found(store: Store) -> None:
    """Nothing rang for 20 days (an outage): the latest instants the reader looks at first
    hold no ring, its first rings are pruned, and it looks further back."""
    series = await _daily(store, 20)
    await _prune(store, NOW - 5 * DAY)

    now = await store.get_reminder(series.id, now=NOW)
    assert now is not None
    assert now.status is ReminderStatus.PENDING
    assert now.due_at == START + 20 * DAY  # overdue: it rings at once when workers are back
    assert now.last_firing is not None
    assert now.last_firing.due_at == START + 19 * DAY
    [pending] = await store.list_reminders("ana", status=ReminderStatus.PENDING, now=NOW)
    assert pending.due_at == now.due_at


async def test_an_edit_keeps_the_last_ring_for_readers_of_the_new_version(store: Store) -> None:
    series = await _daily(store, 3)
    current = await store.get_reminder(series.id, now=START + 3 * DAY)
    assert current is not None
    assert current.last_firing is not None
    rang = current.last_firing

    saved = await store.update_reminder(
        edited(current, text="Water the tomatoes", updated_at=START + 3 * DAY),
        expected_version=current.version,
        waiting=current.due_at,
    )
    assert saved is not None
    assert saved.last_firing == rang
    again = await store.get_reminder(series.id, now=START + 3 * DAY)
    assert again is not None
    assert (again.version, again.due_at, again.last_firing) == (2, START + 3 * DAY, rang)

    cancelled = await store.cancel_reminder(series.id, now=START + 3 * DAY)
    assert cancelled is not None
    assert cancelled.status is ReminderStatus.CANCELLED
    assert cancelled.last_firing == rang


async def test_a_reminders_firings_are_listed_newest_first_across_its_edits(
    store: Store,
) -> None:
    """Each ring names the ring before it, the first of a version the last one its edit
    read: the list walks back through both versions, with no index by reminder."""
    series = await _daily(store, 3)
    current = await store.get_reminder(series.id, now=START + 3 * DAY)
    assert current is not None
    edited_series = await store.update_reminder(
        edited(current, text="Water the tomatoes", updated_at=START + 3 * DAY),
        expected_version=current.version,
        waiting=current.due_at,
    )
    assert edited_series is not None
    for n in (3, 4):
        now = await store.get_reminder(series.id, now=START + n * DAY)
        assert now is not None
        await _ring(store, now, START + n * DAY)

    listed = await store.list_firings(series.id)
    assert [firing.due_at for firing in listed] == [START + n * DAY for n in (4, 3, 2, 1, 0)]
    assert [firing.text for firing in listed[:2]] == ["Water the tomatoes"] * 2
    assert [firing.due_at for firing in await store.list_firings(series.id, limit=2)] == [
        START + 4 * DAY,
        START + 3 * DAY,
    ]


def _literal(backend: str, instant: datetime | None) -> str:
    """An instant as the backend's SQL stores it."""
    if instant is None:
        return "NULL"
    if backend == "sqlite":
        return str((instant - codec.EPOCH) // timedelta(microseconds=1))
    return f"'{instant.isoformat()}'::timestamptz"


async def test_a_database_of_the_release_before_shows_and_lists_its_rings(
    db_url: str, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A series edited after two rings, written by the release before readers looked by
    timeline (its last ring findable only as its newest firing by id, no ring naming the one
    before it): migrated, it shows its last ring and lists both."""
    knowing(monkeypatch, backend, [m for m in migrations_for(backend) if m.version < 32])
    store = await open_store(db_url)
    try:
        await store.migrate()
    finally:
        await store.close()
    monkeypatch.undo()
    t0, t1, t2 = START, START + DAY, START + 2 * DAY
    series = reminder(due_at=t0, rule="FREQ=DAILY", created_at=START - DAY)
    at = partial(_literal, backend)
    rows = [
        "INSERT INTO reminders (id, owner, shard, text, channel, zone, anchor, rule, status,"
        " due_at, bucket, freshness, version, created_at, updated_at) VALUES"
        f" ('{series.id}', 'ana', {series.shard}, 'Water', 'webhook', 'Europe/Paris',"
        f" '{codec.anchor_to_text(series.schedule.anchor)}', 'FREQ=DAILY', 'pending',"
        f" {at(t2)}, {bucket_of(t2)}, 600, 2, {at(t0)}, {at(t1)})",
        *(
            "INSERT INTO firings (id, reminder_id, owner, shard, due_at, deadline, channel, text,"
            f" state, attempts, created_at) VALUES ('{firing_id(series.id, due)}', '{series.id}',"
            f" 'ana', {series.shard}, {at(due)}, {at(due + DAY)}, 'webhook', 'Water', 'sent', 1,"
            f" {at(due)})"
            for due in (t0, t1)
        ),
        *(
            "INSERT INTO rings (due_at, reminder_id, version, repeat, next_due, taken) VALUES"
            f" ({at(due)}, '{series.id}', 1, {'false' if backend == 'postgres' else 0},"
            f" {at(following)}, {taken})"
            for due, following, taken in (
                (t0, t1, "false" if backend == "postgres" else 0),
                (t1, t2, "false" if backend == "postgres" else 0),
                (t2, None, "true" if backend == "postgres" else 1),
            )
        ),
        "INSERT INTO due (lane, rank, bucket, due_at, reminder_id, version, shard) VALUES"
        f" ({series.shard // 64}, 0, {bucket_of(t2)}, {at(t2)}, '{series.id}', 2,"
        f" {series.shard})",
    ]
    for row in rows:
        await raw_execute(db_url, row)

    store = await open_store(db_url)
    try:
        await store.migrate()
        now = await store.get_reminder(series.id, now=t2 - timedelta(hours=1))
        listed = await store.list_firings(series.id)
        # Its firings by their ids (on PostgreSQL keyed by due second and reminder since
        # migration 0034, the ids no longer stored): a done finds its ring.
        done = await store.mark_done(firing_id(series.id, t0), t2)
    finally:
        await store.close()
    assert now is not None
    assert (now.status, now.due_at, now.version) == (ReminderStatus.PENDING, t2, 2)
    assert now.last_firing is not None
    assert (now.last_firing.due_at, now.last_firing.state) == (t1, FiringState.SENT)
    assert now.last_firing.id == firing_id(series.id, t1)
    assert [(firing.id, firing.due_at) for firing in listed] == [
        (firing_id(series.id, t1), t1),
        (firing_id(series.id, t0), t0),
    ]
    assert done is not None
    assert (done.id, done.done_at) == (firing_id(series.id, t0), t2)
