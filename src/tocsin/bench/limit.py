"""`bench limit`: what the database itself allows — the store's claim statement, issued by a
bare asyncpg loop with no Tocsin code around it, over pre-inserted pending rows.

Only the SQL text is shared with the store (`tocsin.store.postgres.queries.CLAIM`), so the
statement measured is the one the engine runs; the loop around it is as thin as it gets:
arguments built before the clock starts, one transaction per batch, rows fetched.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from tocsin.bench.databases import migrated_store, throwaway
from tocsin.bench.progress import note
from tocsin.bench.stats import rate
from tocsin.store.postgres.queries import CLAIM

# Pending one-offs due in one bucket, spread over the shards, as a burst leaves them.
_FILL = """
INSERT INTO reminders (
    due_at, created_at, updated_at, bucket, freshness, version, shard, id, owner, status,
    channel, text, zone, anchor, at
)
SELECT $1, $2, $2, $3, 600, 1, (g % 1024)::smallint, lpad(to_hex(g), 16, '0'),
    'owner-' || g, 'pending', 'webhook', 'Take blood pressure medication', 'UTC',
    $4, $4
FROM generate_series(1, $5) AS g
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
        await _fill(url, due, spec.rows)
        batches = _batches(spec, due)
        note(f"limit: claiming {spec.rows:,} rows, {spec.connections} connections")
        connections = [await asyncpg.connect(url) for _ in range(spec.connections)]
        try:
            began = time.perf_counter()
            counts = await asyncio.gather(
                *(
                    _claim_loop(connection, batches[n :: spec.connections])
                    for n, connection in enumerate(connections)
                )
            )
            elapsed = time.perf_counter() - began
        finally:
            for connection in connections:
                await connection.close()
    claimed = sum(counts)
    return {
        "scenario": "limit",
        "params": spec.params(),
        "metrics": {
            "claimed": claimed,
            "seconds": round(elapsed, 3),
            "claims_per_s": round(rate(claimed, elapsed), 1),
        },
    }


async def _fill(url: str, due: datetime, rows: int) -> None:
    connection = await asyncpg.connect(url)
    try:
        anchor = due.isoformat()
        await connection.execute(
            _FILL, due, due - timedelta(hours=1), int(due.timestamp()) // 60, anchor, rows
        )
        await connection.execute("ANALYZE reminders")
    finally:
        await connection.close()


def _batches(spec: LimitSpec, due: datetime) -> list[tuple[Any, ...]]:
    """The CLAIM arguments of every batch, made before the clock starts."""
    ids = sorted(format(n, "x").rjust(16, "0") for n in range(1, spec.rows + 1))
    second = int(due.timestamp())
    now = datetime.now(UTC)
    batches = []
    for start in range(0, len(ids), spec.batch):
        chunk = ids[start : start + spec.batch]
        size = len(chunk)
        batches.append(
            (
                chunk,
                [f"{reminder}.{second}" for reminder in chunk],
                [due] * size,
                [None] * size,
                [None] * size,
                ["sending"] * size,
                now,
                "limit",
                now + timedelta(seconds=20),
            )
        )
    return batches


async def _claim_loop(connection: asyncpg.Connection, batches: list[tuple[Any, ...]]) -> int:
    claimed = 0
    for args in batches:
        async with connection.transaction():
            rows = await connection.fetch(CLAIM, *args)
        claimed += len(rows)
    return claimed
