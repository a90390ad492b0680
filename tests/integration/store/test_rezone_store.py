"""The store's side of `tocsin rezone`, on both backends: recorded tzdata releases, pages of
pending reminders by zone, and moves that lose to a claim or an edit."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from tests.integration.store.factories import LEASE, NOW, claim, reminder
from tocsin.domain import Reminder
from tocsin.store import Store
from tocsin.store.base import Move
from tocsin.store.codec import bucket_of

HOUR = timedelta(hours=1)


def _move(target: Reminder, shift: timedelta = HOUR) -> Move:
    assert target.due_at is not None
    return Move(
        reminder_id=target.id,
        shard=target.shard,
        version=target.version,
        was=target.due_at,
        due_at=target.due_at + shift,
    )


async def test_zone_data_is_recorded_once_per_release_until_forgotten(store: Store) -> None:
    first = await store.note_zone_data("2022a", {"Europe/Paris": "aa", "America/Nuuk": "bb"})
    again = await store.note_zone_data("2022a", {"Europe/Paris": "changed"})
    both = await store.note_zone_data("2026a", {"Europe/Paris": "aa", "America/Nuuk": "cc"})
    await store.forget_zone_data(keep="2026a")
    left = await store.note_zone_data("2026a", {})

    assert first == again == {"2022a": {"Europe/Paris": "aa", "America/Nuuk": "bb"}}
    assert both == {**first, "2026a": {"Europe/Paris": "aa", "America/Nuuk": "cc"}}
    assert left == {"2026a": {"Europe/Paris": "aa", "America/Nuuk": "cc"}}


async def test_pending_in_zones_pages_by_id_with_bounded_scans(store: Store) -> None:
    made = [
        replace(r, schedule=replace(r.schedule, zone=zone))
        for n, zone in enumerate(["Europe/Paris", "America/Nuuk"] * 5)
        for r in [reminder(f"owner-{n}", created_at=NOW + timedelta(seconds=n))]
    ]
    await store.add_reminders(made)
    await store.cancel_reminder(made[3].id, now=NOW)  # a Nuuk one, no longer pending
    wanted = sorted(r.id for r in made if r.schedule.zone == "America/Nuuk" and r != made[3])

    found, after, pages = [], "", 0
    while True:
        page = await store.pending_in_zones({"America/Nuuk"}, after_id=after, scan=3)
        found += [row.reminder_id for row in page.rows]
        assert len(page.rows) <= 3
        if page.last_id is None:
            break
        after, pages = page.last_id, pages + 1

    assert found == wanted
    assert pages == 4  # 10 rows, 3 a page
    [row] = (await store.pending_in_zones({"America/Nuuk"}, after_id="", scan=2)).rows
    assert row.schedule == made[1].schedule
    assert (row.due_at, row.version, row.shard) == (made[1].due_at, 1, made[1].shard)


async def test_reschedule_moves_only_rows_still_as_read(store: Store) -> None:
    moved, edited, rung, cancelled = (reminder(f"o{n}") for n in range(4))
    await store.add_reminders([moved, edited, rung, cancelled])
    await store.update_reminder(
        replace(edited, text="new text"), expected_version=1, waiting=edited.due_at
    )
    await store.claim([claim(rung)], sender="worker-1", now=NOW, lease=LEASE)
    await store.cancel_reminder(cancelled.id, now=NOW)

    done = await store.reschedule(
        [_move(moved), _move(edited), _move(rung), _move(cancelled)], now=NOW + HOUR
    )

    assert done == [moved.id]
    saved = await store.get_reminder(moved.id)
    assert saved is not None
    assert moved.due_at is not None
    assert (saved.due_at, saved.version, saved.updated_at) == (moved.due_at + HOUR, 2, NOW + HOUR)
    due = await store.load_due(
        shards=range(1024),
        first_bucket=bucket_of(moved.due_at),
        last_bucket=bucket_of(moved.due_at + HOUR),
        limit=10,
    )
    assert [(ring.reminder_id, ring.due_at) for ring in due if ring.reminder_id == moved.id] == [
        (moved.id, moved.due_at + HOUR)
    ]
    assert await store.reschedule([_move(moved)], now=NOW) == []  # read before the move
