"""PostgreSQL's `due` by month (migration 0024): retention makes the months ahead, taking
their rows from the default partition, and drops a month whole once every part's watermark
is a day past it and nothing in it is undecided."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import asyncpg
import pytest

from tests.integration.engine.support import eventually
from tests.integration.store.factories import LEASE, NOW, claim, reminder
from tocsin.store import Store
from tocsin.store.codec import bucket_of
from tocsin.store.ports.upkeep import Pruned
from tocsin.store.postgres import months
from tocsin.store.postgres import queries as q

pytestmark = pytest.mark.postgres

ALL = range(1024)
LONG_AGO = NOW - timedelta(days=3650)
LATER = NOW + timedelta(days=92)  # three months on: March's month is a day behind every part


async def _months(url: str) -> dict[str, int]:
    connection = await asyncpg.connect(url)
    try:
        rows = await connection.fetch(
            "SELECT c.relname AS name, (SELECT count(*) FROM due AS d"
            " WHERE d.tableoid = c.oid) AS occurrences"
            " FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = 'due'::regclass"
        )
    finally:
        await connection.close()
    return {row["name"]: row["occurrences"] for row in rows}


async def _tidy(store: Store, now: datetime) -> Pruned:
    return await store.prune(
        firings_before=LONG_AGO,
        reminders_before=LONG_AGO,
        keys_before=LONG_AGO,
        limit=100,
        due_before=now,
    )


async def _watermarks_past(store: Store, instant: datetime) -> None:
    held = await store.renew_leases("w", parts=2, ttl=LEASE)
    for part in held.parts:
        swept = NOW
        assert await store.advance_watermark(
            "w", part=part, bucket=bucket_of(instant), swept_at=swept
        )


async def test_the_months_ahead_are_made_with_the_rows_waiting_outside_them(
    pg_store: Store, pg_migrated_url: str
) -> None:
    march, next_year = reminder("ana"), reminder("bob", due_at=NOW + timedelta(days=400))
    await pg_store.add_reminders([march, next_year])
    assert (await _months(pg_migrated_url)).get("due_outside") == 2

    for _ in range(13):  # a month a pass
        await _tidy(pg_store, NOW)

    months = await _months(pg_migrated_url)
    assert months["due_2026_03"] == 1  # taken from the default partition
    assert set(months) >= {f"due_2026_{n:02d}" for n in range(3, 13)} | {"due_2027_03"}
    assert months["due_outside"] == 1  # April 2027: beyond the months made
    loaded = await pg_store.load_due(
        shards=ALL, first_bucket=0, last_bucket=bucket_of(NOW + timedelta(days=500)), limit=10
    )
    assert {row.reminder_id for row in loaded} == {march.id, next_year.id}


async def test_a_load_while_a_month_is_made_reads_the_rows_it_moves(
    pg_store: Store, pg_migrated_url: str
) -> None:
    """A load that comes while a month is being made, with rows of it moved out of the default
    partition, waits for the month and reads them there: one planned before the month was
    attached and run once it was read neither the rows moved (gone from the default
    partition for its snapshot) nor the month (not in its plan)."""
    due_now = reminder("ana")
    await pg_store.add_reminders([due_now])
    first, after = months.bounds(months.month_of(NOW))
    making = await asyncpg.connect(pg_migrated_url)
    try:
        async with making.transaction():
            await making.execute(q.make_month(months.name_of(months.month_of(NOW)), first, after))
            loading = asyncio.create_task(
                pg_store.load_due(shards=ALL, first_bucket=first, last_bucket=after - 1, limit=10)
            )

            async def waiting() -> bool:
                return bool(
                    await making.fetchval(
                        "SELECT count(*) FROM pg_locks"
                        " WHERE NOT granted AND pid <> pg_backend_pid()"
                    )
                )

            await eventually(waiting, within=30)  # the load waits for the month's locks
        loaded = await loading
    finally:
        await making.close()

    assert [row.reminder_id for row in loaded] == [due_now.id]
    assert (await _months(pg_migrated_url))["due_2026_03"] == 1


async def test_a_month_goes_whole_once_decided_and_a_day_behind_every_part(
    pg_store: Store, pg_migrated_url: str
) -> None:
    for _ in range(13):  # March 2026 and the months after it made, a month a pass
        await _tidy(pg_store, NOW)
    rung, waiting = reminder("ana"), reminder("bob")
    await pg_store.add_reminders([rung, waiting])
    await pg_store.claim([claim(rung)], sender="w", now=NOW, lease=LEASE)
    await _watermarks_past(pg_store, LATER)

    kept = await _tidy(pg_store, LATER)  # `waiting` is undecided: March stays
    assert kept.occurrences == 0
    assert (await _months(pg_migrated_url))["due_2026_03"] == 2

    await pg_store.claim([claim(waiting)], sender="w", now=NOW, lease=LEASE)
    dropped = await _tidy(pg_store, LATER)
    assert dropped.occurrences == 2
    months = await _months(pg_migrated_url)
    assert "due_2026_03" not in months
    assert "due_2026_05" not in months  # empty, and behind every part
    assert "due_2026_06" in months  # not a day behind every part yet
    assert (await pg_store.get_reminder(rung.id)) is not None  # the rings went nowhere
