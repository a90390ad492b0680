"""What a part's loaders read first, on both backends, with the clock driven: an urgent row
behind a full part of bulk rows is read at once, and a part behind takes its backlog oldest
first, whatever wake-ups come for later minutes meanwhile."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from tests.integration.engine.support import reminder
from tocsin.clock import FakeClock
from tocsin.domain import Claim, FiringState, Priority, Reminder
from tocsin.ids import part_of_shard, part_shards, shard_of
from tocsin.scheduler.loader import LoadTuning, PartLoader, PartWatermark
from tocsin.scheduler.timeline import Timeline
from tocsin.store import Store

NOW = datetime(2026, 3, 2, 18, 0, 10, tzinfo=UTC)
OWNER = "ana"
PART = part_of_shard(shard_of(OWNER), 16)
SMALL = LoadTuning(max_held=100, page=40, low_water=20)


def loaders(store: Store, timeline: Timeline, clock: FakeClock) -> dict[Priority, PartLoader]:
    """The part's two loaders, as the engine makes them for a part it takes."""
    shared = PartWatermark(store, part=PART, worker="w", watermark=None)
    return {
        priority: PartLoader(
            PART,
            part_shards(PART, 16),
            store,
            timeline,
            clock,
            priority=priority.rank,
            watermark=shared,
            tuning=SMALL,
        )
        for priority in Priority
    }


def due(at: datetime, text: str, priority: Priority = Priority.URGENT) -> Reminder:
    return replace(
        reminder(OWNER, now=NOW - timedelta(hours=1), at=at, text=text), priority=priority
    )


async def test_an_urgent_row_behind_a_full_part_of_bulk_is_read_at_once(store: Store) -> None:
    """300 bulk rows due at 18:00:15 fill the part (100 held); three urgent rows due at
    18:00:17, after every one of them, are held at once all the same: they have room of
    their own. Read in one stream by due order, they would wait until 200 bulk rows had been
    claimed."""
    bulk = [due(NOW + timedelta(seconds=5), f"bulk {n}", Priority.BULK) for n in range(300)]
    urgent = [due(NOW + timedelta(seconds=7), f"urgent {n}") for n in range(3)]
    await store.add_reminders(bulk)
    await store.add_reminders(urgent)
    timeline, clock = Timeline(), FakeClock(NOW)

    for loader in loaders(store, timeline, clock).values():
        await loader.step()

    assert timeline.held(PART, Priority.BULK.rank) == SMALL.max_held
    assert timeline.held(PART, Priority.URGENT.rank) == len(urgent)
    taken = timeline.take_due(NOW + timedelta(seconds=7))
    assert {entry.reminder_id for entry in taken if not entry.priority} == {r.id for r in urgent}


async def test_a_part_behind_takes_its_backlog_oldest_first(store: Store) -> None:
    """A part two minutes behind holds 100 of its 300 overdue rows; rows saved for the
    current minute wake it. The wake-up does not read the current minute ahead of the older
    rows still unread: as the part drains, what it takes in next is the backlog, in due
    order, and the current minute's rows come after it."""
    old = [due(NOW - timedelta(seconds=100 + n % 50), f"old {n}") for n in range(300)]
    await store.add_reminders(old)
    timeline, clock = Timeline(), FakeClock(NOW)
    loader = loaders(store, timeline, clock)[Priority.URGENT]
    await loader.step()
    assert timeline.held(PART) == SMALL.max_held

    fresh = [due(NOW + timedelta(seconds=3), f"fresh {n}") for n in range(50)]
    await store.add_reminders(fresh)
    order: list[tuple[datetime, str]] = []
    for _ in range(len(old) + len(fresh)):  # a step takes in at least one row
        for row in fresh:
            assert row.due_at is not None
            loader.wake(row.due_at)
        taken = timeline.take_due(NOW + timedelta(seconds=3))
        if not taken:
            break
        order += sorted(entry.order() for entry in taken)
        await store.claim(
            [
                Claim(
                    reminder_id=entry.reminder_id,
                    due_at=entry.due_at,
                    version=entry.version,
                    next_due_at=None,
                    state=FiringState.SENDING,
                    content=entry.content,
                )
                for entry in taken
            ],
            sender="w",
            now=NOW,
            lease=timedelta(seconds=30),
        )
        timeline.release(taken)
        await loader.step()

    assert len(order) == len(old) + len(fresh)
    assert order == sorted(order), "a later row was taken in before an older one"
