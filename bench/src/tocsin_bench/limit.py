"""`bench limit`: what the database itself allows — the store's claim transactions, issued by
a bare asyncpg loop with no Tocsin code around them, over pre-inserted pending rows.

Only the SQL text is shared with the store (`tocsin.store.postgres.queries`: CLAIM,
INSERT_FIRINGS), so the statements measured are the ones the engine runs, and they run as
the store runs them: each statement on its own, a transaction of its own, with no planner
setting. The loop around them is as thin as it gets: arguments built before the clock
starts. Two passes, each over its own fresh rows: claims alone, then every batch claimed
and its results recorded as sent — all the writes a ring costs the database, which is what
the engine's firings per second compare to.

Beside them, a floor that does not depend on Tocsin's statements: a bare two-write ring on
two tables of its own (`_FLOOR_TABLES`), one conditional update of reminder-like rows and
one insert of firing-like rows, FLOOR_BATCH rows a statement, each statement a transaction,
one connection, synchronous commit — what a ring must cost, to steer by. Each ringing pass
reports its WAL a ring (`pg_stat_wal` around it: the whole server's, so for a quiet sitting).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import orjson

from tocsin.store import batches as declared
from tocsin.store.base import FEED_WAITING
from tocsin.store.batches import json_rows
from tocsin.store.postgres.queries import CLAIM, INSERT_FIRINGS, RING_CONTENTS
from tocsin_bench import costs
from tocsin_bench.databases import migrated_store, throwaway
from tocsin_bench.progress import note
from tocsin_bench.stats import rate

# Pending one-offs due in one bucket, spread over the shards, as a burst leaves them; ids
# `<prefix><n in hex>`, so each pass has rows of its own.
_FILL = """
WITH saved AS (
    INSERT INTO reminders (
        due_at, created_at, updated_at, bucket, freshness, version, shard, id, owner, status,
        channel, text, zone, anchor, at
    )
    SELECT $1, $2, $2, $3, 600, 1, (g % 1024)::smallint, $6 || lpad(to_hex(g), 15, '0'),
        'owner-' || g, 'pending', 'webhook', 'Take blood pressure medication', 'UTC',
        $4, $4
    FROM generate_series(1, $5) AS g
    RETURNING shard, bucket, due_at, id, version
)
INSERT INTO due (lane, rank, bucket, due_at, reminder_id, version, shard)
SELECT shard / 64, 0, bucket, due_at, id, version, shard FROM saved
"""

_SENDER = "limit"

# The one lease every claim is fenced by, as the engine's claims are (one part of one).
_LEASE = """
INSERT INTO leases (parts, part, holder, expires_at, epoch)
VALUES (1, 0, $1, now() + interval '1 hour', 1)
ON CONFLICT (parts, part) DO NOTHING
"""


# The floor's tables: the columns a ring reads or writes and a little payload, keyed by id,
# with no other index (an index the loader needs is a cost of the design, not of the floor).
_FLOOR_TABLES = """
CREATE SCHEMA floor;
CREATE TABLE floor.reminders (
    id text PRIMARY KEY,
    owner text NOT NULL,
    status text NOT NULL,
    due_at timestamptz NOT NULL,
    version integer NOT NULL,
    text text NOT NULL
);
CREATE TABLE floor.firings (
    id text PRIMARY KEY,
    reminder_id text NOT NULL,
    due_at timestamptz NOT NULL,
    state text NOT NULL,
    sent_at timestamptz NOT NULL
)
"""
_FLOOR_FILL = """
INSERT INTO floor.reminders (id, owner, status, due_at, version, text)
SELECT 'f' || lpad(to_hex(g), 15, '0'), 'owner-' || g, 'pending', $1, 1,
    'Take blood pressure medication'
FROM generate_series(1, $2) AS g
"""
# The claim: each row moved to its next due, if it is still at the version loaded.
_FLOOR_CLAIM = """
UPDATE floor.reminders AS r SET due_at = c.next_due, version = r.version + 1
FROM unnest($1::text[], $2::integer[], $3::timestamptz[]) AS c (id, version, next_due)
WHERE r.id = c.id AND r.version = c.version
RETURNING r.id
"""
# The delivery record: one firing a claimed ring, written once, with its outcome.
_FLOOR_RECORD = """
INSERT INTO floor.firings (id, reminder_id, due_at, state, sent_at)
SELECT c.id || '.' || $3, c.id, $2, 'sent', now() FROM unnest($1::text[]) AS c (id)
"""
FLOOR_BATCH = 5_000


@dataclass(frozen=True, kw_only=True)
class LimitSpec:
    rows: int = 200_000
    connections: int = 2
    batch: int = 1000  # the engine's claim batch (EngineTuning.claim_batch)
    floor_batch: int = FLOOR_BATCH
    pg_url: str | None = None

    def params(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "connections": self.connections,
            "batch": self.batch,
            "floor_batch": self.floor_batch,
        }


async def run_limit(spec: LimitSpec) -> dict[str, Any]:
    async with throwaway("postgres", pg_url=spec.pg_url) as url:
        store = await migrated_store(url)
        await store.close()
        due = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
        for prefix in ("c", "r"):
            await _fill(url, due, spec.rows, prefix)
        await _fill_floor(url, due, spec.rows)
        connections = [await asyncpg.connect(url) for _ in range(spec.connections)]
        try:
            note(f"limit: claiming {spec.rows:,} rows, {spec.connections} connections")
            made = await _batches(connections[0], spec, due, "c")
            claimed, claim_s = await _pass(connections, made, record=False)
            note(f"limit: claiming and recording {spec.rows:,} rows")
            batches = await _batches(connections[0], spec, due, "r")
            rang, ring_s, ring_wal = await _measured(
                connections, lambda: _pass(connections, batches, record=True)
            )
        finally:
            for connection in connections:
                await connection.close()
        note(f"limit: the floor, a bare two-write ring, over {spec.rows:,} rows")
        floor = await _floor(url, due, spec)
    recorded_per_s = round(rate(rang, ring_s), 1)
    return {
        "scenario": "limit",
        "params": spec.params(),
        "metrics": {
            "claimed": claimed,
            "claim_seconds": round(claim_s, 3),
            "claims_per_s": round(rate(claimed, claim_s), 1),
            "claimed_and_recorded": rang,
            "claim_and_record_seconds": round(ring_s, 3),
            "claim_and_record_per_s": recorded_per_s,
            "claim_and_record_wal_per_ring": costs.wal_per_ring(*ring_wal, rang),
            "floor": floor,
            "claim_and_record_share_of_floor": (
                round(recorded_per_s / floor["rings_per_s"], 3) if floor["rings_per_s"] else None
            ),
        },
    }


async def _fill(url: str, due: datetime, rows: int, prefix: str) -> None:
    connection = await asyncpg.connect(url)
    try:
        anchor = due.isoformat()
        bucket = int(due.timestamp()) // 60
        await connection.execute(_FILL, due, due - timedelta(hours=1), bucket, anchor, rows, prefix)
        await connection.execute(_LEASE, _SENDER)
        await connection.execute("ANALYZE reminders")
        await costs.report_counts(connection)
    finally:
        await connection.close()


async def _fill_floor(url: str, due: datetime, rows: int) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(_FLOOR_TABLES)
        await connection.execute(_FLOOR_FILL, due, rows)
        await connection.execute("ANALYZE floor.reminders")
        await costs.report_counts(connection)
    finally:
        await connection.close()


async def _floor(url: str, due: datetime, spec: LimitSpec) -> dict[str, Any]:
    """The bare two-write ring over every floor row: rings, seconds, rate and WAL a ring."""
    ids = sorted("f" + format(n, "x").rjust(15, "0") for n in range(1, spec.rows + 1))
    step = spec.floor_batch
    chunks = [ids[start : start + step] for start in range(0, len(ids), step)]
    claims = [(chunk, [1] * len(chunk), [due + timedelta(days=1)] * len(chunk)) for chunk in chunks]
    connection = await asyncpg.connect(url, server_settings={"synchronous_commit": "on"})
    try:
        rings, seconds, wal = await _measured(
            [connection], lambda: _floor_loop(connection, claims, due)
        )
    finally:
        await connection.close()
    return {
        "rings": rings,
        "seconds": round(seconds, 3),
        "rings_per_s": round(rate(rings, seconds), 1),
        "wal_per_ring": costs.wal_per_ring(*wal, rings),
    }


async def _floor_loop(
    connection: asyncpg.Connection, claims: list[tuple[Any, ...]], due: datetime
) -> tuple[int, float]:
    began = time.perf_counter()
    rings = 0
    suffix = str(int(due.timestamp()))
    for claim in claims:
        claimed = [row[0] for row in await connection.fetch(_FLOOR_CLAIM, *claim)]
        status = await connection.execute(_FLOOR_RECORD, claimed, due, suffix)
        rings += int(status.rpartition(" ")[2])
    return rings, time.perf_counter() - began


async def _measured(
    connections: Sequence[asyncpg.Connection], run: Callable[[], Awaitable[tuple[int, float]]]
) -> tuple[int, float, tuple[costs.WalCounters | None, costs.WalCounters | None]]:
    """`run`'s rings and seconds, with the WAL counters before and after it, each read once
    the connections that run it have reported their counts (before: an earlier pass's)."""
    for connection in connections:
        await costs.report_counts(connection)
    before = await costs.wal_counters(connections[0])
    rings, seconds = await run()
    for connection in connections:
        await costs.report_counts(connection)
    after = await costs.wal_counters(connections[0])
    return rings, seconds, (before, after)


_NO_EARLIER = json_rows([[]] * 8)  # no attempts at other destinations
# The fields of a firing that CLAIM answers, by the name INSERT_FIRINGS reads each as.
_CLAIMED = {
    "firing_id": "firing_id", "reminder_id": "reminder_id", "owner": "owner", "shard": "shard",
    "due_at": "due_at", "deadline": "deadline", "route": "channel", "text": "text",
    "metadata": "metadata", "source": "source",
}  # fmt: skip


def claim_batch(
    loaded: Sequence[tuple[str, str]],
    due: datetime,
    next_due: datetime | None = None,
    next_bucket: int | None = None,
) -> str:
    """CLAIM's $1 for one-offs (or series moving on to `next_due`) at version 1, all due at
    `due`, claimed `sending` under part 0 at epoch 1 (_LEASE), built by name from the order
    `tocsin.store.batches` declares, as the store builds it; `loaded`: each reminder's id and
    what its load read for the claim (RING_CONTENTS)."""
    size = len(loaded)
    return declared.POSTGRES_CLAIMS.json(
        {
            "reminder_id": [reminder_id for reminder_id, _ in loaded],
            "due_at": [due] * size,
            "bucket": [int(due.timestamp()) // 60] * size,
            "version": [1] * size,  # the version loaded
            "next_due_at": [next_due] * size,
            "next_bucket": [next_bucket] * size,
            "state": ["sending"] * size,
            "part": [0] * size,  # held at epoch 1 (_LEASE)
            "epoch": [1] * size,
            "error": [None] * size,
            "content": [orjson.Fragment(content) for _, content in loaded],
            "prev_due": [None] * size,  # the first ring of each: none before it
        }
    )


def sent_firings(
    rows: Sequence[asyncpg.Record], *, claimed_at: datetime, sent_at: datetime, destination: str
) -> str:
    """INSERT_FIRINGS' $1 for the rings CLAIM answered (`rows`), each accepted at its first
    try by `destination` on the webhook (kept on the firing row), by name."""
    size = len(rows)
    return declared.POSTGRES_UNWRITTEN.json(
        {name: [row[field] for row in rows] for name, field in _CLAIMED.items()}
        | {
            "created_at": [claimed_at] * size,  # created at the claim
            "state": ["sent"] * size,
            "next_attempt_at": [None] * size,
            "number": [1] * size,
            "at": [sent_at] * size,
            "channel": ["webhook"] * size,
            "outcome": ["sent"] * size,
            "last_error": [None] * size,
            "provider_id": [None] * size,
            "destination": [destination] * size,
            "error": [None] * size,
            "sent_to": [destination] * size,  # a first try accepted: kept on the firing row
            "priority": [None] * size,  # urgent
        }
    )


async def _batches(
    connection: asyncpg.Connection, spec: LimitSpec, due: datetime, prefix: str
) -> list[tuple[Any, ...]]:
    """The CLAIM arguments of every batch, made before the clock starts, by name from the
    order `tocsin.store.batches` declares."""
    ids = [prefix + format(n, "x").rjust(15, "0") for n in range(1, spec.rows + 1)]
    loaded = [(row[0], row[1]) for row in await connection.fetch(RING_CONTENTS, ids)]
    now = datetime.now(UTC)
    made = []
    for start in range(0, len(loaded), spec.batch):
        chunk = loaded[start : start + spec.batch]
        claims = claim_batch(chunk, due)
        made.append(
            (
                claims,
                now,
                _SENDER,
                now + timedelta(seconds=20),
                1,
                FEED_WAITING,  # the note of a ring for the in-app feed (none here)
            )
        )
    return made


async def _pass(
    connections: Sequence[asyncpg.Connection], batches: list[tuple[Any, ...]], *, record: bool
) -> tuple[int, float]:
    """Run the batches over the connections (round robin); rings done and seconds taken."""
    began = time.perf_counter()
    counts = await asyncio.gather(
        *(
            _loop(connection, batches[n :: len(connections)], record=record)
            for n, connection in enumerate(connections)
        )
    )
    return sum(counts), time.perf_counter() - began


async def _loop(
    connection: asyncpg.Connection, batches: list[tuple[Any, ...]], *, record: bool
) -> int:
    done = 0
    for args in batches:
        rows = await connection.fetch(CLAIM, *args)
        if not record:
            done += len(rows)
            continue
        if not rows:
            continue
        now = datetime.now(UTC)
        firings = sent_firings(rows, claimed_at=now, sent_at=now, destination="app:limit")
        done += await connection.fetchval(INSERT_FIRINGS, firings, _NO_EARLIER, [])
    return done
