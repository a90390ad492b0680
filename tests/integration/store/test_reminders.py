"""The API's side of the store: reminders, idempotency, snoozes, firings, on both backends."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.store.factories import LEASE, NOW, claim, edited, reminder, result
from tocsin.domain import FiringState, IdempotencyRecord, ReminderStatus, Schedule
from tocsin.errors import CapReached, DuplicateIdempotencyKey, StoreError
from tocsin.store import Store


def idempotency(key: str = "k1", body: bytes = b'{"id": "x"}') -> IdempotencyRecord:
    return IdempotencyRecord(
        scope="phone", key=key, request_hash="h1", status_code=201, body=body, created_at=NOW
    )


async def test_a_saved_reminder_reads_back_as_given(store: Store) -> None:
    one_off = reminder(metadata={"b": [1, 2], "a": {"z": None}, "text": "é ✓"})
    series = reminder(rule="FREQ=DAILY;BYHOUR=10;BYMINUTE=0")
    await store.add_reminders([one_off, series])

    assert await store.get_reminder(one_off.id) == one_off
    assert await store.get_reminder(series.id) == series
    assert await store.get_reminder("0000000000000000") is None


async def test_instants_keep_their_microseconds_and_come_back_utc(store: Store) -> None:
    due = datetime(2026, 3, 2, 10, 0, 0, 123456, tzinfo=UTC)
    saved = reminder(due_at=due, created_at=NOW + timedelta(microseconds=7))
    await store.add_reminders([saved])

    got = await store.get_reminder(saved.id)
    assert got is not None
    assert got.due_at == due
    assert got.created_at == NOW + timedelta(microseconds=7)
    assert got.due_at is not None
    assert got.due_at.utcoffset() == timedelta(0)


async def test_anchors_keep_local_or_absolute(store: Store) -> None:
    local = reminder(rule="FREQ=DAILY")
    absolute = replace(reminder(), schedule=Schedule(zone="UTC", anchor=NOW))
    await store.add_reminders([local, absolute])

    got_local = await store.get_reminder(local.id)
    got_absolute = await store.get_reminder(absolute.id)
    assert got_local is not None
    assert got_local.schedule.anchor.tzinfo is None
    assert got_absolute is not None
    assert got_absolute.schedule.anchor == NOW


async def test_a_batch_is_all_or_nothing(store: Store) -> None:
    first = reminder()
    await store.add_reminders([first])
    fresh = reminder()

    with pytest.raises(StoreError):
        await store.add_reminders([fresh, first])  # first's id exists already

    assert await store.get_reminder(fresh.id) is None


async def test_a_thousand_reminders_save_in_one_call(store: Store) -> None:
    batch = [reminder(f"owner-{n}") for n in range(1000)]
    await store.add_reminders(batch)

    assert await store.get_reminder(batch[-1].id) == batch[-1]


async def test_a_pending_reminder_needs_a_due_time(store: Store) -> None:
    broken = replace(reminder(), due_at=None)

    with pytest.raises(StoreError):
        await store.add_reminders([broken])


async def test_idempotency_record_is_saved_with_the_reminders(store: Store) -> None:
    saved = reminder()
    await store.add_reminders([saved], idempotency=idempotency())

    assert await store.find_idempotency("phone", "k1") == idempotency()
    assert await store.find_idempotency("phone", "k2") is None
    assert await store.find_idempotency("calendar", "k1") is None


async def test_a_duplicate_idempotency_key_saves_nothing(store: Store) -> None:
    await store.add_reminders([reminder()], idempotency=idempotency())
    second = reminder()

    with pytest.raises(DuplicateIdempotencyKey):
        await store.add_reminders([second], idempotency=idempotency(body=b"other"))

    assert await store.get_reminder(second.id) is None
    assert await store.find_idempotency("phone", "k1") == idempotency()


async def test_a_batch_and_its_idempotency_record_save_together(store: Store) -> None:
    # One reminder and several go through different statements: both keep the key with them.
    first = [reminder(), reminder()]
    await store.add_reminders(first, idempotency=idempotency())
    second = [reminder(), reminder()]

    with pytest.raises(DuplicateIdempotencyKey):
        await store.add_reminders(second, idempotency=idempotency(body=b"other"))

    assert [await store.get_reminder(r.id) for r in first] == first
    assert [await store.get_reminder(r.id) for r in second] == [None, None]
    assert await store.find_idempotency("phone", "k1") == idempotency()


async def test_concurrent_requests_with_one_key_save_once(store: Store) -> None:
    batches = [[reminder()] for _ in range(4)]

    outcomes = await asyncio.gather(
        *(store.add_reminders(batch, idempotency=idempotency()) for batch in batches),
        return_exceptions=True,
    )

    assert sum(outcome is None for outcome in outcomes) == 1
    assert all(isinstance(o, DuplicateIdempotencyKey) for o in outcomes if o is not None)


async def test_list_pages_by_id_per_owner_and_status(store: Store) -> None:
    mine = [reminder("ana", created_at=NOW + timedelta(seconds=n)) for n in range(5)]
    await store.add_reminders([*mine, reminder("bob")])
    await store.cancel_reminder(mine[1].id, now=NOW)

    first = await store.list_reminders("ana", limit=2)
    rest = await store.list_reminders("ana", after_id=first[-1].id, limit=10)
    pending = await store.list_reminders("ana", status=ReminderStatus.PENDING)
    cancelled = await store.list_reminders("ana", status=ReminderStatus.CANCELLED)

    assert [r.id for r in first + rest] == [r.id for r in mine]
    assert [r.id for r in pending] == [r.id for i, r in enumerate(mine) if i != 1]
    assert [r.id for r in cancelled] == [mine[1].id]
    assert await store.list_reminders("carol") == []


async def test_update_applies_only_at_the_expected_version(store: Store) -> None:
    original = reminder(metadata={"v": 1})
    await store.add_reminders([original])
    later = NOW + timedelta(minutes=1)
    change = edited(
        original, text="Feed the cat", due_at=NOW + timedelta(hours=1), updated_at=later
    )

    saved = await store.update_reminder(change, expected_version=1, waiting=original.due_at)
    stale = await store.update_reminder(
        edited(original, text="lost"), expected_version=1, waiting=original.due_at
    )

    assert saved is not None
    assert saved == replace(change, version=2)
    assert stale is None
    assert await store.get_reminder(original.id) == saved


async def test_update_can_move_a_reminder_to_ended_and_back(store: Store) -> None:
    original = reminder(rule="FREQ=DAILY")
    await store.add_reminders([original])

    ended = await store.update_reminder(
        edited(original, status=ReminderStatus.ENDED, due_at=None),
        expected_version=1,
        waiting=original.due_at,
    )

    assert ended is not None
    assert ended.status is ReminderStatus.ENDED
    assert ended.due_at is None
    due = await store.load_due(shards=range(1024), first_bucket=0, last_bucket=2**31 - 1, limit=9)
    assert due == []


async def test_cancel_only_a_pending_reminder(store: Store) -> None:
    original = reminder()
    await store.add_reminders([original])

    cancelled = await store.cancel_reminder(original.id, now=NOW + timedelta(seconds=5))
    again = await store.cancel_reminder(original.id, now=NOW + timedelta(seconds=6))

    assert cancelled is not None
    assert cancelled.status is ReminderStatus.CANCELLED
    assert cancelled.due_at is None
    assert cancelled.version == 2
    assert cancelled.updated_at == NOW + timedelta(seconds=5)
    assert again is None
    assert await store.cancel_reminder("0000000000000000", now=NOW) is None


async def test_snooze_a_firing_once(store: Store) -> None:
    series = reminder(rule="FREQ=DAILY")
    await store.add_reminders([series])
    assert series.due_at is not None
    [firing] = await store.claim(
        [claim(series, next_due_at=series.due_at + timedelta(days=1))],
        sender="worker-1",
        now=NOW,
        lease=LEASE,
    )
    assert await store.record_attempts([result(firing)]) == 1  # it rang
    first = replace(reminder(), snoozed_from=firing.id)
    second = reminder()

    assert await store.snooze_firing(firing.id, first) == first.id
    assert await store.snooze_firing(firing.id, second) == first.id  # by the first, already
    assert await store.snooze_firing("nope.1", reminder()) is None

    assert await store.get_reminder(first.id) == first
    assert await store.get_reminder(second.id) is None
    [listed] = await store.list_firings(series.id)
    assert listed.snoozed_by == first.id


async def test_the_last_firing_shows_on_the_reminder(store: Store) -> None:
    series = reminder(rule="FREQ=DAILY")
    await store.add_reminders([series])
    assert series.due_at is not None
    day = timedelta(days=1)
    await store.claim(
        [claim(series, next_due_at=series.due_at + day)], sender="w", now=NOW, lease=LEASE
    )
    moved = await store.get_reminder(series.id)
    assert moved is not None
    assert moved.due_at is not None
    await store.claim(
        [claim(moved, next_due_at=moved.due_at + day, state=FiringState.EXPIRED)],
        sender="w",
        now=NOW,
        lease=LEASE,
    )

    got = await store.get_reminder(series.id)
    [listed] = await store.list_reminders(series.owner)

    assert got is not None
    assert got.last_firing is not None
    assert got.last_firing.due_at == moved.due_at
    assert got.last_firing.state is FiringState.EXPIRED
    assert listed.last_firing == got.last_firing


async def test_a_single_save_past_its_cap_saves_nothing(store: Store) -> None:
    mine = [replace(reminder(), source="x") for _ in range(3)]
    for saved in mine[:2]:
        await store.add_reminders([saved], cap=2)

    with pytest.raises(CapReached):
        await store.add_reminders([mine[2]], idempotency=idempotency(), cap=2)
    await store.add_reminders([replace(reminder(), source="y")], cap=2)  # another app's room
    await store.add_reminders([reminder("bob")], cap=2)
    counts = await store.pending_counts([("ana", "x"), ("ana", "y"), ("bob", "phone")], up_to=5)

    assert await store.get_reminder(mine[2].id) is None
    assert await store.find_idempotency("phone", "k1") is None
    assert counts == {("ana", "x"): 2, ("ana", "y"): 1, ("bob", "phone"): 1}
