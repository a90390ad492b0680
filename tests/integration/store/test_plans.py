"""Reading one bucket part is an index range scan, never a full scan (EXPLAIN, both backends).

The tables get enough rows, spread over many buckets and shards, and fresh statistics, so the
planners choose as they would in production: no planner setting is forced.
"""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import timedelta
from typing import Any

import asyncpg
import pytest

from tests.integration.store.factories import NOW, reminder
from tocsin.domain import AttemptResult, Claim, FiringState, ReminderStatus
from tocsin.store import Store, open_store
from tocsin.store.codec import bucket_of
from tocsin.store.postgres import queries as pg
from tocsin.store.sqlite import queries as lite

ROWS = 20_000
BUCKETS = 500


async def _fill(store: Store) -> None:
    """ROWS reminders over BUCKETS minutes and all shards; every fifth one already fired."""
    batch = []
    for n in range(ROWS):
        status = ReminderStatus.FIRED if n % 5 == 0 else ReminderStatus.PENDING
        due = NOW + timedelta(minutes=n % BUCKETS, seconds=n % 60)
        # Ids made in one millisecond for one shard differ by 22 random bits: spread them.
        created = NOW + timedelta(milliseconds=n)
        batch.append(
            reminder(
                f"owner-{n}", due_at=due, status=status, shard=(n * 7) % 1024, created_at=created
            )
        )
        if len(batch) == 1000:
            await store.add_reminders(batch)
            batch = []


async def test_sqlite_reads_a_bucket_part_through_reminders_due(sqlite_url: str) -> None:
    await _filled(sqlite_url)
    connection = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
    try:
        connection.execute("ANALYZE")
        plan = _sqlite_plan(
            connection,
            lite.LOAD_DUE,
            {
                "first_bucket": bucket_of(NOW),
                "last_bucket": bucket_of(NOW) + 1,
                "first_shard": 64,
                "last_shard": 127,
                "limit": 1000,
                "after_due": None,
                "after_id": None,
                "after_bucket": None,
            },
        )
        paged = _sqlite_plan(
            connection,
            lite.LOAD_DUE,
            {
                "first_bucket": bucket_of(NOW),
                "last_bucket": bucket_of(NOW) + 1,
                "first_shard": 64,
                "last_shard": 127,
                "limit": 1000,
                "after_due": 0,
                "after_id": "x",
                "after_bucket": 0,
            },
        )
        queue = _sqlite_plan(
            connection,
            lite.TAKE_DELIVERIES,
            {
                "now": 0,
                "first_shard": 0,
                "last_shard": 1023,
                "sender": "w",
                "lease_until": 0,
                "limit": 10,
            },
        )
    finally:
        connection.close()

    for one in (plan, paged):
        assert any(line.startswith("SEARCH reminders USING INDEX reminders_due") for line in one)
        assert not any(line.startswith("SCAN reminders") for line in one)
        assert not any("TEMP B-TREE" in line for line in one), one  # in index order, no sort
    assert any("USING INDEX firings_queued" in line for line in queue)
    assert any("USING INDEX firings_sending" in line for line in queue)
    assert not any(line.startswith("SCAN firings") for line in queue)


async def test_sqlite_claims_and_records_by_primary_key(sqlite_url: str) -> None:
    """A claim or a result batch finds each row by its key: never through the partial
    indexes its state test also matches (reminders_due, firings_sending), whose whole
    content — every pending row, every firing being sent — a burst would read per batch."""
    store = await open_store(sqlite_url)
    try:
        await store.migrate()
        await _fill(store)
        due = await store.load_due(
            shards=range(1024), first_bucket=0, last_bucket=bucket_of(NOW) + BUCKETS, limit=2000
        )
        claims = [
            Claim(
                reminder_id=r.reminder_id,
                due_at=r.due_at,
                version=r.version,
                next_due_at=None,
                state=FiringState.SENDING,
            )
            for r in due
        ]
        await store.claim(claims, sender="w", now=NOW, lease=timedelta(seconds=30))
    finally:
        await store.close()
    connection = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
    try:
        connection.execute("ANALYZE")
        params = {
            "claims": "[]",
            "results": "[]",
            "attempts": "[]",
            "now": 0,
            "parts": 16,
            "sender": "w",
            "waiting": "",
        }
        plans = {
            name: _sqlite_plan(connection, getattr(lite, name), params)
            for name in ("CLAIMABLE", "CLAIM_REMINDERS", "INSERT_ATTEMPTS", "FINISH_ATTEMPTS")
        }
    finally:
        connection.close()

    for name, plan in plans.items():
        table = "reminders" if name.startswith("CLAIM") else "firings"
        assert any(f"INDEX sqlite_autoindex_{table}_1 (id=?)" in line for line in plan), plan
        # The batch itself is the only thing scanned; every table row is found by its key
        # (a claim's lease, the fence, by (parts, part)).
        for line in plan:
            assert (
                "VIRTUAL TABLE" in line
                or line.startswith("CORRELATED SCALAR SUBQUERY")
                or re.search(
                    r"^SEARCH \w+ USING (COVERING )?INDEX sqlite_autoindex_\w+_1 \(id=\?\)$", line
                )
                or line == "SEARCH l USING INDEX sqlite_autoindex_leases_1 (parts=? AND part=?)"
            ), plan


def _sqlite_plan(connection: sqlite3.Connection, sql: str, params: dict[str, Any]) -> list[str]:
    rows = connection.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
    return [row[3] for row in rows]


BUSY = 100_000  # reminders due in the busy minute of the PostgreSQL plan tests
BUSY_MINUTE = NOW + timedelta(minutes=BUCKETS + 1)

# BUSY reminders due within BUSY_MINUTE, their shards spread over all 1,024 and interleaved
# in the heap as saves from many owners leave them.
_ADD_BUSY_MINUTE = """
INSERT INTO reminders (due_at, created_at, updated_at, bucket, freshness, version, shard, id,
    owner, status, channel, text, zone, anchor)
SELECT $1::timestamptz + (n % 60) * interval '1 second', $1, $1, $2, 60, 1,
    ((n::bigint * 7919) % 1024)::smallint, 'busy' || lpad(n::text, 16, '0'), 'busy-' || n,
    'pending', 'null', 'ring', 'UTC', $1::text
FROM generate_series(1, $3::integer) AS n
"""


@pytest.fixture
async def busy_pg(pg_migrated_url: str) -> str:
    """A migrated PostgreSQL database with the rows of `_fill`, a busy minute, and fresh
    statistics."""
    await _filled(pg_migrated_url)
    connection = await asyncpg.connect(pg_migrated_url)
    try:
        await connection.execute(_ADD_BUSY_MINUTE, BUSY_MINUTE, bucket_of(BUSY_MINUTE), BUSY)
        await connection.execute("ANALYZE reminders")
    finally:
        await connection.close()
    return pg_migrated_url


@pytest.mark.postgres
async def test_postgres_part_reads_only_its_lane_with_nothing_forced(busy_pg: str) -> None:
    """Whatever plan the planner picks unguided, a part reads reminders_due within its own
    lane (the index's first column): never the other parts' entries of the minute."""
    busy = bucket_of(BUSY_MINUTE)
    connection = await asyncpg.connect(busy_pg)
    try:
        plans = [
            await connection.fetchval(
                "EXPLAIN (FORMAT JSON) " + pg.load_due(lanes),
                busy,
                busy,
                *part,
                limit,
                *after,
                lane,
            )
            for lanes, part, lane in ((1, (448, 511), 7), (2, (384, 511), 6))  # 7 of 16; 3 of 8
            for limit in (1000, 10_000)
            for after in ((None, None, None), (BUSY_MINUTE, "x", busy))
        ]
    finally:
        await connection.close()

    for plan in plans:
        nodes = list(_nodes(json.loads(plan)[0]["Plan"]))
        assert not any(n["Node Type"] == "Seq Scan" for n in nodes), plan
        scans = [n for n in nodes if "Index Name" in n]
        assert scans, plan
        assert all(n["Index Name"] == "reminders_due" for n in scans), plan
        assert all(re.match(r"\(\(\(shard / 64\) = \d+\)", n["Index Cond"]) for n in scans)


@pytest.mark.postgres
async def test_postgres_pages_a_part_in_index_order(busy_pg: str) -> None:
    """Under `LOAD_PLANNING` (sorting off, nothing else) a page of a part is a range scan of
    its lane in reading order that stops at the page's size: no sort, no sequential scan —
    for one lane and for a part of several (merged), for the first page and the next, and
    for the custom plan and the generic one."""
    busy = bucket_of(BUSY_MINUTE)
    one, two = (busy, busy, 448, 511, 10_000), (busy, busy, 384, 511, 10_000)
    connection = await asyncpg.connect(busy_pg)
    try:
        async with connection.transaction():  # as the store runs it
            await connection.execute(pg.LOAD_PLANNING)
            plans = [
                await connection.fetchval(
                    "EXPLAIN (FORMAT JSON) " + pg.load_due(lanes), *part, *after, lane
                )
                for lanes, part, lane in ((1, one, 7), (2, two, 6))
                for after in ((None, None, None), (BUSY_MINUTE, "x", busy))
            ]
            await connection.execute(
                "PREPARE load_due (integer, integer, integer, integer, integer, timestamptz,"
                " text, integer, integer) AS " + pg.load_due(1)
            )
            await connection.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            plans.append(
                await connection.fetchval(
                    "EXPLAIN (FORMAT JSON) EXECUTE load_due"
                    f" ({busy}, {busy}, 448, 511, 10000, NULL, NULL, NULL, 7)"
                )
            )
    finally:
        await connection.close()

    for plan in plans:
        nodes = list(_nodes(json.loads(plan)[0]["Plan"]))
        scans = [n for n in nodes if n.get("Relation Name") == "reminders"]
        assert scans, plan
        assert all(n["Node Type"] == "Index Scan" for n in scans), plan
        assert all(n["Index Name"] == "reminders_due" for n in scans), plan
        assert not any(n["Node Type"] in ("Sort", "Seq Scan") for n in nodes), plan


@pytest.mark.postgres
async def test_postgres_part_loads_its_rows_in_due_order(busy_pg: str) -> None:
    """Pages of a part of one lane and of a part of two hold exactly its pending rows of the
    minute, in (due_at, id) order, each row once."""
    store = await open_store(busy_pg)
    try:
        for shards in (range(448, 512), range(384, 512)):
            rows, after = [], None
            while page := await store.load_due(
                shards=shards,
                first_bucket=bucket_of(BUSY_MINUTE),
                last_bucket=bucket_of(BUSY_MINUTE),
                limit=4000,
                after=after,
            ):
                rows += page
                after = (page[-1].due_at, page[-1].reminder_id)
            keys = [(row.due_at, row.reminder_id) for row in rows]
            assert keys == sorted(set(keys))
            expected = sum(1 for n in range(1, BUSY + 1) if (n * 7919) % 1024 in shards)
            assert len(rows) == expected
    finally:
        await store.close()


async def _filled(url: str, *, firings: bool = False) -> None:
    """Migrate the database at `url` and fill it: reminders, and firings when asked."""
    store = await open_store(url)
    try:
        await store.migrate()
        await _fill(store)
        if firings:
            await _fill_firings(store)
    finally:
        await store.close()


async def _fill_firings(store: Store) -> None:
    """A firings table as a busy worker leaves it: most sent, some being sent, some retries
    waiting, a few due (claimed from the reminders of `_fill`)."""
    due = await store.load_due(
        shards=range(1024), first_bucket=0, last_bucket=bucket_of(NOW) + BUCKETS, limit=10_000
    )
    claims = [
        Claim(
            reminder_id=r.reminder_id,
            due_at=r.due_at,
            version=r.version,
            next_due_at=None,
            state=state,
        )
        for n, r in enumerate(due)
        for state in [FiringState.QUEUED if n % 10 == 0 else FiringState.SENDING]
    ]
    firings = await store.claim(claims, sender="w", now=NOW, lease=timedelta(seconds=30))
    results = [
        AttemptResult(
            firing_id=f.id,
            sender="w",
            attempt=None,
            state=FiringState.QUEUED if n % 7 == 0 else FiringState.SENT,
            next_attempt_at=NOW + timedelta(minutes=5),
        )
        for n, f in enumerate(firings)
        if f.state is FiringState.SENDING and n % 5
    ]
    await store.record_attempts(results)


@pytest.mark.postgres
async def test_postgres_takes_deliveries_through_the_firings_indexes(
    pg_migrated_url: str,
) -> None:
    """The delivery queue is read by range scans of its two partial indexes, however many
    firings are final or not due yet — for the custom plan and the generic one."""
    await _filled(pg_migrated_url, firings=True)
    connection = await asyncpg.connect(pg_migrated_url)
    try:
        await connection.execute("ANALYZE firings")
        args = (NOW + timedelta(seconds=10), 0, 1023, 1000, "w2", NOW + timedelta(minutes=1))
        custom = await connection.fetchval("EXPLAIN (FORMAT JSON) " + pg.TAKE_DELIVERIES, *args)
        await connection.execute(
            "PREPARE take (timestamptz, integer, integer, integer, text, timestamptz) AS "
            + pg.TAKE_DELIVERIES
        )
        await connection.execute("SET plan_cache_mode = force_generic_plan")
        now, until = args[0].isoformat(), args[5].isoformat()
        generic = await connection.fetchval(
            f"EXPLAIN (FORMAT JSON) EXECUTE take ('{now}', 0, 1023, 1000, 'w2', '{until}')"
        )
    finally:
        await connection.close()

    for plan in (custom, generic):
        nodes = list(_nodes(json.loads(plan)[0]["Plan"]))
        indexes = {n.get("Index Name") for n in nodes}
        assert {"firings_queued", "firings_sending"} <= indexes, plan
        assert not any(n["Node Type"] == "Seq Scan" for n in nodes), plan


def _nodes(node: dict[str, Any]) -> Any:
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


async def test_sqlite_reads_the_queues_numbers_from_partial_indexes(sqlite_url: str) -> None:
    await _filled(sqlite_url, firings=True)
    connection = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
    try:
        connection.execute("ANALYZE")
        depth = " ".join(_sqlite_plan(connection, lite.QUEUE_DEPTH, {}))
        oldest = " ".join(_sqlite_plan(connection, lite.OLDEST_PENDING, {}))
    finally:
        connection.close()

    assert "INDEX firings_queued" in depth, depth
    assert "INDEX firings_sending" in depth, depth
    assert "INDEX reminders_due" in oldest, oldest
    assert "TEMP B-TREE" not in oldest, oldest


@pytest.mark.postgres
async def test_postgres_reads_the_queues_numbers_from_partial_indexes(pg_migrated_url: str) -> None:
    await _filled(pg_migrated_url, firings=True)
    connection = await asyncpg.connect(pg_migrated_url)
    try:
        await connection.execute("ANALYZE reminders")
        await connection.execute("ANALYZE firings")
        depth = await connection.fetchval("EXPLAIN (FORMAT JSON) " + pg.QUEUE_DEPTH)
        oldest = await connection.fetchval("EXPLAIN (FORMAT JSON) " + pg.OLDEST_PENDING)
    finally:
        await connection.close()

    depth_nodes = list(_nodes(json.loads(depth)[0]["Plan"]))
    oldest_nodes = list(_nodes(json.loads(oldest)[0]["Plan"]))
    assert {n.get("Index Name") for n in depth_nodes} >= {"firings_queued", "firings_sending"}
    assert any(n.get("Index Name") == "reminders_due" for n in oldest_nodes), oldest
    for node in (*depth_nodes, *oldest_nodes):
        assert node["Node Type"] not in ("Seq Scan", "Sort"), node
