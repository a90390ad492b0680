"""`bench limit`: what the database itself allows — the store's claim transactions, issued by
a bare asyncpg loop with no Tocsin code around them, over pre-inserted pending rows.

Only the SQL text is shared with the store (`tocsin.store.postgres.queries`: CLAIM,
RECORD_ATTEMPTS), so the statements measured are the ones the engine runs, and they run as
the store runs them: each statement on its own, a transaction of its own, with no planner
setting. The loop around them is as thin as it gets: arguments built before the clock
starts. Two passes, each over its own fresh rows: claims alone, then every batch claimed
and its results recorded as sent — all the writes a ring costs the database, which is what
the engine's firings per second compare to.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from tocsin.bench.databases import migrated_store, throwaway
from tocsin.bench.progress import note
from tocsin.bench.stats import rate
from tocsin.store.base import FEED_WAITING
from tocsin.store.postgres.queries import CLAIM, RECORD_ATTEMPTS

# Pending one-offs due in one bucket, spread over the shards, as a burst leaves them; ids
# `<prefix><n in hex>`, so each pass has rows of its own.
_FILL = """
INSERT INTO reminders (
    due_at, created_at, updated_at, bucket, freshness, version, shard, id, owner, status,
    channel, text, zone, anchor, at
)
SELECT $1, $2, $2, $3, 600, 1, (g % 1024)::smallint, $6 || lpad(to_hex(g), 15, '0'),
    'owner-' || g, 'pending', 'webhook', 'Take blood pressure medication', 'UTC',
    $4, $4
FROM generate_series(1, $5) AS g
"""

_SENDER = "limit"

# The one lease every claim is fenced by, as the engine's claims are (one part of one).
_LEASE = """
INSERT INTO leases (parts, part, holder, expires_at, epoch)
VALUES (1, 0, $1, now() + interval '1 hour', 1)
ON CONFLICT (parts, part) DO NOTHING
"""


@dataclass(frozen=True, kw_only=True)
class LimitSpec:
    rows: int = 200_000
    connections: int = 2
    batch: int = 1000  # the engine's claim batch (EngineTuning.claim_batch)
    pg_url: str | None = None

    def params(self) -> dict[str, Any]:
        return {"rows": self.rows, "connections": self.connections, "batch": self.batch}


async def run_limit(spec: LimitSpec) -> dict[str, Any]:
    async with throwaway("postgres", pg_url=spec.pg_url) as url:
        store = await migrated_store(url)
        await store.close()
        due = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
        for prefix in ("c", "r"):
            await _fill(url, due, spec.rows, prefix)
        connections = [await asyncpg.connect(url) for _ in range(spec.connections)]
        try:
            note(f"limit: claiming {spec.rows:,} rows, {spec.connections} connections")
            claimed, claim_s = await _pass(connections, _batches(spec, due, "c"), record=False)
            note(f"limit: claiming and recording {spec.rows:,} rows")
            rang, ring_s = await _pass(connections, _batches(spec, due, "r"), record=True)
        finally:
            for connection in connections:
                await connection.close()
    return {
        "scenario": "limit",
        "params": spec.params(),
        "metrics": {
            "claimed": claimed,
            "claim_seconds": round(claim_s, 3),
            "claims_per_s": round(rate(claimed, claim_s), 1),
            "claimed_and_recorded": rang,
            "claim_and_record_seconds": round(ring_s, 3),
            "claim_and_record_per_s": round(rate(rang, ring_s), 1),
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
    finally:
        await connection.close()


def _batches(spec: LimitSpec, due: datetime, prefix: str) -> list[tuple[Any, ...]]:
    """The CLAIM arguments of every batch, made before the clock starts."""
    ids = sorted(prefix + format(n, "x").rjust(15, "0") for n in range(1, spec.rows + 1))
    now = datetime.now(UTC)
    batches = []
    for start in range(0, len(ids), spec.batch):
        chunk = ids[start : start + spec.batch]
        size = len(chunk)
        batches.append(
            (
                chunk,
                [due] * size,
                [1] * size,  # the version loaded
                [None] * size,
                [None] * size,
                ["sending"] * size,
                [0] * size,  # the part, held at epoch 1 (_LEASE)
                [1] * size,
                [None] * size,
                now,
                _SENDER,
                now + timedelta(seconds=20),
                1,
                ["pending"] * size,  # the status each was loaded in
                FEED_WAITING,  # the note of a ring for the in-app feed (none here)
            )
        )
    return batches


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
        ids = [row["id"] for row in rows]
        size, now = len(ids), datetime.now(UTC)
        done += await connection.fetchval(
            RECORD_ATTEMPTS,
            ids,
            [_SENDER] * size,
            ["sent"] * size,
            [None] * size,
            [1] * size,
            [now] * size,
            ["webhook"] * size,
            ["sent"] * size,
            [None] * size,
            [None] * size,
            ["app:limit"] * size,  # the destination: the app's endpoint
            [None] * size,
            *([[]] * 8),  # no other destinations
            ["app:limit"] * size,  # a first try accepted: kept on the firing row
            ["sending"] * size,  # the state each was handed out in
        )
    return done
