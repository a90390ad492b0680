"""Migrations 0015 to 0035 on PostgreSQL while a release before 0021 runs (0.1.0, or the
last before 0021): it keeps each reminder's next occurrence in its own row (a claim rewrites
it there) and writes firings by id, while `tocsin migrate --before-upgrade` builds its
indexes CONCURRENTLY (0017, 0018), gives each firing the ring before it (0033, filled by
0034's batches of `firings`' pages), and `due` an occurrence for each pending reminder and
each reminder its last ring (0035, in batches of `reminders`' pages, by 0032's rule). The
release before's API writes and claims, made while the batches go, are kept by triggers:
when the run ends, `due` holds exactly the occurrences the reminders name, each carrying the
ring before it, each reminder its last ring, and each firing the one before it. This
release's writes are left alone by those triggers. The release before's processes are stood
in for by the statements it ran."""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from tests.integration.store.factories import edited, reminder
from tests.integration.store.schema import SNAPSHOTS, dump_postgres, knowing, migrate_database
from tocsin.store import open_store
from tocsin.store.migrations import migrations_for

pytestmark = pytest.mark.postgres

REMINDERS = 6_000

# What the release before kept: reminders of four kinds (`$1` of them, due from `$2` on), with
# their firings by id. n % 4: 0 a one-off still to ring; 1 a daily series rung three times,
# its last ring in `rang_due_at` as its claims wrote it (0015 on); 2 a daily series rung
# twice and edited since (the release before kept no ring in `rang_due_at` then); 3 a one-off
# rung. {rang} is `rang_due_at` where the release has it; {kept}, the `due_at` it kept (0.1.0
# kept none for a rung one-off).
HISTORY = """
INSERT INTO reminders (id, owner, shard, text, channel, zone, anchor, rule, status, due_at,
    bucket, freshness, version, created_at, updated_at {rang})
SELECT 'r' || n, 'ana', n % 1024, 'Water', 'webhook', 'UTC', '2026-01-01T09:00:00',
    CASE WHEN n % 4 IN (1, 2) THEN 'FREQ=DAILY' END,
    CASE WHEN n % 4 = 3 THEN 'fired' ELSE 'pending' END,
    {kept}, floor(extract(epoch FROM {kept}) / 60)::int, 600, 1 + n % 4, $2, $2
    {rang_value}
FROM generate_series(0, $1 - 1) AS n,
    LATERAL (SELECT $2::timestamptz + n * interval '1 second'
        - CASE WHEN n % 4 = 3 THEN interval '2 days' ELSE interval '0' END AS due) AS at(due);
INSERT INTO firings (id, reminder_id, owner, shard, due_at, deadline, channel, text, state,
    attempts, created_at)
SELECT 'r' || n || '.' || extract(epoch FROM rang)::bigint, 'r' || n, 'ana', n % 1024, rang,
    rang + interval '1 day', 'webhook', 'Water', 'sent', 1, rang
FROM generate_series(0, $1 - 1) AS n,
    LATERAL (SELECT $2::timestamptz + n * interval '1 second' AS due) AS at(due),
    LATERAL generate_series(1, CASE n % 4 WHEN 1 THEN 3 WHEN 2 THEN 2 WHEN 3 THEN 0 END) AS back,
    LATERAL (SELECT due - back * interval '1 day' AS rang) AS ring(rang)
WHERE n % 4 IN (1, 2);
INSERT INTO firings (id, reminder_id, owner, shard, due_at, deadline, channel, text, state,
    attempts, created_at)
SELECT 'r' || n || '.' || extract(epoch FROM due)::bigint, 'r' || n, 'ana', n % 1024, due,
    due + interval '1 day', 'webhook', 'Water', 'sent', 1, due
FROM generate_series(0, $1 - 1) AS n,
    LATERAL (SELECT $2::timestamptz + n * interval '1 second' - interval '2 days' AS due) AS at
WHERE n % 4 = 3
"""
RANG = ", rang_due_at"
RANG_VALUE = ", CASE n % 4 WHEN 1 THEN due - interval '1 day' WHEN 3 THEN due END"

# The release before's writes, as it made them.
CREATED = """
INSERT INTO reminders (id, owner, shard, text, channel, zone, anchor, status, due_at, bucket,
    freshness, version, created_at, updated_at)
VALUES ($1, 'ana', 9, 'Call', 'webhook', 'UTC', '2026-01-01T09:00:00', 'pending', $2,
    floor(extract(epoch FROM $2::timestamptz) / 60)::int, 600, 1, now(), now())
"""
EDITED = """
UPDATE reminders SET due_at = due_at + interval '10 minutes',
    bucket = floor(extract(epoch FROM due_at + interval '10 minutes') / 60)::int,
    version = version + 1, updated_at = now() {forgot}
WHERE id = $1 AND status = 'pending'
"""
CANCELLED = """
UPDATE reminders SET status = 'cancelled', version = version + 1, updated_at = now()
WHERE id = $1 AND status = 'pending'
"""
DELETED = "DELETE FROM reminders WHERE id = $1"
# A claim: the series moves on to its next occurrence in its row, a one-off is fired. From
# 0015 on it keeps the ring in `rang_due_at` and writes the firing later; before, the firing
# is written by the claim's statement (by its id), and a fired one-off keeps no `due_at`.
CLAIMED = """
WITH moved AS (
    UPDATE reminders AS r
    SET status = CASE WHEN r.rule IS NULL THEN 'fired' ELSE 'pending' END,
        due_at = CASE WHEN r.rule IS NULL THEN {finished} ELSE r.due_at + interval '1 day' END,
        bucket = CASE WHEN r.rule IS NOT NULL
            THEN floor(extract(epoch FROM r.due_at + interval '1 day') / 60)::int END,
        version = r.version + 1, updated_at = now() {rang}
    FROM (SELECT id, due_at FROM reminders WHERE id = $1 FOR UPDATE) AS old
    WHERE r.id = old.id AND r.status = 'pending'
    RETURNING r.id, r.shard, old.due_at AS rang
)
INSERT INTO firings (id, reminder_id, owner, shard, due_at, deadline, channel, text, state,
    attempts, created_at)
SELECT id || '.' || extract(epoch FROM rang)::bigint, id, 'ana', shard, rang,
    rang + interval '1 day', 'webhook', 'Water', 'sent', 1, now()
FROM moved
"""


@dataclass(frozen=True, kw_only=True, slots=True)
class Release:
    """A release before the migrations, as it wrote: its last migration, what it kept, and the
    statements of its edit and its claim."""

    through: int
    history: str
    edited: str
    claimed: str


# 0.1.0 (migrations 1 to 14), and the last release before 0021 (to 0020), which keeps a
# reminder's last ring in its row.
RELEASES = {
    "0.1.0": Release(
        through=14,
        history=HISTORY.format(rang="", rang_value="", kept="CASE WHEN n % 4 <> 3 THEN due END"),
        edited=EDITED.format(forgot=""),
        claimed=CLAIMED.format(finished="NULL", rang=""),
    ),
    "0020": Release(
        through=20,
        history=HISTORY.format(rang=RANG, rang_value=RANG_VALUE, kept="due"),
        edited=EDITED.format(forgot=", rang_due_at = NULL"),
        claimed=CLAIMED.format(finished="r.due_at", rang=", rang_due_at = old.due_at"),
    ),
}

MONTH = re.compile(r"^CREATE TABLE due_\d{4}_\d{2} PARTITION OF due [^\n]*\n\n", re.MULTILINE)
UNDER_WAY = "SELECT next_page FROM schema_migration_steps WHERE version = 35 AND step = 2"

# What the copy and the triggers must have made, each a count of what is wrong.
NEWEST = """(
    SELECT f.due_at FROM firings AS f
    WHERE f.reminder_id = r.id ORDER BY f.id DESC LIMIT 1
)"""
WRONG = {
    "pending without its occurrence": """
        SELECT count(*) FROM reminders AS r
        WHERE r.status = 'pending' AND NOT EXISTS (
            SELECT 1 FROM due AS d
            WHERE (d.lane, d.rank, d.bucket, d.due_at, d.reminder_id, d.version, d.shard)
                = (r.shard / 64, coalesce(r.priority, 0), r.bucket, r.due_at, r.id, r.version,
                   r.shard)
              AND d.prev_due IS NOT DISTINCT FROM r.rang_due_at
        )""",
    "occurrences no pending reminder names": """
        SELECT count(*) FROM due AS d
        WHERE NOT EXISTS (
            SELECT 1 FROM reminders AS r
            WHERE r.status = 'pending' AND (r.id, r.version, r.due_at) = (
                d.reminder_id, d.version, d.due_at)
        )""",
    "reminders without their last ring": f"""
        SELECT count(*) FROM reminders AS r WHERE r.rang_due_at IS DISTINCT FROM {NEWEST}""",
    "firings without the ring before": """
        SELECT count(*) FROM (
            SELECT prev_due,
                lag(due_at) OVER (PARTITION BY reminder_id ORDER BY id) AS expected
            FROM firings
        ) AS f
        WHERE prev_due IS DISTINCT FROM expected""",
}


async def database_of(release: str, url: str, monkeypatch: pytest.MonkeyPatch) -> datetime:
    """A database as `release` left it, with its reminders and firings; returns when the first
    of them is due."""
    written = RELEASES[release]
    earlier = [m for m in migrations_for("postgres") if m.version <= written.through]
    knowing(monkeypatch, "postgres", earlier)
    await migrate_database(url)
    monkeypatch.undo()
    first = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    connection = await asyncpg.connect(url)
    try:
        history = written.history.replace("$1", str(REMINDERS))
        await connection.execute(history.replace("$2", f"'{first.isoformat()}'"))
        await connection.execute("ANALYZE")
    finally:
        await connection.close()
    return first


@pytest.mark.parametrize("release", list(RELEASES))
async def test_pending_occurrences_are_copied_while_the_release_before_writes(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, release: str
) -> None:
    first = await database_of(release, pg_url, monkeypatch)
    written = RELEASES[release]
    writes: list[str] = []
    during = 0
    migrated = asyncio.Event()
    pick = random.Random(35)

    async def release_before() -> None:
        nonlocal during
        connection = await asyncpg.connect(pg_url)
        try:
            while not migrated.is_set() or len(writes) < 200:
                kind = pick.choice(
                    ["created", "edited", "claimed", "claimed", "cancelled", "deleted"]
                )
                one = f"r{pick.randrange(REMINDERS)}"
                if kind == "created":
                    one = f"w{len(writes)}"
                    await connection.execute(CREATED, one, first + timedelta(hours=2))
                elif kind == "claimed":
                    async with connection.transaction():
                        await connection.execute(written.claimed, one)
                else:
                    sql = {
                        "edited": written.edited,
                        "cancelled": CANCELLED,
                        "deleted": DELETED,
                    }[kind]
                    await connection.execute(sql, one)
                writes.append(kind)
                if await connection.fetchval(UNDER_WAY):
                    during += 1
        finally:
            await connection.close()

    store = await open_store(pg_url)
    try:
        writer = asyncio.create_task(release_before())
        try:
            applied = await store.migrate(before_upgrade=True, batch_pages=2)
        finally:
            migrated.set()
            await writer
        await store.check_schema()  # this release runs on it, 0036 and 0037 still to apply
        connection = await asyncpg.connect(pg_url)
        try:
            wrong = {what: await connection.fetchval(sql) for what, sql in WRONG.items()}
            pending = await connection.fetchval(
                "SELECT count(*) FROM reminders WHERE status = 'pending'"
            )
            occurrences = await connection.fetchval("SELECT count(*) FROM due")
            outside = await connection.fetchval("SELECT count(*) FROM due_outside")
            # This release's own writes are its alone: the trigger leaves them to it.
            mine = reminder(due_at=first + timedelta(hours=3))
            await store.add_reminders([mine])
            saved = await store.update_reminder(
                edited(mine, text="Call back", due_at=first + timedelta(hours=4)),
                expected_version=1,
                waiting=mine.due_at,
            )
            mine_due = await connection.fetch(
                "SELECT due_at, version FROM due WHERE reminder_id = $1", mine.id
            )
            # A series the release before rang, read by this one: its last ring, and its
            # firings newest first by the ring before each.
            [series] = await connection.fetch(
                "SELECT id, due_at FROM reminders WHERE id LIKE 'r%' AND rule IS NOT NULL"
                " AND status = 'pending' ORDER BY id LIMIT 1"
            )
            shown = await store.get_reminder(series["id"], now=first)
            listed = await store.list_firings(series["id"])
            rang = await connection.fetch(
                "SELECT due_at FROM firings WHERE reminder_id = $1 ORDER BY id DESC",
                series["id"],
            )
            after_upgrade = await store.migrate()
            left = await connection.fetchval(
                "SELECT count(*) FROM pg_trigger WHERE tgname IN"
                " ('reminders_due_kept', 'firings_ring_before')"
            )
        finally:
            await connection.close()
    finally:
        await store.close()

    assert applied == [*range(written.through + 1, 36), 38]
    assert len(writes) >= 200
    assert during >= 20, "the release before wrote while the batches went"
    assert wrong == dict.fromkeys(WRONG, 0)
    assert occurrences == pending
    assert outside == 0, "each in its month"
    assert saved is not None
    assert [(row["due_at"], row["version"]) for row in mine_due] == [
        (first + timedelta(hours=4), 2)
    ]
    assert shown is not None
    assert shown.due_at == series["due_at"]
    assert shown.last_firing is not None
    assert shown.last_firing.due_at == rang[0]["due_at"]
    assert [firing.due_at for firing in listed] == [row["due_at"] for row in rang]
    assert after_upgrade == [36, 37]
    assert left == 0
    snapshot = (SNAPSHOTS / "postgres" / "schema.sql").read_text(encoding="utf-8")
    assert _without_months(await dump_postgres(pg_url)) == snapshot


def _without_months(schema: str) -> str:
    """The schema without the months of `due` made for the copy (a new database has none until
    retention makes them)."""
    return MONTH.sub("", schema)
