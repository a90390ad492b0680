"""`bench upgrade`: a database of the last release before 0021 upgraded with it running, on
PostgreSQL.

That release keeps each reminder's next occurrence in its own row, and a claim moves a series
on there. A database of it holds `reminders` daily series, each with `history` sent firings
(by id), vacuumed, analysed and checkpointed; a steady load of its writes runs on two
connections, `rate` a second (a claim: the reminder's row moved on and, as that release wrote
it after, the ring's firing; an edit: the reminder's row), while `tocsin migrate
--before-upgrade` (0021 to 0035: 0034 gives the firings their key and the ring before each
in batches, 0035 copies each pending occurrence into `due` in batches) runs as a process of
its own. The report: how long each migration took (from `schema_migrations`) and the writes
made meanwhile, the WAL of the whole run (the load's included) and per reminder, how long the
load's writes took before, during and after it (the longest is how long the migration held a
write off), and whether `due` holds one occurrence for each pending reminder.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import asyncpg

from tocsin.store.migrations import BATCH_PAGES
from tocsin.store.postgres import migrating
from tocsin.store.postgres import queries as q
from tocsin_bench.databases import throwaway
from tocsin_bench.migration import PhasedLoad, before_upgrade, write_spread
from tocsin_bench.progress import note
from tocsin_bench.stats import rate

BEFORE_0021 = 20  # the release before's last migration
DAY = 86_400

# The release before's reminders: `$1` daily series, due over the next 30 days from `$2` (an
# epoch second), each rung `$3` times a day apart before.
_REMINDERS = """
INSERT INTO reminders (id, owner, shard, text, channel, zone, anchor, rule, status, due_at,
    bucket, freshness, version, created_at, updated_at, rang_due_at)
SELECT 'r' || n, 'owner-' || n % 100003, n % 1024,
    left('Take the blood pressure pills, then water the plants on the balcony', 20 + n % 41),
    'webhook', 'Europe/Paris', '2026-01-01T09:00:00', 'FREQ=DAILY', 'pending',
    to_timestamp(due), due / 60, 600, 1, now(), now(),
    CASE WHEN $3 > 0 THEN to_timestamp(due - 86400) END
FROM generate_series(1, $1::integer) AS n,
    LATERAL (SELECT $2::bigint + (n::bigint * 7919) % (30 * 86400) AS due) AS at
"""
_HISTORY = """
INSERT INTO firings (id, reminder_id, owner, shard, due_at, deadline, channel, text, state,
    attempts, created_at, sent_at, sent_to)
SELECT 'r' || n || '.' || rang, 'r' || n, 'owner-' || n % 100003, n % 1024, to_timestamp(rang),
    to_timestamp(rang) + interval '1 day', 'webhook', 'Water', 'sent', 1, to_timestamp(rang),
    to_timestamp(rang) + interval '0.2 second', 'webhook'
FROM generate_series(1, $3::integer) AS back, generate_series(1, $1::integer) AS n,
    LATERAL (SELECT $2::bigint + (n::bigint * 7919) % (30 * 86400) - back * 86400 AS rang) AS ring
"""
# The release before's writes: a claim moves a series on in its row (its firing written after,
# by its id), an edit moves its occurrence ten minutes on.
_CLAIMED = """
UPDATE reminders SET due_at = due_at + interval '1 day', bucket = bucket + 1440,
    version = version + 1, updated_at = now(), rang_due_at = due_at
WHERE id = $1 AND status = 'pending'
RETURNING rang_due_at
"""
_SENT = """
INSERT INTO firings (id, reminder_id, owner, shard, due_at, deadline, channel, text, state,
    attempts, created_at)
VALUES ($1 || '.' || extract(epoch FROM $2::timestamptz)::bigint, $1, 'owner-7', 7, $2,
    $2 + interval '1 day', 'webhook', 'Water', 'sent', 1, now())
ON CONFLICT (id) DO NOTHING
"""
_EDITED = """
UPDATE reminders SET due_at = due_at + interval '10 minutes', bucket = bucket + 10,
    version = version + 1, updated_at = now(), rang_due_at = NULL
WHERE id = $1 AND status = 'pending'
"""
_APPLIED = """
SELECT version, name, extract(epoch FROM applied_at) AS at
FROM schema_migrations WHERE version > $1 ORDER BY version
"""
_UNCOPIED = """
SELECT (SELECT count(*) FROM reminders WHERE status = 'pending') - (SELECT count(*) FROM due)
"""


@dataclass(frozen=True, kw_only=True)
class UpgradeSpec:
    reminders: int = 1_000_000
    history: int = 2  # sent firings of each, a day apart
    rate: int = 200  # the release before's writes a second (half claims, half edits)
    batch_pages: int = BATCH_PAGES
    pg_url: str | None = None
    quiet_seconds: float = 5.0  # of the load alone, before and after the migrations


class _Load(PhasedLoad):
    """The release before's writes: half claims, half edits, of reminders across the table."""

    def __init__(self, url: str, spec: UpgradeSpec) -> None:
        super().__init__(url, spec.rate)
        self._reminders = spec.reminders

    async def write(self, connection: asyncpg.Connection, n: int) -> None:
        one = f"r{(n * 104_729) % self._reminders + 1}"
        if n % 2:
            await connection.execute(_EDITED, one)
            return
        rang = await connection.fetchval(_CLAIMED, one)
        if rang is not None:
            await connection.execute(_SENT, one, rang)


async def run_upgrade(spec: UpgradeSpec) -> dict[str, Any]:
    async with throwaway("postgres", pg_url=spec.pg_url) as url:
        connection = await asyncpg.connect(url)
        try:
            await migrating.migrate(connection, before_upgrade=False, through=BEFORE_0021)
            first = int(time.time()) // 60 * 60 + 3600
            note(f"writing {spec.reminders:,} reminders and {spec.history} firings of each")
            await connection.execute(_REMINDERS, spec.reminders, first, spec.history)
            await connection.execute(_HISTORY, spec.reminders, first, spec.history)
            await connection.execute("VACUUM ANALYZE", timeout=None)
            await connection.execute("CHECKPOINT", timeout=None)
            pages = {
                table: await connection.fetchval(q.TABLE_PAGES, table)
                for table in ("reminders", "firings")
            }
            load = _Load(url, spec)
            async with load.running():
                await asyncio.sleep(spec.quiet_seconds)
                load.phase = "migrating"
                began = time.time()
                note("tocsin migrate --before-upgrade (0021 to 0035), the release before writing")
                took, wal = await before_upgrade(connection, url, spec.batch_pages)
                load.phase = "after"
                await asyncio.sleep(spec.quiet_seconds)
            applied = await connection.fetch(_APPLIED, BEFORE_0021)
            uncopied = await connection.fetchval(_UNCOPIED)
        finally:
            await connection.close()
    return {
        "scenario": "upgrade",
        "config": {
            "reminders": spec.reminders,
            "history": spec.history,
            "reminders_pages": pages["reminders"],
            "firings_pages": pages["firings"],
            "batch_pages": spec.batch_pages,
            "writes_per_s": spec.rate,
        },
        "metrics": {
            "migrate_s": round(took, 1),
            "reminders_per_s": rate(spec.reminders, took),
            "wal_bytes": wal,
            "wal_per_reminder": round(float(wal) / spec.reminders, 1),
            **_by_migration(applied, began, load.stamps),
            "uncopied": uncopied,
            "writes_ms": {phase: write_spread(times) for phase, times in load.times.items()},
        },
    }


def _by_migration(
    applied: list[asyncpg.Record], began: float, stamps: list[tuple[float, float]]
) -> dict[str, Any]:
    """How long each migration took (from the end of the one before, by `applied_at`), and
    the writes that began meanwhile: how long they took."""
    took: dict[str, float] = {}
    writes: dict[str, dict[str, float]] = {}
    since = began
    for row in applied:
        name = f"{row['version']:04d}_{row['name']}"
        until = float(row["at"])
        took[name] = round(until - since, 2)
        during = [seconds for at, seconds in stamps if since <= at < until]
        if during:
            writes[name] = write_spread(during)
        since = until
    return {"took_s": took, "writes_ms_by_migration": writes}
