"""Upgrading a database of a release before 0021 with the service running (PostgreSQL): that
release kept each reminder's next occurrence in its own row. `tocsin migrate
--before-upgrade` copies the pending ones into `due` (0035) while the release before could
still run, whose writes after the copy (an edit, a cancel, a claim, a new reminder: stood in
for by the statements it ran) the migration's trigger keeps; then this release's `tocsin api`
and `tocsin worker` start on it and `tocsin migrate` applies the rest (0036, 0037) under them
while the reminders ring, an API process of the release before still writing beside them
until then. Each pending reminder rings once, at the time its last write gave it; nothing
cancelled or already rung by the release before rings; a series lists the rings the release
before sent, by the ring before each."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import httpx
import pytest

from tests.e2e.service import logs, service
from tests.e2e.test_online_migration import SETTINGS, _migrate
from tests.integration.engine.support import eventually, receiver
from tests.integration.store.schema import knowing, migrate_database
from tests.integration.store.test_online_copy import CANCELLED, RELEASES
from tocsin.ids import firing_id, new_reminder_id, shard_of
from tocsin.store.migrations import migrations_for

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.long]

ONE_OFFS = 48  # due 4 a second over 10 seconds; the last 8 later (`_late_of`)
LEAD = timedelta(seconds=10)  # how long before its minute starts a worker reads it (the loader's)
SERIES = 8  # daily, each rung twice by the release before, due one a second

SAVED = """
INSERT INTO reminders (id, owner, shard, text, channel, zone, anchor, rule, at, status,
    due_at, bucket, freshness, version, created_at, updated_at, rang_due_at)
VALUES ($1, 'ana', $2, $3, 'webhook', 'UTC', $4, $5, $6, 'pending', $7,
    floor(extract(epoch FROM $7::timestamptz) / 60)::int, 600, 1, now(), now(), $8)
"""
SENT = """
INSERT INTO firings (id, reminder_id, owner, shard, due_at, deadline, channel, text, state,
    attempts, created_at)
VALUES ($1, $2, 'ana', $3, $4::timestamptz, $4::timestamptz + interval '1 day', 'webhook', 'Water',
    'sent', 1, $4::timestamptz)
"""


def _minute_after(instant: datetime) -> datetime:
    return instant.replace(second=0) + timedelta(minutes=1)


def _due_of(n: int, start: datetime) -> datetime:
    """When the `n`th one-off is due: four a second from `start`; the last eight, which an API
    process of the release before edits and cancels once this release's workers have read
    them, 15 s into the first minute that starts 20 s after `start` (well after the workers
    start): they are read 10 s before it starts, and edited after that."""
    if n < 40:
        return start + timedelta(seconds=n // 4)
    return _minute_after(start + timedelta(seconds=20)) + timedelta(seconds=15 + (n - 40) // 4)


async def _save(
    connection: asyncpg.Connection, text: str, due: datetime, *, daily: bool = False
) -> str:
    """A reminder as the release before saved it; a daily one rung twice before `due`."""
    shard = shard_of("ana")
    made = new_reminder_id(shard, datetime.now(UTC))
    rang = [due - timedelta(days=2), due - timedelta(days=1)] if daily else []
    anchor = (rang[0] if daily else due).replace(tzinfo=None).isoformat()
    rule = "FREQ=DAILY" if daily else None
    at = None if daily else due.isoformat()
    await connection.execute(
        SAVED, made, shard, text, anchor, rule, at, due, rang[-1] if rang else None
    )
    for instant in rang:
        await connection.execute(SENT, firing_id(made, instant), made, shard, instant)
    return made


@pytest.mark.timeout(300)
async def test_a_database_before_0021_upgrades_while_its_reminders_ring(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before_0021 = RELEASES["0020"]
    knowing(
        monkeypatch,
        "postgres",
        [m for m in migrations_for("postgres") if m.version <= before_0021.through],
    )
    await migrate_database(pg_url)
    monkeypatch.undo()
    start = (datetime.now(UTC) + timedelta(seconds=40)).replace(microsecond=0)
    connection = await asyncpg.connect(pg_url)
    try:
        one_offs = [await _save(connection, f"o{n}", _due_of(n, start)) for n in range(ONE_OFFS)]
        series = [
            await _save(connection, f"s{n}", start + timedelta(seconds=n), daily=True)
            for n in range(SERIES)
        ]
        before = await asyncio.to_thread(_migrate, pg_url, "--before-upgrade")
        later = before_0021.edited.replace("10 minutes", "3 seconds")
        # The release before goes on after the copy: it edits four (three seconds later),
        # cancels four, rings four one-offs and a series' occurrence, and saves four more;
        # then its workers stop.
        for one in one_offs[0:4]:
            await connection.execute(later, one)
        for one in one_offs[4:8]:
            await connection.execute(CANCELLED, one)
        for one in [*one_offs[8:12], series[0]]:
            async with connection.transaction():
                await connection.execute(before_0021.claimed, one)
        saved_late = [
            await _save(connection, f"n{n}", start + timedelta(seconds=2)) for n in range(4)
        ]
    finally:
        await connection.close()

    with receiver() as sink, service("postgres", tmp_path, pg_url, sink, SETTINGS) as base:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            # This release's workers run, and an API process of the release before still
            # takes writes beside its own: it edits four more and cancels four more, once
            # the workers have read them (a claim of what was read before an edit or a
            # cancel of the release before rings nothing).
            read = _due_of(40, start).replace(second=0) - LEAD + timedelta(seconds=4)
            await asyncio.sleep(max(0.0, (read - datetime.now(UTC)).total_seconds()))
            connection = await asyncpg.connect(pg_url)
            try:
                for one in one_offs[40:44]:
                    await connection.execute(later, one)
                for one in one_offs[44:48]:
                    await connection.execute(CANCELLED, one)
                due = {
                    row["id"]: row["due_at"]
                    for row in await connection.fetch(
                        "SELECT id, due_at FROM reminders WHERE status = 'pending'"
                    )
                }
            finally:
                await connection.close()
            expected = {
                firing_id(one, due[one])
                for one in [*one_offs[0:4], *one_offs[12:44], *saved_late, *series[1:]]
            }

            async def rang() -> bool:
                return set((await sink.astats(ids=True))["arrivals"]) >= expected

            after = await asyncio.to_thread(_migrate, pg_url)
            migrated_at = datetime.now(UTC)
            await eventually(rang, within=120, every=0.5)
            await asyncio.sleep(3)  # for a ring that should not come
            listed = (await client.get(f"/v1/reminders/{series[1]}/firings")).json()
        stats = await sink.astats(ids=True)

    assert "0035_occurrences_copied" in before
    assert "0037_occurrences_kept_in_due: applies after the upgrade" in before
    assert after.startswith(
        "applied migrations: 0036_firings_keyed_alone, 0037_occurrences_kept_in_due"
    )
    assert migrated_at < _due_of(ONE_OFFS - 1, start), "migrated while due"
    assert set(stats["arrivals"]) == expected, "each pending reminder, nothing else"
    edited = [*range(0, 4), *range(40, 44)]
    assert [due[one_offs[n]] for n in edited] == [
        _due_of(n, start) + timedelta(seconds=3) for n in edited
    ]
    assert stats["duplicates"] == 0
    ring = due[series[1]]
    assert [firing["id"] for firing in listed["firings"]] == [
        firing_id(series[1], ring - timedelta(days=back)) for back in (0, 1, 2)
    ]
    said = logs(tmp_path)
    assert "Traceback" not in said
