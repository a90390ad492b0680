"""Migrations 0034 and 0036 on PostgreSQL with the service running: 0034 keys the firings in
due order while the release before still reads and writes their ids (a column added, its
rows given their key in batches of pages, the key built CONCURRENTLY), goes on where it
stopped when a run fails half way, and says how far it is; 0036, applied after the upgrade,
leaves the key alone. The release before's processes are stood in for by what they write
(`INSERT … (id, …) ON CONFLICT (id)`, updates by id); this release's own processes running
through 0036 are tests/e2e/test_online_migration.py."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from tests.integration.store.schema import SNAPSHOTS, dump_postgres, knowing, migrate_database
from tests.integration.store.test_retention import _rung
from tocsin.cli import main
from tocsin.domain import FiringState
from tocsin.errors import StoreError
from tocsin.store import open_store
from tocsin.store.migrations import migrations_for

pytestmark = pytest.mark.postgres

KEYED_BY_ID = [m for m in migrations_for("postgres") if m.version < 34]
FIRST = 1_796_000_000  # the due second of the first firing of the history (2026-11-29)

# The history the release before kept: `$1` sent firings of 500 reminders, one a second.
HISTORY = """
INSERT INTO firings (
    id, reminder_id, owner, shard, due_at, deadline, channel, text, state, attempts, created_at
)
SELECT 'old' || n % 500 || '.' || ($2 + n), 'old' || n % 500, 'ana', n % 1024,
    to_timestamp($2 + n), to_timestamp($2 + n) + interval '1 day', 'webhook', 'Water', 'sent',
    1, to_timestamp($2 + n)
FROM generate_series(1, $1) AS n
"""

# What a process of the release before writes: a firing by its id, and a firing's outcome.
WRITTEN_BEFORE = """
INSERT INTO firings (
    id, reminder_id, owner, shard, due_at, deadline, channel, text, state, attempts, created_at
)
VALUES ('new' || $1::int || '.' || $2::bigint, 'new' || $1::int, 'ana', 7, to_timestamp($2),
    to_timestamp($2) + interval '1 day', 'webhook', 'Water', 'queued', 0, now())
ON CONFLICT (id) DO NOTHING
"""
TRIED_BEFORE = "UPDATE firings SET attempts = attempts + 1, last_error = 'tried' WHERE id = $1"

MISKEYED = "SELECT count(*) FROM firings WHERE due_second IS DISTINCT FROM firing_second(id)"


async def database_of_the_release_before(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database migrated as the release before left it (to 0033), with 20,000 firings of
    history written by id."""
    knowing(monkeypatch, "postgres", KEYED_BY_ID)
    await migrate_database(url)
    monkeypatch.undo()
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(HISTORY, 20_000, FIRST)
        await connection.execute("ANALYZE firings")
    finally:
        await connection.close()


async def test_firings_get_their_key_in_batches_while_the_release_before_writes(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await database_of_the_release_before(pg_url, monkeypatch)
    writes = 0
    migrated = asyncio.Event()

    async def release_before() -> None:
        nonlocal writes
        connection = await asyncpg.connect(pg_url)
        try:
            while not migrated.is_set() or writes < 50:
                await connection.execute(WRITTEN_BEFORE, writes, FIRST + 30_000 + writes)
                # An old row, anywhere in the table: updated before or after its batch.
                await connection.execute(
                    TRIED_BEFORE, f"old{writes % 500}.{FIRST + writes * 397 % 20_000 + 1}"
                )
                writes += 1
        finally:
            await connection.close()

    store = await open_store(pg_url)
    try:
        writer = asyncio.create_task(release_before())
        try:
            applied = await store.migrate(before_upgrade=True, batch_pages=4)
        finally:
            migrated.set()
            await writer
        await store.check_schema()  # this release runs on it, 0036 still to apply
        states = {state.migration.version: state for state in await store.migration_states()}
        # This release's writes, beside the release before's: its rings get an id too.
        one_off, firing = await _rung(
            store, datetime.now(UTC) - timedelta(hours=1), state=FiringState.SENT
        )
        done = await store.mark_done(f"old7.{FIRST + 7}", datetime.now(UTC))
        connection = await asyncpg.connect(pg_url)
        try:
            miskeyed_before = await connection.fetchval(MISKEYED)
            ids = await connection.fetch(
                "SELECT id FROM firings WHERE reminder_id = $1", one_off.id
            )
            valid = await connection.fetchval(
                "SELECT indisvalid FROM pg_index WHERE indexrelid = 'firings_key'::regclass"
            )
            after_upgrade = await store.migrate()
            count = await connection.fetchval("SELECT count(*) FROM firings")
        finally:
            await connection.close()
        written = await store.mark_done(f"new3.{FIRST + 30_003}", datetime.now(UTC))
    finally:
        await store.close()

    assert applied == [34, 35, 38]
    assert writes >= 50
    assert miskeyed_before == 0, "every row has the key its id names, written before or during"
    assert valid
    assert states[34].applied
    assert not states[36].applied
    assert states[36].migration.after_upgrade
    assert [row["id"] for row in ids] == [firing.id]
    assert done is not None
    assert done.id == f"old7.{FIRST + 7}"
    assert after_upgrade == [36, 37]
    assert count == 20_000 + writes + 1
    assert written is not None
    assert written.id == f"new3.{FIRST + 30_003}"
    snapshot = (SNAPSHOTS / "postgres" / "schema.sql").read_text(encoding="utf-8")
    assert await dump_postgres(pg_url) == snapshot


async def test_a_migration_stopped_half_way_goes_on_where_it_stopped(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    await database_of_the_release_before(pg_url, monkeypatch)
    connection = await asyncpg.connect(pg_url)
    try:
        # A row half way through the table fails its batch, as a crash would stop the run.
        [trap] = await connection.fetch(
            "SELECT id, (ctid::text::point)[0]::bigint AS page FROM firings WHERE id = $1",
            f"old0.{FIRST + 10_000}",
        )
        await connection.execute(
            "CREATE FUNCTION trap() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            f" IF NEW.id = '{trap['id']}' THEN RAISE EXCEPTION 'stopped'; END IF;"
            " RETURN NEW; END $$"
        )
        await connection.execute(
            "CREATE TRIGGER trap BEFORE UPDATE ON firings FOR EACH ROW EXECUTE FUNCTION trap()"
        )
        pages = await connection.fetchval(
            "SELECT pg_relation_size('firings') / current_setting('block_size')::bigint"
        )
        store = await open_store(pg_url)
        try:
            with pytest.raises(StoreError, match="stopped"):
                await store.migrate(batch_pages=4)
            [state] = [s for s in await store.migration_states() if s.migration.version == 34]
        finally:
            await store.close()
        assert await asyncio.to_thread(main, ["migrate", "--status", "--db", pg_url]) == 0
        said = capsys.readouterr().out
        before = await connection.fetch(
            "SELECT ctid, xmin::text AS xmin FROM firings WHERE due_second IS NOT NULL"
        )
        await connection.execute("DROP TRIGGER trap ON firings")
        store = await open_store(pg_url)
        try:
            applied = await store.migrate(batch_pages=4)
        finally:
            await store.close()
        kept = await connection.fetch(
            "SELECT ctid, xmin::text AS xmin FROM firings WHERE ctid = ANY($1::tid[])",
            [row["ctid"] for row in before],
        )
    finally:
        await connection.close()

    assert state.steps_ended == 1
    assert state.pages == pages
    assert state.next_page == trap["page"] // 4 * 4  # the batches before the trap's are kept
    assert state.rows_left is not None
    assert 9_000 < state.rows_left < 11_500
    left = f"about {state.rows_left:,} rows left"
    assert (
        f"0034_firings_in_due_order: step 2 of 3 (in batches over firings): "
        f"{state.next_page:,} of {pages:,} pages ({state.next_page / pages:.0%}), {left}"
    ) in said
    assert "0036_firings_keyed_alone: applies after the upgrade" in said
    assert len(before) > 9_000
    assert sorted(map(tuple, kept)) == sorted(map(tuple, before)), "not changed again"
    assert applied == [34, 35, 36, 37, 38]


async def test_a_batch_reads_only_its_pages(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch's statement is a TID range scan of its pages, whatever the table's size."""
    [fill] = [
        step.sql
        for m in migrations_for("postgres")
        if m.version == 34
        for step in m.steps()
        if step.table
    ]
    await database_of_the_release_before(pg_url, monkeypatch)
    connection = await asyncpg.connect(pg_url)
    try:
        await connection.execute("ALTER TABLE firings ADD COLUMN due_second bigint")
        await connection.execute(
            "CREATE FUNCTION firing_second(id text) RETURNS bigint LANGUAGE sql IMMUTABLE"
            " RETURN split_part(id, '.', 2)::bigint"
        )
        plan = "\n".join(row[0] for row in await connection.fetch(f"EXPLAIN {fill}", 10, 14))
        await connection.execute("SET plan_cache_mode = force_generic_plan")
        generic = "\n".join(row[0] for row in await connection.fetch(f"EXPLAIN {fill}", 10, 14))
    finally:
        await connection.close()
    assert "Tid Range Scan" in plan
    assert "Tid Range Scan" in generic
