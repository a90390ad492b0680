"""The retention benchmark (`tocsin bench retention`, PostgreSQL): how fast the worker holding
the retention chore deletes a backlog of old rings while a steady ring load runs, and what
that does to the rings' lateness, against the same load without a backlog.

The backlog is `old_firings` sent firings due 40 days ago, each with one attempt, written
straight into the table (and analysed) before the workers start; the default retention (30
days) makes all of them due for deletion at once. Deletion is followed through PostgreSQL's
own counters (`pg_stat_user_tables.n_tup_del`, cheap to read every second), so that watching
it adds no load to the tables being measured. Both runs are `steady` runs as
`tocsin bench steady` makes them.

The churn run (`--churn`) is the steady state instead: as many old rings (sent firings with an
attempt and their fired one-off reminders) as the run rings, due a day ago at the ring rate,
with the workers keeping a day (`TOCSIN_RETAIN_FIRINGS=1d`), so that retention deletes rows
as fast as the rings insert them and the tables end as full as they began. What it measures
is what the space freed does: the tables are read (`tocsin_bench.bloat`) before the run,
every minute while it runs and after it, so a table that keeps growing shows as such.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from tocsin_bench.bloat import autovacuum_settings, glance, note_if_unvacuumed, reading
from tocsin_bench.firing import FiringSpec, run_firing
from tocsin_bench.progress import note
from tocsin_bench.stats import rate

# $1 sent firings, the first due at $2 and each $3 after the one before, with one attempt
# each (below); ids like the engine's (`<reminder id>.<due epoch second>`) so the rows are as
# wide as real ones.
_SEED = """
INSERT INTO firings (
    due_at, deadline, created_at, sent_at, attempts, shard, due_second, reminder_id, owner,
    state, channel, text
)
SELECT due, due + interval '10 minutes', due, due, 1, n % 1024,
    floor(extract(epoch FROM due))::bigint, reminder, 'user-' || n % 100000
        || '@example.com', 'sent', 'webhook', 'Water the plants'
FROM generate_series(1, $1) AS n,
    LATERAL (
        SELECT $2::timestamptz + (n - 1) * $3::interval AS due,
            'old' || lpad(n::text, 17, '0') AS reminder
    ) AS made;
"""
_SEED_ATTEMPTS = """
INSERT INTO attempts (at, number, firing_id, channel, outcome, destination)
SELECT due_at, 1, reminder_id || '.' || due_second, channel, 'sent', 'app' FROM firings;
"""
# The fired one-off each seeded firing rang for, as its claim left it (last changed when it
# rang, keeping the instant it rang at in `due_at` and `rang_due_at`): retention deletes it
# with its firing, as it would an app's one-off (the churn run).
_SEED_REMINDERS = """
INSERT INTO reminders (
    created_at, updated_at, due_at, rang_due_at, freshness, version, shard, id, owner, status,
    channel, text, zone, anchor, at
)
SELECT due_at - interval '1 hour', due_at, due_at, due_at, 600, 2, shard, reminder_id, owner,
    'fired', channel, text, 'UTC',
    to_char(due_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') || '+00:00',
    to_char(due_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
FROM firings;
"""
_ANALYZE = "ANALYZE firings, attempts, reminders"
_DELETED = """
SELECT coalesce(sum(n_tup_del), 0) FROM pg_stat_user_tables
WHERE relname IN ('firings', 'attempts')
"""
# The lateness (due → sent, seconds) of the rings due in a time window: p99 and count.
_LATENESS = """
SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM sent_at - due_at)),
    count(*)
FROM firings
WHERE due_second BETWEEN floor(extract(epoch FROM $1::timestamptz))::bigint
    AND floor(extract(epoch FROM $2::timestamptz))::bigint
  AND due_at BETWEEN $1 AND $2 AND sent_at IS NOT NULL
"""
_FIRINGS_COUNTS = """
SELECT n_tup_ins, n_tup_del FROM pg_stat_user_tables WHERE relname = 'firings'
"""
_INSERTED = """
SELECT coalesce(sum(n_tup_ins), 0) FROM pg_stat_user_tables
WHERE relname IN ('firings', 'attempts', 'reminders')
"""
_COUNTS_WAIT_SECONDS = 10.0
_POLL_SECONDS = 1.0
_WATCH_LIMIT_SECONDS = 1800.0
_AFTER_DELETION_SECONDS = 15.0  # rings due at the end of the window are sent by then
_CHURN_KEEP = "1d"  # the shortest TOCSIN_RETAIN_FIRINGS
# From the seed to about the first ring (workers start, the save, the lead to a minute start).
_CHURN_LEAD_SECONDS = 60
_CHURN_GLANCE_SECONDS = 60.0
_CHURN_OVERTIME_SECONDS = 600  # retention passes every 30 s: it is long done by then


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
            "autovacuum": deletion.get("autovacuum"),
            "lost": [without["metrics"]["lost"], with_backlog["metrics"]["lost"]],
            "duplicates": [
                without["metrics"]["duplicates"],
                with_backlog["metrics"]["duplicates"],
            ],
        },
    }


def _steady(spec: RetentionSpec, *, backlog: bool = False) -> FiringSpec:
    async def seed(url: str) -> None:
        # A second apart, the newest due 40 days ago.
        first = datetime.now(UTC) - timedelta(days=40, seconds=spec.old_firings)
        connection = await asyncpg.connect(url)
        try:
            await connection.execute(_SEED, spec.old_firings, first, timedelta(seconds=1))
            await connection.execute(_SEED_ATTEMPTS)
            await connection.execute(_ANALYZE)
        finally:
            await connection.close()

    async def watch(url: str) -> dict[str, Any]:
        return await _watch_deletion(url, 2 * spec.old_firings)

    return _steady_run(spec, prepare=seed, beside=watch) if backlog else _steady_run(spec)


def _steady_run(
    spec: RetentionSpec | ChurnSpec,
    *,
    prepare: Callable[[str], Coroutine[Any, Any, None]] | None = None,
    beside: Callable[[str], Coroutine[Any, Any, dict[str, Any]]] | None = None,
    worker_settings: tuple[tuple[str, str], ...] = (),
) -> FiringSpec:
    """The steady ring load of `spec` as `tocsin bench steady` makes it, with a database
    prepared and a watch beside."""
    return FiringSpec(
        scenario="steady",
        db="postgres",
        reminders=spec.rate * spec.duration,
        spread=spec.duration,
        workers=spec.workers,
        channel=spec.channel,
        pg_url=spec.pg_url,
        rate=spec.rate,
        worker_settings=worker_settings,
        prepare=prepare,
        beside=beside,
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
        tables = await reading(connection)
        settings = await autovacuum_settings(connection)
        note_if_unvacuumed(settings)
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
        "autovacuum": settings["autovacuum"],
    }


@dataclass(frozen=True, kw_only=True)
class ChurnSpec:
    """A steady ring load beside a retention that deletes as many old rings as it brings."""

    rate: int
    duration: int
    workers: int
    channel: str
    pg_url: str | None = None

    @property
    def seeded(self) -> int:
        """Old rings seeded: as many as the run rings, so the tables end as full as they
        began."""
        return self.rate * self.duration


async def run_churn(spec: ChurnSpec) -> dict[str, Any]:
    """Seed a retention window's worth of old rings, run the steady load, and read the churn
    tables before, every minute, and after (`tocsin_bench.bloat`)."""
    found: dict[str, Any] = {}

    async def seed(url: str) -> None:
        found.update(await seed_churn(url, spec))

    async def watch(url: str) -> dict[str, Any]:
        return await _watch_churn(url, spec)

    note(f"retention churn: {spec.seeded:,} old rings coming of age at {spec.rate}/s")
    keep = (("retain_firings", _CHURN_KEEP),)
    steady = await run_firing(_steady_run(spec, prepare=seed, beside=watch, worker_settings=keep))
    metrics = steady["metrics"]
    churn = metrics.get("beside", {})
    return {
        "scenario": "retention churn",
        "params": {
            "db": "postgres",
            "rate_per_s": spec.rate,
            "duration_s": spec.duration,
            "workers": spec.workers,
            "channel": spec.channel,
            "retain_firings": _CHURN_KEEP,
            "seeded_rings": spec.seeded,
            **found["autovacuum"],
        },
        "metrics": {
            "p99_sent_s": metrics["due_to_sent_s"]["p99"],
            "lost": metrics["lost"],
            "duplicates": metrics["duplicates"],
            "old_rings_deleted": churn.get("deleted"),
            "before": found["before"],
            "every_minute": churn.get("every_minute"),
            "after": churn.get("after"),
        },
    }


async def seed_churn(url: str, spec: ChurnSpec) -> dict[str, Any]:
    """The old rings, their attempts and reminders, at the ring rate, the first coming of age
    for deletion about when the first ring is due (so that retention deletes as fast as the
    run rings); the server's autovacuum settings and the tables' reading before the run."""
    first = datetime.now(UTC) - timedelta(days=1, seconds=-_CHURN_LEAD_SECONDS)
    connection = await asyncpg.connect(url)
    try:
        counted = await connection.fetchval(_INSERTED) + 3 * spec.seeded  # once the seed is in
        await connection.execute(_SEED, spec.seeded, first, timedelta(seconds=1 / spec.rate))
        await connection.execute(_SEED_ATTEMPTS)
        await connection.execute(_SEED_REMINDERS)
    finally:
        await connection.close()  # its row counts reach the statistics as it closes
    connection = await asyncpg.connect(url)
    try:
        # Analysed once the seed's counts are in: counts arriving after an ANALYZE would be
        # added to the rows it found.
        give_up = time.monotonic() + _COUNTS_WAIT_SECONDS
        while await connection.fetchval(_INSERTED) < counted:
            if time.monotonic() > give_up:
                break
            await asyncio.sleep(0.1)
        await connection.execute(_ANALYZE)
        settings = await autovacuum_settings(connection)
        note_if_unvacuumed(settings)
        return {"autovacuum": settings, "before": await reading(connection)}
    finally:
        await connection.close()


async def _watch_churn(url: str, spec: ChurnSpec) -> dict[str, Any]:
    """A glance at the churn tables every minute until every seeded ring was deleted and
    every ring of the run claimed (or the run should long be over), then a full reading once
    the last rings were sent."""
    connection = await asyncpg.connect(url)
    try:
        began = time.monotonic()
        give_up = began + spec.duration + _CHURN_LEAD_SECONDS + _CHURN_OVERTIME_SECONDS
        every_minute: dict[str, Any] = {}
        inserted = deleted = 0
        while (inserted < 2 * spec.seeded or deleted < spec.seeded) and time.monotonic() < give_up:
            await asyncio.sleep(_CHURN_GLANCE_SECONDS)
            minute = round((time.monotonic() - began) / 60)
            every_minute[f"{minute:02d} min"] = await glance(connection)
            inserted, deleted = await connection.fetchrow(_FIRINGS_COUNTS)
        await asyncio.sleep(_AFTER_DELETION_SECONDS)
        return {
            "deleted": deleted,
            "every_minute": every_minute,
            "after": await reading(connection),
        }
    finally:
        await connection.close()
