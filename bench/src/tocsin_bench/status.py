"""`bench status`: how long the status board takes to read (`GET /v1/status` without its
2-second keep) from a large database with a busy minute ahead and a busy minute behind — and,
beside it, what reading the same hour exactly, without the caps, would take.

The rows are written by SQL in bulk (the board reads them; how they were saved does not
matter): `reminders` pending over the next day, `busy` of them in the minute 10 minutes
ahead; `firings` due over the last hour (98 % sent, 1 % failed, 1 % expired), `busy` of
them in the minute 10 minutes ago.
"""

from __future__ import annotations

import sqlite3
import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from tocsin.clock import SystemClock
from tocsin.statusboard.board import Board
from tocsin.store.codec import EPOCH
from tocsin_bench.databases import FILL_DUE, FILL_DUE_SAID, migrated_store, throwaway
from tocsin_bench.progress import note

DAY_SECONDS = 86_400
HOUR_SECONDS = 3_540  # the last hour's firings, kept inside its 60 minutes

# -- PostgreSQL ------------------------------------------------------------------------------

# $1 rows, $2 busy rows, $3 the busy minute's start, $4 now, $5 seconds the rest spread over.
PG_REMINDERS = """
INSERT INTO reminders (id, owner, shard, text, channel, zone, anchor, status, due_at, bucket,
                       freshness, version, created_at, updated_at)
SELECT 'bench' || n, 'owner-' || n % 100000, n % 1024, 'bench', 'webhook', 'UTC', 'bench',
       'pending', due, floor(extract(epoch FROM due) / 60)::integer, 600, 1, $4, $4
FROM (
    SELECT n, CASE WHEN n <= $2 THEN $3::timestamptz + (n % 60) * interval '1 second'
                   ELSE $4::timestamptz + (n % $5) * interval '1 second' END AS due
    FROM generate_series(1, $1) AS n
) AS made
"""

# $1 rows, $2 busy rows, $3 the busy minute's start, $4 an hour ago.
PG_FIRINGS = """
INSERT INTO firings (due_second, reminder_id, owner, shard, due_at, deadline, channel, text,
                     state, attempts, created_at, sent_at)
SELECT floor(extract(epoch FROM due))::bigint, 'bench' || n,
       'owner-' || n % 100000, n % 1024, due, due + interval '10 minutes', 'webhook', 'bench',
       CASE n % 100 WHEN 0 THEN 'failed' WHEN 1 THEN 'expired' ELSE 'sent' END, 1, due,
       CASE WHEN n % 100 > 1 THEN due + (n % 997) * interval '1 millisecond' END
FROM (
    SELECT n, CASE WHEN n <= $2 THEN $3::timestamptz + (n % 60) * interval '1 second'
                   ELSE $4::timestamptz + (n % 3540) * interval '1 second' END AS due
    FROM generate_series(1, $1) AS n
) AS made
"""

# What an exact board would read: every pending reminder of the next hour, every firing of
# the last (the minutes as bucket numbers $1..$2, the hour from $3).
PG_EXACT_AHEAD = """
SELECT bucket, count(*) FROM reminders
WHERE status = 'pending' AND bucket BETWEEN $1 AND $2 GROUP BY bucket
"""
PG_EXACT_RINGS = (
    "SELECT state, sent_at - due_at FROM firings"
    " WHERE due_second >= floor(extract(epoch FROM $1::timestamptz))::bigint AND due_at >= $1"
)

# -- SQLite ----------------------------------------------------------------------------------

LITE_REMINDERS = """
WITH RECURSIVE numbers (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM numbers WHERE n < :rows)
INSERT INTO reminders (id, owner, shard, text, channel, zone, anchor, status, due_at, bucket,
                       freshness, version, created_at, updated_at)
SELECT 'bench' || n, 'owner-' || n % 100000, n % 1024, 'bench', 'webhook', 'UTC', 'bench',
       'pending', due, due / 60000000, 600, 1, :now, :now
FROM (
    SELECT n, CASE WHEN n <= :busy THEN :busy_at + (n % 60) * 1000000
                   ELSE :now + (n % :spread) * 1000000 END AS due
    FROM numbers
)
"""

LITE_FIRINGS = """
WITH RECURSIVE numbers (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM numbers WHERE n < :rows)
INSERT INTO firings (id, reminder_id, owner, shard, due_at, deadline, channel, text, state,
                     attempts, created_at, sent_at)
SELECT 'bench' || n || '.' || (due / 1000000), 'bench' || n, 'owner-' || n % 100000,
       n % 1024, due, due + 600000000, 'webhook', 'bench',
       CASE n % 100 WHEN 0 THEN 'failed' WHEN 1 THEN 'expired' ELSE 'sent' END, 1, due,
       CASE WHEN n % 100 > 1 THEN due + (n % 997) * 1000 END
FROM (
    SELECT n, CASE WHEN n <= :busy THEN :busy_at + (n % 60) * 1000000
                   ELSE :hour_ago + (n % 3540) * 1000000 END AS due
    FROM numbers
)
"""

LITE_EXACT_AHEAD = """
SELECT bucket, count(*) FROM reminders
WHERE status = 'pending' AND bucket BETWEEN :first AND :last GROUP BY bucket
"""
LITE_EXACT_RINGS = "SELECT state, sent_at - due_at FROM firings WHERE due_at >= :hour_ago"


@dataclass(frozen=True, kw_only=True)
class StatusSpec:
    db: str = "postgres"
    reminders: int = 1_000_000
    firings: int = 500_000
    busy: int = 100_000  # in one minute ahead, and (of the firings) in one minute behind
    reads: int = 5
    pg_url: str | None = None

    def params(self) -> dict[str, Any]:
        return {
            "db": self.db,
            "reminders": self.reminders,
            "firings": self.firings,
            "busy": self.busy,
        }


@dataclass(frozen=True, kw_only=True)
class _Moments:
    now: datetime
    busy_ahead: datetime
    busy_behind: datetime
    hour_ago: datetime

    @classmethod
    def at(cls, now: datetime) -> _Moments:
        minute = now.replace(second=0, microsecond=0)
        return cls(
            now=now,
            busy_ahead=minute + timedelta(minutes=10),
            busy_behind=minute - timedelta(minutes=10),
            hour_ago=minute - timedelta(minutes=59),
        )


async def run_status(spec: StatusSpec) -> dict[str, Any]:
    moments = _Moments.at(datetime.now(UTC))
    async with throwaway(spec.db, pg_url=spec.pg_url) as url:
        store = await migrated_store(url)
        try:
            note(f"status: writing {spec.reminders:,} reminders and {spec.firings:,} firings")
            fill, exact = (
                (_postgres, _exact_postgres)
                if spec.db == "postgres"
                else (
                    _sqlite,
                    _exact_sqlite,
                )
            )
            await fill(url, spec, moments)
            board_ms = []
            for _ in range(spec.reads):
                board = Board(store, SystemClock(), parts=16, lease_seconds=10)
                started = time.perf_counter()
                read = await board.read()
                board_ms.append((time.perf_counter() - started) * 1000)
            exact_ms = await exact(url, moments)
        finally:
            await store.close()
    busiest = max(m["due"] for m in read["ahead"]["minutes"])
    return {
        "scenario": "status",
        "params": spec.params(),
        "metrics": {
            "board_ms_median": round(statistics.median(board_ms), 1),
            "board_ms_max": round(max(board_ms), 1),
            "exact_hour_ms": round(exact_ms, 1),
            "busiest_minute_ahead_shown": busiest,
            "rings_read": sum(
                m["sent"] + m["failed"] + m["expired"] + m["waiting"]
                for m in read["rings"]["minutes"]
            ),
        },
    }


async def _postgres(url: str, spec: StatusSpec, at: _Moments) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(
            PG_REMINDERS, spec.reminders, spec.busy, at.busy_ahead, at.now, DAY_SECONDS
        )
        await connection.execute(PG_FIRINGS, spec.firings, spec.busy, at.busy_behind, at.hour_ago)
        await connection.execute(FILL_DUE_SAID)
        await connection.execute("VACUUM ANALYZE reminders")
        await connection.execute("VACUUM ANALYZE due")
        await connection.execute("VACUUM ANALYZE firings")
    finally:
        await connection.close()


async def _exact_postgres(url: str, at: _Moments) -> float:
    connection = await asyncpg.connect(url)
    try:
        first = _minute(at.now)
        started = time.perf_counter()
        await connection.fetch(PG_EXACT_AHEAD, first, first + 59)
        await connection.fetch(PG_EXACT_RINGS, at.hour_ago)
        return (time.perf_counter() - started) * 1000
    finally:
        await connection.close()


def _us(instant: datetime) -> int:
    return (instant - EPOCH) // timedelta(microseconds=1)


def _minute(instant: datetime) -> int:
    return (instant - EPOCH) // timedelta(minutes=1)


async def _sqlite(url: str, spec: StatusSpec, at: _Moments) -> None:
    connection = sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        common = {"busy": spec.busy, "now": _us(at.now)}
        connection.execute(
            LITE_REMINDERS,
            common | {"rows": spec.reminders, "busy_at": _us(at.busy_ahead), "spread": DAY_SECONDS},
        )
        connection.execute(
            LITE_FIRINGS,
            common
            | {"rows": spec.firings, "busy_at": _us(at.busy_behind), "hour_ago": _us(at.hour_ago)},
        )
        connection.execute(FILL_DUE)
        connection.commit()
        connection.execute("ANALYZE")
    finally:
        connection.close()


async def _exact_sqlite(url: str, at: _Moments) -> float:
    connection = sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        first = _minute(at.now)
        started = time.perf_counter()
        connection.execute(LITE_EXACT_AHEAD, {"first": first, "last": first + 59}).fetchall()
        connection.execute(LITE_EXACT_RINGS, {"hour_ago": _us(at.hour_ago)}).fetchall()
        return (time.perf_counter() - started) * 1000
    finally:
        connection.close()
