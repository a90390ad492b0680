"""A retention batch is a range scan from the old end of its index, never a full scan
(EXPLAIN on both backends, tables filled and analysed, no planner setting forced)."""

from __future__ import annotations

import json
import sqlite3

import asyncpg
import pytest

from tests.integration.store.factories import NOW
from tests.integration.store.test_plans import _filled, _nodes, _sqlite_plan
from tocsin.store import open_store
from tocsin.store.postgres import queries as pg
from tocsin.store.sqlite import queries as lite

# Attempts for every firing, and idempotency keys over a day, so that every table has rows.
_PG_EXTRA = """
INSERT INTO attempts (firing_id, number, at, channel, outcome)
SELECT reminder_id || '.' || due_second, 1, due_at, channel, 'sent' FROM firings;
INSERT INTO rings (due_at, reminder_id, version, repeat, next_due)
SELECT due_at, reminder_id, 1, false, NULL FROM firings ON CONFLICT DO NOTHING;
INSERT INTO idempotency_keys (scope, key, request_hash, status_code, body, created_at)
SELECT 'phone', 'key-' || n, 'h', 201, '\\x7b7d', now() - n * interval '5 seconds'
FROM generate_series(1, 20000) AS n;
"""

# The claims of a busy minute's rings in flight (1,000 claims of 100 rings, due a month after
# $1, the cutoff the plans are made for): retention beside a burst.
_PG_CLAIMS = """
INSERT INTO claimed_rings (hold_until, sender, reminder_ids, due_ats, oldest_due)
SELECT due + interval '20 seconds', 'w',
    ARRAY(SELECT 'ring' || n || '-' || r FROM generate_series(1, 100) AS r),
    array_fill(due, ARRAY[100]), due
FROM generate_series(1, 1000) AS n,
    LATERAL (SELECT $1::timestamptz + interval '30 days' + (n % 60) * interval '1 second')
        AS d (due)
"""

# PRUNE_FIRINGS reads firings in due order, their key's; it finds the reminders its rings
# finished by their key, and their rings on their way by a probe of firings_open; both it and
# PRUNE_REMINDERS (which probes the firing of a reminder's last ring by its key) ask the
# claims with a ring due before the cutoff by their oldest due instant.
_PG_PRUNES = {
    "PRUNE_FIRINGS": {
        "firings_open",
        "attempts_pkey",
        "reminders_pkey",
        "firings_pkey",
        "claimed_rings_oldest",
        "rings_pkey",
    },
    "PRUNE_REMINDERS": {
        "reminders_finished",
        "reminders_pkey",
        "firings_pkey",
        "firings_open",
        "claimed_rings_oldest",
    },
    "PRUNE_IDEMPOTENCY_KEYS": {"idempotency_keys_age"},
}


@pytest.mark.postgres
async def test_postgres_prunes_through_the_age_indexes(pg_migrated_url: str) -> None:
    await _filled(pg_migrated_url, firings=True)
    connection = await asyncpg.connect(pg_migrated_url)
    try:
        await connection.execute(_PG_EXTRA)
        await connection.execute(_PG_CLAIMS, NOW)
        await connection.execute("ANALYZE")
        plans = {}
        for name in _PG_PRUNES:
            sql = getattr(pg, name)
            custom = await connection.fetchval("EXPLAIN (FORMAT JSON) " + sql, NOW, 1000)
            await connection.execute(f"PREPARE {name} (timestamptz, integer) AS {sql}")
            await connection.execute("SET plan_cache_mode = force_generic_plan")
            generic = await connection.fetchval(
                f"EXPLAIN (FORMAT JSON) EXECUTE {name} ('{NOW.isoformat()}', 1000)"
            )
            await connection.execute("RESET plan_cache_mode")
            plans[name] = (custom, generic)
    finally:
        await connection.close()

    for name, indexes in _PG_PRUNES.items():
        for plan in plans[name]:
            nodes = list(_nodes(json.loads(plan)[0]["Plan"]))
            read = [(n["Node Type"], n.get("Relation Name"), n.get("Index Name")) for n in nodes]
            assert indexes <= {n.get("Index Name") for n in nodes}, (name, read)
            assert not any(n["Node Type"] in ("Seq Scan", "Sort") for n in nodes), (name, read)


async def test_sqlite_prunes_through_the_age_indexes(sqlite_url: str) -> None:
    store = await open_store(sqlite_url)
    try:
        await store.migrate()
    finally:
        await store.close()
    await _filled(sqlite_url, firings=True)
    connection = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
    try:
        connection.execute("ANALYZE")
        params = {"before": 0, "limit": 1000, "now": 0}
        plans = {
            name: _sqlite_plan(connection, getattr(lite, name), params)
            for name in ("OLD_FIRINGS", "PRUNE_RINGS", "PRUNE_REMINDERS")
        }
        plans["PRUNE_IDEMPOTENCY_KEYS"] = _sqlite_plan(
            connection, lite.PRUNE_IDEMPOTENCY_KEYS, params
        )
        batch = {"firings": '["a.1", "b.2"]', "reminders": '["a", "b"]', "starts": '{"a": [1]}'}
        by_ring = _sqlite_plan(connection, lite.FINISHED_BY_RING, params | batch)
        deletes = {
            name: _sqlite_plan(connection, getattr(lite, name), batch)
            for name in ("PRUNE_ATTEMPTS", "PRUNE_FIRINGS", "PRUNE_FINISHED_BY_RING")
        }
    finally:
        connection.close()

    # The reminders of the batch, by key, and their last ring's firing by a probe of the
    # firings' key: only the batch itself is scanned; no range of a reminder's firing ids.
    assert any("sqlite_autoindex_reminders_1 (id=?)" in line for line in by_ring), by_ring
    assert any("sqlite_autoindex_firings_1 (id=?)" in line for line in by_ring), by_ring
    assert not any("id>? AND id<?" in line for line in by_ring), by_ring
    tables = ("reminders", "firings", "rings", "due", "attempts", "r ", "f ", "g ", "h ")
    assert not any(line.startswith(f"SCAN {table}") for table in tables for line in by_ring)
    for name, plan in deletes.items():  # by key, the batch the only thing scanned
        assert [line for line in plan if line.startswith("SCAN")] == [
            "SCAN json_each VIRTUAL TABLE INDEX 1:"
        ], (name, plan)

    assert any("USING INDEX firings_due (due_at<?)" in line for line in plans["OLD_FIRINGS"])
    assert any("firings_open (reminder_id=?)" in line for line in plans["OLD_FIRINGS"])
    assert any("firings_open (reminder_id=?)" in line for line in plans["PRUNE_REMINDERS"])
    assert any("PRIMARY KEY (due_at<?)" in line for line in plans["PRUNE_RINGS"])
    assert any("reminders_finished (updated_at<?)" in line for line in plans["PRUNE_REMINDERS"])
    assert any(
        "idempotency_keys_age (created_at<?)" in line for line in plans["PRUNE_IDEMPOTENCY_KEYS"]
    )
    for name, plan in plans.items():  # no table scanned (a reader's own rows may be)
        assert not any(line.startswith(f"SCAN {t}") for t in tables for line in plan), (name, plan)
        assert not any("TEMP B-TREE" in line for line in plan), (name, plan)
