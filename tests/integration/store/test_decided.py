"""An occurrence is decided by its key in `rings`: a claim's ring or an API write's `taken`
row, the first of the two to insert it. The occurrence's row of `due` stays until tidying:
loads and the sweep pass it by, and a claim never writes it."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timedelta

import asyncpg
import pytest

from tests.integration.engine.support import eventually
from tests.integration.store.factories import LEASE, NOW, claim, reminder
from tocsin.store import Store, open_store
from tocsin.store.codec import bucket_of
from tocsin.store.ports.upkeep import Pruned

ALL = range(1024)
AFTER = NOW + timedelta(hours=1)


async def _loaded(store: Store) -> set[str]:
    rows = await store.load_due(
        shards=ALL, first_bucket=0, last_bucket=bucket_of(AFTER), limit=1000
    )
    return {row.reminder_id for row in rows}


async def test_a_claimed_occurrence_stays_until_tidied_and_is_never_loaded_again(
    store: Store, backend: str
) -> None:
    rung, waiting = reminder("ana"), reminder("bob")
    await store.add_reminders([rung, waiting])
    [fired] = await store.claim([claim(rung)], sender="w", now=NOW, lease=LEASE)
    assert fired.reminder_id == rung.id

    assert await _loaded(store) == {waiting.id}
    saved, _ = await store.load_saved(
        shards=ALL, since=None, last_bucket=bucket_of(AFTER), limit=10
    )
    assert {row.reminder_id for row in saved} == {waiting.id}
    assert await store.claim([claim(rung)], sender="w", now=NOW, lease=LEASE) == []

    # SQLite tidies what was decided, in minutes before its bound. PostgreSQL keeps it in
    # its month, which goes whole once every part is a day past it (test_months.py).
    assert rung.due_at is not None
    early = await _prune(store, due_before=rung.due_at)
    assert early.occurrences == 0
    tidied = await _prune(store, due_before=AFTER)
    assert tidied.occurrences == (1 if backend == "sqlite" else 0)
    assert await _loaded(store) == {waiting.id}
    assert (await _prune(store, due_before=AFTER)).occurrences == 0


async def test_an_occurrence_taken_back_is_decided_for_the_claim_of_its_load(
    store: Store,
) -> None:
    one_off = reminder()
    await store.add_reminders([one_off])
    assert one_off.due_at is not None
    loaded = claim(one_off)
    moved = await store.update_reminder(
        replace(one_off, due_at=one_off.due_at + timedelta(minutes=1)),
        expected_version=1,
        waiting=one_off.due_at,
    )
    assert moved is not None

    assert await store.claim([loaded], sender="w", now=NOW, lease=LEASE) == []
    [fired] = await store.claim([claim(moved)], sender="w", now=NOW, lease=LEASE)
    assert fired.due_at == moved.due_at


async def test_an_edit_after_the_claim_finds_the_occurrence_decided(store: Store) -> None:
    one_off = reminder()
    await store.add_reminders([one_off])
    assert one_off.due_at is not None
    await store.claim([claim(one_off)], sender="w", now=NOW, lease=LEASE)

    # Its row of `due` is still there; the ring's key says it rang.
    late = await store.update_reminder(
        replace(one_off, text="Too late"), expected_version=1, waiting=one_off.due_at
    )
    assert late is None
    assert await store.cancel_reminder(one_off.id, now=NOW) is None


@pytest.mark.postgres
async def test_a_claim_that_meets_a_key_decided_since_its_snapshot_runs_again(
    pg_migrated_url: str,
) -> None:
    """An API write inserts the `taken` row of an occurrence while a claim of it runs: the
    claim's insert waits for it, fails once it commits, and the claim, run again, rings the
    rest of its batch and not that one."""
    store = await open_store(pg_migrated_url)
    writer = await asyncpg.connect(pg_migrated_url)
    try:
        raced, other = reminder("ana"), reminder("bob")
        await store.add_reminders([raced, other])
        transaction = writer.transaction()
        await transaction.start()
        await writer.execute(
            "INSERT INTO rings (due_at, reminder_id, version, repeat, next_due, taken)"
            " VALUES ($1, $2, 1, false, NULL, true)",
            raced.due_at,
            raced.id,
        )
        claiming = asyncio.create_task(
            store.claim([claim(raced), claim(other)], sender="w", now=NOW, lease=LEASE)
        )

        async def waiting_for_the_writer() -> bool:
            waits = await writer.fetchval(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE wait_event_type = 'Lock' AND wait_event = 'transactionid'"
                " AND datname = current_database()"
            )
            return bool(waits)

        await eventually(waiting_for_the_writer, within=30)
        await transaction.commit()
        firings = await claiming
    finally:
        await writer.close()
        await store.close()

    assert [f.reminder_id for f in firings] == [other.id]


async def _prune(store: Store, *, due_before: datetime) -> Pruned:
    long_ago = NOW - timedelta(days=365)
    return await store.prune(
        firings_before=long_ago,
        reminders_before=long_ago,
        keys_before=long_ago,
        limit=100,
        due_before=due_before,
    )
