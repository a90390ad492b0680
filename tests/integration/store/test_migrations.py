"""Migrations: the runner, `check_schema`, `tocsin migrate`, and the schema snapshot."""

from __future__ import annotations

import asyncio
import sqlite3

import asyncpg
import pytest

from tests.integration.store.schema import (
    SNAPSHOTS,
    dump_postgres,
    dump_sqlite,
    knowing,
    migrate_database,
)
from tocsin.cli import main
from tocsin.errors import SchemaTooNew, SchemaTooOld, StoreError
from tocsin.store import Store, open_store
from tocsin.store.migrations import Migration, migrations_for

LATEST = len(migrations_for("sqlite"))


def test_both_backends_have_the_same_migrations() -> None:
    sqlite, postgres = migrations_for("sqlite"), migrations_for("postgres")

    assert [(m.version, m.name) for m in sqlite] == [(m.version, m.name) for m in postgres]


async def test_migrate_an_empty_database_once(db_url: str) -> None:
    store = await open_store(db_url)
    try:
        with pytest.raises(SchemaTooOld):
            await store.check_schema()
        first = await store.migrate()
        again = await store.migrate()
        await store.check_schema()
    finally:
        await store.close()

    assert first == list(range(1, LATEST + 1))
    assert again == []


async def test_concurrent_migrations_apply_each_once(db_url: str) -> None:
    stores = [await open_store(db_url) for _ in range(3)]
    try:
        applied = await asyncio.gather(*(store.migrate() for store in stores))
    finally:
        for store in stores:
            await store.close()

    assert sorted(v for versions in applied for v in versions) == list(range(1, LATEST + 1))


async def test_a_failing_migration_is_rolled_back_and_not_recorded(
    db_url: str, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = Migration(
        version=LATEST + 1,
        name="broken",
        sql="CREATE TABLE half_done (id INTEGER);\nSELECT * FROM no_such_table;\n",
    )
    knowing(monkeypatch, backend, [*migrations_for(backend), broken])
    store = await open_store(db_url)
    try:
        with pytest.raises(StoreError):
            await store.migrate()
        with pytest.raises(SchemaTooOld):
            await store.check_schema()  # the known migrations applied; the broken one did not
    finally:
        await store.close()
    monkeypatch.undo()

    store = await open_store(db_url)
    try:
        await store.check_schema()
        assert await store.migrate() == []
    finally:
        await store.close()
    assert "half_done" not in await _dump(db_url)


def test_tocsin_migrate_says_what_it_did(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "--db", db_url]) == 0
    assert main(["migrate", "--db", db_url]) == 0

    out = capsys.readouterr().out.splitlines()
    names = ", ".join(f"{m.version:04d}_{m.name}" for m in migrations_for("sqlite"))
    assert out == [f"applied migrations: {names}", "up to date"]


def test_tocsin_migrate_fails_cleanly_on_a_bad_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "--db", "postgresql://postgres@127.0.0.1:1/nowhere"]) == 1

    assert "unreachable" in capsys.readouterr().err


async def test_migrations_give_the_snapshot_schema(store: Store, migrated_db_url: str) -> None:
    backend = "sqlite" if migrated_db_url.startswith("sqlite") else "postgres"
    snapshot = (SNAPSHOTS / backend / "schema.sql").read_text(encoding="utf-8")

    # On failure: review the difference, then run `python -m tests.integration.store.schema`.
    assert await _dump(migrated_db_url) == snapshot


def test_a_database_a_newer_version_migrated_is_refused(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["migrate", "--db", db_url]) == 0
    asyncio.run(_record_unknown_migration(db_url, LATEST + 1))
    asyncio.run(_refused_by_the_store(db_url))

    assert main(["migrate", "--db", db_url]) == 1
    assert main(["keys", "list", "--db", db_url]) == 1  # as every command that opens it
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2
    known = f"that this version of Tocsin does not know (it knows 1 to {LATEST})"
    assert known in err[0]
    assert err[1].startswith("tocsin keys: the database schema is newer than this version")
    assert known in err[1]


async def _refused_by_the_store(url: str) -> None:
    store = await open_store(url)
    try:
        with pytest.raises(SchemaTooNew, match=rf"migrations \[{LATEST + 1}\]"):
            await store.check_schema()
        with pytest.raises(SchemaTooNew):
            await store.migrate()  # nor does this version's runner touch it
    finally:
        await store.close()


async def _record_unknown_migration(url: str, version: int) -> None:
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
            connection.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 0)",
                (version, "from_the_future"),
            )
        return
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            version,
            "from_the_future",
        )
    finally:
        await connection.close()


async def _dump(url: str) -> str:
    if url.startswith("sqlite:///"):
        return dump_sqlite(url.removeprefix("sqlite:///"))
    return await dump_postgres(url)


@pytest.mark.postgres
async def test_schema_migrations_records_name_and_time(pg_migrated_url: str) -> None:
    connection = await asyncpg.connect(pg_migrated_url)
    try:
        # In version order: a test that takes a row out and puts it back (test_metrics) moves
        # it to the heap's end in the recycled database, and a scan returns the heap's order.
        rows = await connection.fetch(
            "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
        )
    finally:
        await connection.close()

    assert [(row["version"], row["name"]) for row in rows] == [
        (m.version, m.name) for m in migrations_for("postgres")
    ]
    assert rows[0]["applied_at"] is not None


# docs/storage.md's way to change an index of reminders on a large live database, for the
# migration before 0.1.0 that changes one: the migration, the index, the name its new version
# is built under first, and its definition.
_BUILT_BEFOREHAND = [
    (
        "due_by_lane",
        "reminders_due",
        "reminders_due_by_lane",
        "ON reminders ((shard / 64), bucket, due_at, id, shard) WHERE status = 'pending'",
    ),
]
# The migrations after it that build an index of reminders CONCURRENTLY themselves, under
# another name first: the migration, the index, and that name.
_BUILT_CONCURRENTLY = [
    ("finished_by_firings", "reminders_finished", "reminders_finished_without_due"),
    ("due_by_priority", "reminders_due", "reminders_due_by_priority"),
]


@pytest.mark.postgres
@pytest.mark.parametrize(("migration", "index", "built_as"), _BUILT_CONCURRENTLY)
async def test_an_index_a_stopped_run_left_invalid_is_built_again(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, migration: str, index: str, built_as: str
) -> None:
    """A run stopped while it built the index CONCURRENTLY leaves it invalid under its
    other name: the run that goes on drops it and builds it again, and the schema is the
    snapshot's."""
    changing = next(m for m in migrations_for("postgres") if m.name == migration)
    earlier = [m for m in migrations_for("postgres") if m.version < changing.version]
    knowing(monkeypatch, "postgres", earlier)
    await migrate_database(pg_url)
    connection = await asyncpg.connect(pg_url)
    try:
        # What a cancelled CREATE INDEX CONCURRENTLY leaves: the index, marked invalid.
        await connection.execute(f"CREATE INDEX {built_as} ON reminders (id)")
        await connection.execute(
            f"UPDATE pg_index SET indisvalid = false WHERE indexrelid = '{built_as}'::regclass"
        )
        left = await connection.fetchval(f"SELECT '{built_as}'::regclass::oid")
        earlier.append(changing)
        await migrate_database(pg_url)
        made = await connection.fetchrow(
            "SELECT indexrelid::oid AS oid, indisvalid FROM pg_index"
            f" WHERE indexrelid = '{index}'::regclass"
        )
    finally:
        await connection.close()
    monkeypatch.undo()
    await migrate_database(pg_url)  # and the migrations after it

    assert made["indisvalid"]
    assert made["oid"] != left
    snapshot = (SNAPSHOTS / "postgres" / "schema.sql").read_text(encoding="utf-8")
    assert await _dump(pg_url) == snapshot


@pytest.mark.postgres
@pytest.mark.parametrize(("migration", "index", "built_as", "definition"), _BUILT_BEFOREHAND)
async def test_an_index_built_concurrently_beforehand_is_taken_over(
    pg_url: str,
    monkeypatch: pytest.MonkeyPatch,
    migration: str,
    index: str,
    built_as: str,
    definition: str,
) -> None:
    """The new index, built CONCURRENTLY under another name before `migrate`, takes the old
    one's name (renamed, not built again), and the schema is the snapshot's."""
    changing = next(m for m in migrations_for("postgres") if m.name == migration)
    earlier = [m for m in migrations_for("postgres") if m.version < changing.version]
    knowing(monkeypatch, "postgres", earlier)
    await migrate_database(pg_url)
    connection = await asyncpg.connect(pg_url)
    try:
        await connection.execute(f"CREATE INDEX CONCURRENTLY {built_as} {definition}")
        built = await connection.fetchval(f"SELECT '{built_as}'::regclass::oid")
        earlier.append(changing)
        await migrate_database(pg_url)
        kept = await connection.fetchval(f"SELECT '{index}'::regclass::oid")
    finally:
        await connection.close()
    monkeypatch.undo()
    await migrate_database(pg_url)  # and the migrations after it

    assert kept == built  # renamed, not built again
    snapshot = (SNAPSHOTS / "postgres" / "schema.sql").read_text(encoding="utf-8")
    assert await _dump(pg_url) == snapshot
