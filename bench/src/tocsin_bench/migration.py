"""`bench migration`: migrations 0034 and 0036 with the service running, on PostgreSQL.

A database as the release before left it (migrated through 0033), holding `firings` rows of
history written by id, takes a steady load of firing writes on two connections: a ring's
firing inserted and an older one's outcome updated, as the release before's workers write
them (by id), and after 0034 as this release's (by the key: the trigger gives them their id
until 0036 drops it). Meanwhile `tocsin migrate --before-upgrade` (0034: the column, the
batches, the key built CONCURRENTLY; 0035 has no reminders to copy) and then `tocsin
migrate` (0036 and 0037: catalogue changes under
a short lock) run as processes of their own, as an operator runs them. The report: how long
each took, the WAL 0034 wrote (the load's included), and how long the load's writes took
before, during 0034 and during 0036: the longest is how long a migration held a write off.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg

from tocsin.store.migrations import BATCH_PAGES
from tocsin.store.postgres import migrating
from tocsin.store.postgres import queries as q
from tocsin_bench.databases import throwaway
from tocsin_bench.progress import note
from tocsin_bench.stats import rate, spread

KEYED_BY_ID = 33  # the release before's last migration
FIRST = 1_796_000_000  # the due second of the history's first firing (2026-11-29)
REMINDERS = 500_000  # the history's reminders: each has rings of its own

# The history: `$1` sent firings, one a second from FIRST, of REMINDERS reminders.
_HISTORY = """
INSERT INTO firings (
    id, reminder_id, owner, shard, due_at, deadline, channel, text, state, attempts, created_at,
    sent_at, sent_to
)
SELECT 'r' || n % $2 || '.' || ($3 + n), 'r' || n % $2, 'owner-' || n % 100003, n % 1024,
    to_timestamp($3 + n), to_timestamp($3 + n) + interval '1 day', 'webhook',
    left('Take the blood pressure pills, then water the plants on the balcony', 20 + n % 41),
    'sent', 1, to_timestamp($3 + n), to_timestamp($3 + n) + interval '0.2 second', 'webhook'
FROM generate_series(1, $1::integer) AS n
"""
# A ring's firing, as the release before writes it (by id) and as this one does (by key).
_BY_ID = """
INSERT INTO firings (
    id, reminder_id, owner, shard, due_at, deadline, channel, text, state, attempts, created_at
)
VALUES ('n' || $1::bigint || '.' || $2::bigint, 'n' || $1::bigint, 'owner-7', 7,
    to_timestamp($2), to_timestamp($2) + interval '1 day', 'webhook', 'Water', 'queued', 0, now())
"""
_BY_KEY = """
INSERT INTO firings (
    due_second, reminder_id, owner, shard, due_at, deadline, channel, text, state, attempts,
    created_at
)
VALUES ($2::bigint, 'n' || $1::bigint, 'owner-7', 7, to_timestamp($2),
    to_timestamp($2) + interval '1 day', 'webhook', 'Water', 'queued', 0, now())
"""
# An older ring's outcome, anywhere in the table: by id before 0034's upgrade, by key after.
_TRIED_BY_ID = """
UPDATE firings SET attempts = attempts + 1 WHERE id = 'r' || $1::bigint || '.' || $2::bigint
"""
_TRIED_BY_KEY = """
UPDATE firings SET attempts = attempts + 1
WHERE (due_second, reminder_id) = ($2::bigint, 'r' || $1::bigint)
"""


@dataclass(frozen=True, kw_only=True)
class MigrationSpec:
    firings: int = 2_000_000
    rate: int = 200  # writes a second (half inserts, half updates)
    batch_pages: int = BATCH_PAGES
    pg_url: str | None = None
    quiet_seconds: float = 5.0  # of the load alone, before, between and after the migrations


class PhasedLoad:
    """Steady writes on connections of their own, `rate` a second in all, in phases: each
    write's time lands in the phase running then. `write` is the one write."""

    def __init__(self, url: str, rate: int) -> None:
        self._url = url
        self._rate = rate
        self.phase = "before"
        self.times: dict[str, list[float]] = {}
        self.stamps: list[tuple[float, float]] = []  # each write's start (epoch s) and length
        self._stop = asyncio.Event()

    async def run(self, lane: int, lanes: int) -> None:
        connection = await asyncpg.connect(self._url)
        try:
            pause = lanes / self._rate
            n = lane
            next_at = time.monotonic()
            while not self._stop.is_set():
                next_at += pause
                at, started = time.time(), time.perf_counter()
                await self.write(connection, n)
                took = time.perf_counter() - started
                self.times.setdefault(self.phase, []).append(took)
                self.stamps.append((at, took))
                n += lanes
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        finally:
            await connection.close()

    async def write(self, connection: asyncpg.Connection, n: int) -> None:
        raise NotImplementedError

    @asynccontextmanager
    async def running(self, lanes: int = 2) -> AsyncIterator[None]:
        """The writes on `lanes` connections while the body runs."""
        tasks = [asyncio.create_task(self.run(lane, lanes)) for lane in range(lanes)]
        try:
            yield
        finally:
            self._stop.set()
            await asyncio.gather(*tasks)


class _Load(PhasedLoad):
    """Firing writes: a ring's firing inserted, an older one's outcome updated; by id as the
    release before writes them, by key (`by_key`) as this one does."""

    def __init__(self, url: str, spec: MigrationSpec) -> None:
        super().__init__(url, spec.rate)
        self._firings = spec.firings
        self.by_key = False

    async def write(self, connection: asyncpg.Connection, n: int) -> None:
        if n % 2:
            old = (n * 7919) % self._firings + 1
            tried = _TRIED_BY_KEY if self.by_key else _TRIED_BY_ID
            await connection.execute(tried, old % REMINDERS, FIRST + old)
        else:
            await connection.execute(_BY_KEY if self.by_key else _BY_ID, n, FIRST + 10**7 + n)


async def run_migration(spec: MigrationSpec) -> dict[str, Any]:
    async with throwaway("postgres", pg_url=spec.pg_url) as url:
        connection = await asyncpg.connect(url)
        try:
            await migrating.migrate(connection, before_upgrade=False, through=KEYED_BY_ID)
            note(f"writing {spec.firings:,} firings of history by id")
            await connection.execute(_HISTORY, spec.firings, REMINDERS, FIRST)
            await connection.execute("VACUUM ANALYZE firings")
            await connection.execute("CHECKPOINT")
            pages = await connection.fetchval(q.TABLE_PAGES, "firings")
            load = _Load(url, spec)
            async with load.running():
                await asyncio.sleep(spec.quiet_seconds)
                load.phase = "0034"
                note("tocsin migrate --before-upgrade (0034 and 0035), the release before writing")
                took_0034, wal = await before_upgrade(connection, url, spec.batch_pages)
                load.by_key, load.phase = True, "upgraded"
                await asyncio.sleep(spec.quiet_seconds)
                load.phase = "0036"
                note("tocsin migrate (0036 and 0037), this release writing")
                took_0036 = await migrate_process(url)
                load.phase = "after"
                await asyncio.sleep(spec.quiet_seconds)
            keyed = await connection.fetchval(
                "SELECT count(*) FROM firings WHERE due_second IS NOT NULL"
            )
            rows = await connection.fetchval("SELECT count(*) FROM firings")
        finally:
            await connection.close()
    return {
        "scenario": "migration",
        "config": {
            "firings": spec.firings,
            "pages": pages,
            "batch_pages": spec.batch_pages,
            "writes_per_s": spec.rate,
        },
        "metrics": {
            "0034_s": round(took_0034, 1),
            "0034_rows_per_s": rate(spec.firings, took_0034),
            "0034_wal_bytes": wal,
            "0034_wal_per_row": round(float(wal) / spec.firings, 1),
            "0036_s": round(took_0036, 2),
            "rows": rows,
            "rows_keyed": keyed,
            "writes_ms": {phase: write_spread(times) for phase, times in load.times.items()},
        },
    }


async def before_upgrade(
    connection: asyncpg.Connection, url: str, batch_pages: int
) -> tuple[float, int]:
    """`tocsin migrate --before-upgrade` run as a process of its own: the seconds it took,
    and the bytes of WAL the server wrote meanwhile (whatever else wrote them too)."""
    wal_before = await connection.fetchval("SELECT pg_current_wal_lsn()")
    took = await migrate_process(url, "--before-upgrade", "--batch-pages", str(batch_pages))
    wal = await connection.fetchval("SELECT pg_current_wal_lsn() - $1::pg_lsn", wal_before)
    return took, int(wal)


async def migrate_process(url: str, *args: str) -> float:
    """Seconds `tocsin migrate` took, run as a process of its own."""
    started = time.monotonic()
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "tocsin", "migrate", "--db", url, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"tocsin migrate {' '.join(args)} failed: {done.stderr}")
    return time.monotonic() - started


def write_spread(times: list[float]) -> dict[str, float]:
    """How many writes, and `stats.spread` of their times in milliseconds."""
    ms = spread([seconds * 1000 for seconds in times])
    return {"count": len(times), **{name: round(value, 2) for name, value in ms.items()}}
