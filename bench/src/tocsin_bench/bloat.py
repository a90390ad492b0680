"""What the churn tables (`firings`, `attempts`, `reminders`) hold on PostgreSQL, for the
retention benchmarks: sizes of the heap and of each index, live and dead rows, vacuum runs
and row counters (`pg_stat_user_tables`), and, in a full reading, how much of each table and
index is dead rows, free space and half-empty pages (`pgstattuple`, `pgstatindex`).

A `glance` reads only catalog sizes and the statistics counters (cheap: a benchmark takes one
every minute beside the load it measures); a `reading` also scans every table and index
(pgstattuple reads each page), so it is taken only before and after a run.
"""

from __future__ import annotations

import math
from typing import Any

import asyncpg

from tocsin_bench.progress import note

CHURN_TABLES = ("attempts", "firings", "reminders")

# Per churn table: the statistics counters and the heap's and TOAST's bytes.
_TABLES = """
SELECT relname, n_live_tup, n_dead_tup, autovacuum_count, vacuum_count, autoanalyze_count,
    n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del, pg_table_size(relid) AS table_bytes,
    pg_indexes_size(relid) AS index_bytes, last_autovacuum
FROM pg_stat_user_tables WHERE relname = ANY($1::text[])
ORDER BY relname
"""
# Each index of the churn tables and its bytes.
_INDEXES = """
SELECT c.relname AS table_name, i.relname AS index_name, pg_relation_size(i.oid) AS bytes
FROM pg_index AS x
    JOIN pg_class AS c ON c.oid = x.indrelid
    JOIN pg_class AS i ON i.oid = x.indexrelid
WHERE c.relname = ANY($1::text[])
ORDER BY 1, 2
"""
# How much of a table's heap is live rows, dead rows and free space (it reads every page).
_PGSTATTUPLE = """
SELECT tuple_count, dead_tuple_count, tuple_percent, dead_tuple_percent, free_percent
FROM pgstattuple($1::regclass)
"""
# How full a B-tree's leaf pages are, and how out of order (it reads every page).
_PGSTATINDEX = """
SELECT avg_leaf_density, leaf_fragmentation, deleted_pages
FROM pgstatindex($1::regclass)
"""
# What decides when autovacuum runs, server-wide (the tables' own settings are migration 0009's).
_AUTOVACUUM = """
SELECT name, setting FROM pg_settings
WHERE name IN ('autovacuum', 'autovacuum_naptime', 'autovacuum_max_workers',
    'autovacuum_vacuum_cost_limit', 'autovacuum_vacuum_cost_delay', 'vacuum_cost_limit')
ORDER BY name
"""


def note_if_unvacuumed(settings: dict[str, str]) -> None:
    """Say so when the server runs without autovacuum (as a CI server may)."""
    if settings.get("autovacuum") != "on":
        note("warning: autovacuum is off on this server: what it measures is a database")
        note("nobody vacuums (retention deletes, but the space stays dead until a vacuum)")


def _mb(value: int) -> float:
    return round(value / 2**20, 1)


async def autovacuum_settings(connection: asyncpg.Connection) -> dict[str, str]:
    """The server's autovacuum settings: a run on a server with `autovacuum = off` measures
    the bloat of a database nobody vacuums."""
    return {row["name"]: row["setting"] for row in await connection.fetch(_AUTOVACUUM)}


async def glance(connection: asyncpg.Connection) -> dict[str, str]:
    """Per churn table, one line: total size, heap, indexes, dead rows, autovacuum runs."""
    return {
        row["relname"]: (
            f"{_mb(row['table_bytes'] + row['index_bytes'])} MB "
            f"(table {_mb(row['table_bytes'])}, indexes {_mb(row['index_bytes'])}), "
            f"{row['n_live_tup']:,} live, {row['n_dead_tup']:,} dead, "
            f"{row['autovacuum_count']} autovacuums"
        )
        for row in await connection.fetch(_TABLES, list(CHURN_TABLES))
    }


async def reading(connection: asyncpg.Connection) -> dict[str, Any]:
    """Per churn table: sizes (heap with TOAST, each index), counters and, when the server has
    the pgstattuple extension, the dead and free share of the heap and the leaf density of
    each index (None without it)."""
    measured = await _pgstattuple(connection)
    indexes = await connection.fetch(_INDEXES, list(CHURN_TABLES))
    tables: dict[str, Any] = {}
    for row in await connection.fetch(_TABLES, list(CHURN_TABLES)):
        name = row["relname"]
        heap = await connection.fetchrow(_PGSTATTUPLE, name) if measured else None
        tables[name] = {
            "total_mb": _mb(row["table_bytes"] + row["index_bytes"]),
            "table_mb": _mb(row["table_bytes"]),  # heap, TOAST, free space and visibility maps
            "indexes": {
                index["index_name"]: await _index(connection, index, measured=measured)
                for index in indexes
                if index["table_name"] == name
            },
            "live": row["n_live_tup"],  # the statistics' estimates, which autovacuum goes by
            "dead": row["n_dead_tup"],
            "live_counted": None if heap is None else heap["tuple_count"],  # every page read
            "dead_counted": None if heap is None else heap["dead_tuple_count"],
            "autovacuums": row["autovacuum_count"],
            "vacuums": row["vacuum_count"],
            "autoanalyzes": row["autoanalyze_count"],
            "inserted": row["n_tup_ins"],
            "updated": row["n_tup_upd"],
            "hot_updated": row["n_tup_hot_upd"],
            "deleted": row["n_tup_del"],
            "last_autovacuum": None
            if row["last_autovacuum"] is None
            else row["last_autovacuum"].isoformat(timespec="seconds"),
            "live_pct": None if heap is None else round(heap["tuple_percent"], 1),
            "dead_pct": None if heap is None else round(heap["dead_tuple_percent"], 1),
            "free_pct": None if heap is None else round(heap["free_percent"], 1),
        }
    return tables


async def _index(
    connection: asyncpg.Connection, index: asyncpg.Record, *, measured: bool
) -> dict[str, Any]:
    """An index's size, with its leaf density and fragmentation when measured."""
    shape = await connection.fetchrow(_PGSTATINDEX, index["index_name"]) if measured else None
    return {
        "mb": _mb(index["bytes"]),
        "leaf_density_pct": None if shape is None else _share(shape["avg_leaf_density"]),
        "fragmentation_pct": None if shape is None else _share(shape["leaf_fragmentation"]),
        "deleted_pages": None if shape is None else shape["deleted_pages"],
    }


def _share(percent: float) -> float | None:
    """A pgstatindex share, rounded; None for an index with no leaf page yet (NaN), such as
    reminders_finished while only rings have finished reminders."""
    return None if math.isnan(percent) else round(percent, 1)


async def _pgstattuple(connection: asyncpg.Connection) -> bool:
    """Whether pgstattuple is there (made in this database when the server ships it)."""
    try:
        await connection.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
    except asyncpg.PostgresError:
        return False
    return True
