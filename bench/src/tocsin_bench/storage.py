"""`bench storage`: bytes per reminder on PostgreSQL (table + indexes + TOAST) at N realistic
reminders saved through the store — a mix of one-offs and series, owners as apps name them."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import asyncpg

from tocsin_bench.databases import migrated_store, throwaway
from tocsin_bench.population import Population
from tocsin_bench.progress import Progress
from tocsin_bench.stats import rate

SAVE_BATCH = 5_000

_SIZES = """
SELECT pg_total_relation_size('reminders'), pg_relation_size('reminders'),
       pg_indexes_size('reminders'),
       coalesce(pg_total_relation_size(NULLIF(reltoastrelid, 0)), 0)
FROM pg_class WHERE oid = 'reminders'::regclass
"""
_INDEXES = """
SELECT indexrelid::regclass::text, pg_relation_size(indexrelid)
FROM pg_index WHERE indrelid = 'reminders'::regclass ORDER BY 1
"""
_WIDTH = "SELECT avg(pg_column_size(r.*))::float8 FROM reminders AS r"


@dataclass(frozen=True, kw_only=True)
class StorageSpec:
    rows: int = 1_000_000
    pg_url: str | None = None

    def params(self) -> dict[str, Any]:
        return {"rows": self.rows}


async def run_storage(spec: StorageSpec) -> dict[str, Any]:
    async with throwaway("postgres", pg_url=spec.pg_url) as url:
        store = await migrated_store(url)
        population = Population(seed=5)
        made = population.mixed(spec.rows)
        in_store = 0.0
        try:
            with Progress("storage: saving", total=spec.rows, unit="reminders") as bar:
                left = spec.rows
                while left > 0:
                    batch = [next(made) for _ in range(min(SAVE_BATCH, left))]
                    tick = time.perf_counter()
                    await store.add_reminders(batch)
                    in_store += time.perf_counter() - tick
                    left -= len(batch)
                    bar.advance(len(batch))
        finally:
            await store.close()
        sizes = await _sizes(url)
    total = sizes["total_bytes"]
    return {
        "scenario": "storage",
        "params": spec.params(),
        "metrics": {
            "bytes_per_reminder": round(total / spec.rows, 1),
            "heap_bytes_per_reminder": round(sizes["heap_bytes"] / spec.rows, 1),
            "index_bytes_per_reminder": round(sizes["index_bytes"] / spec.rows, 1),
            "toast_bytes_per_reminder": round(sizes["toast_bytes"] / spec.rows, 1),
            "avg_row_bytes": round(sizes["avg_row_bytes"], 1),
            "indexes_bytes_per_reminder": {
                name: round(size / spec.rows, 1) for name, size in sizes["indexes"].items()
            },
            "total_mb": round(total / 2**20, 1),
            "save_per_s": round(rate(spec.rows, in_store), 1),
        },
    }


async def _sizes(url: str) -> dict[str, Any]:
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("VACUUM ANALYZE reminders")
        row = await connection.fetchrow(_SIZES)
        assert row is not None
        indexes = {name: size for name, size in await connection.fetch(_INDEXES)}
        width = await connection.fetchval(_WIDTH)
    finally:
        await connection.close()
    return {
        "total_bytes": row[0],
        "heap_bytes": row[1],
        "index_bytes": row[2],
        "toast_bytes": row[3],
        "indexes": indexes,
        "avg_row_bytes": width or 0.0,
    }
