"""The retention benchmark (`tocsin bench retention`, PostgreSQL): how fast the worker holding
the retention chore deletes a backlog of old rings while a steady ring load runs, and what
that does to the rings' lateness, against the same load without a backlog.

The backlog is `old_firings` sent firings due 40 days ago, each with one attempt, written
straight into the table (and analysed) before the workers start; the default retention (30
days) makes all of them due for deletion at once. Deletion is followed through PostgreSQL's
own counters (`pg_stat_user_tables.n_tup_del`, cheap to read every second), so that watching
it adds no load to the tables being measured. Both runs are `steady` runs as
`tocsin bench steady` makes them.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from tocsin.bench.firing import FiringSpec, run_firing
from tocsin.bench.progress import note
from tocsin.bench.stats import rate

# Sent firings due 40 days ago (a second apart), with one attempt each; ids like the
# engine's (`<reminder id>.<due epoch second>`) so the rows are as wide as real ones.
_SEED = """
INSERT INTO firings (
    due_at, deadline, created_at, sent_at, attempts, shard, id, reminder_id, owner, state,
    channel, text
)
SELECT due, due + interval '10 minutes', due, due, 1, n % 1024,
    reminder || '.' || extract(epoch FROM due)::bigint, reminder, 'user-' || n % 100000
        || '@example.com', 'sent', 'webhook', 'Water the plants'
FROM generate_series(1, $1) AS n,
    LATERAL (
        SELECT now() - interval '40 days' - n * interval '1 second' AS due,
            'old' || lpad(n::text, 17, '0') AS reminder
    ) AS made;
"""
_SEED_ATTEMPTS = """
INSERT INTO attempts (at, number, firing_id, channel, outcome, destination)
SELECT due_at, 1, id, channel, 'sent', 'app' FROM firings;
ANALYZE firings, attempts;
"""
_DELETED = """
SELECT coalesce(sum(n_tup_del), 0) FROM pg_stat_user_tables
WHERE relname IN ('firings', 'attempts')
"""
# The lateness (due → sent, seconds) of the rings due in a time window: p99 and count.
_LATENESS = """
SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM sent_at - due_at)),
    count(*)
FROM firings WHERE due_at BETWEEN $1 AND $2 AND sent_at IS NOT NULL
"""
# What is left of the churn tables after the run: live and dead rows, autovacuum runs, and
# (pgstattuple, when the server has it) how much of each table is dead rows and free space.
_TABLE_STATS = """
SELECT relname, n_live_tup, n_dead_tup, autovacuum_count, pg_table_size(relid) AS bytes
FROM pg_stat_user_tables WHERE relname IN ('firings', 'attempts', 'reminders')
ORDER BY relname
"""
_PGSTATTUPLE = """
SELECT round(dead_tuple_percent::numeric, 1)::float8, round(free_percent::numeric, 1)::float8
FROM pgstattuple($1::regclass)
"""
_POLL_SECONDS = 1.0
_WATCH_LIMIT_SECONDS = 1800.0
_AFTER_DELETION_SECONDS = 15.0  # rings due at the end of the window are sent by then


@dataclass(frozen=True, kw_only=True)
class RetentionSpec:
    """One retention benchmark: the backlog, and the steady ring load beside it."""

    old_firings: int
    rate: int
    duration: int
    workers: int
    channel: str
    pg_url: str | None = None


async def run_retention(spec: RetentionSpec) -> dict[str, Any]:
    """The steady load alone, then with the backlog being deleted; the comparison."""
    note(f"retention: steady {spec.rate}/s for {spec.duration} s without a backlog")
    without = await run_firing(_steady(spec))
    note(f"retention: the same with {spec.old_firings:,} old firings to delete")
    with_backlog = await run_firing(_steady(spec, backlog=True))
    deletion = with_backlog["metrics"].get("beside", {})
    return {
        "scenario": "retention",
        "params": {
            "db": "postgres",
            "old_firings": spec.old_firings,
            "old_rows": 2 * spec.old_firings,
            "rate_per_s": spec.rate,
            "duration_s": spec.duration,
            "workers": spec.workers,
            "channel": spec.channel,
        },
        "metrics": {
            "deleted_rows": deletion.get("deleted"),
            "deleted_per_s": deletion.get("deleted_per_s"),
            "deletion_s": deletion.get("seconds"),
            "p99_sent_s_without_backlog": without["metrics"]["due_to_sent_s"]["p99"],
            "p99_sent_s_with_backlog": with_backlog["metrics"]["due_to_sent_s"]["p99"],
            "p99_sent_s_while_deleting": deletion.get("p99_sent_s"),
            "rings_while_deleting": deletion.get("rings"),
            "tables_after": deletion.get("tables"),
            "lost": [without["metrics"]["lost"], with_backlog["metrics"]["lost"]],
            "duplicates": [
                without["metrics"]["duplicates"],
                with_backlog["metrics"]["duplicates"],
            ],
        },
    }


def _steady(spec: RetentionSpec, *, backlog: bool = False) -> FiringSpec:
    async def seed(url: str) -> None:
        connection = await asyncpg.connect(url)
        try:
            await connection.execute(_SEED, spec.old_firings)
            await connection.execute(_SEED_ATTEMPTS)
        finally:
            await connection.close()

    async def watch(url: str) -> dict[str, Any]:
        return await _watch_deletion(url, 2 * spec.old_firings)

    return FiringSpec(
        scenario="steady",
        db="postgres",
        reminders=spec.rate * spec.duration,
        spread=spec.duration,
        workers=spec.workers,
        channel=spec.channel,
        pg_url=spec.pg_url,
        rate=spec.rate,
        prepare=seed if backlog else None,
        beside=watch if backlog else None,
    )


async def _watch_deletion(url: str, rows: int) -> dict[str, Any]:
    """Poll the deletion counters until `rows` were deleted; the rate from the first deletion
    seen to the last, and the lateness of the rings due meanwhile."""
    connection = await asyncpg.connect(url)
    try:
        began = time.monotonic()
        first: tuple[float, datetime] | None = None
        deleted = 0
        while deleted < rows and time.monotonic() - began < _WATCH_LIMIT_SECONDS:
            await asyncio.sleep(_POLL_SECONDS)
            deleted = int(await connection.fetchval(_DELETED))
            if deleted and first is None:
                first = (time.monotonic(), await connection.fetchval("SELECT now()"))
        ended = (time.monotonic(), await connection.fetchval("SELECT now()"))
        if first is None:
            return {"deleted": deleted, "seconds": None, "deleted_per_s": None}
        await asyncio.sleep(_AFTER_DELETION_SECONDS)
        p99, rings = await connection.fetchrow(_LATENESS, first[1], ended[1])
        tables = await _bloat(connection)
    finally:
        await connection.close()
    seconds = ended[0] - first[0]
    return {
        "deleted": deleted,
        "seconds": round(seconds, 1),
        "deleted_per_s": round(rate(deleted, seconds)),
        "p99_sent_s": None if p99 is None else round(p99, 3),
        "rings": rings,
        "tables": tables,
    }


async def _bloat(connection: asyncpg.Connection) -> dict[str, Any]:
    """Per churn table: live and dead rows, autovacuum runs, bytes, and the dead and free
    percentages pgstattuple reads (None when the extension is not installable)."""
    try:
        await connection.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        measured = True
    except asyncpg.PostgresError:
        measured = False
    tables: dict[str, Any] = {}
    for row in await connection.fetch(_TABLE_STATS):
        dead = free = None
        if measured:
            dead, free = await connection.fetchrow(_PGSTATTUPLE, row["relname"])
        tables[row["relname"]] = {
            "live": row["n_live_tup"],
            "dead": row["n_dead_tup"],
            "autovacuums": row["autovacuum_count"],
            "mb": round(row["bytes"] / 2**20, 1),
            "dead_pct": dead,
            "free_pct": free,
        }
    return tables
