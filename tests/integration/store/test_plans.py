"""Reading one bucket part is an index range scan, never a full scan, and the scheduler's
writes find their rows by primary key (EXPLAIN, both backends).

The tables get enough rows, spread over many buckets and shards, and fresh statistics (for
the scheduler's writes on PostgreSQL, stale ones too), so the planners choose as they would
in production: no planner setting is forced.
"""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import timedelta
from typing import Any

import asyncpg
import orjson
import pytest

from tests.integration.store.factories import NOW, reminder
from tocsin.domain import AttemptResult, Claim, FiringState, ReminderStatus
from tocsin.ids import LANES
from tocsin.store import Store, batches, open_store
from tocsin.store.codec import AFTER_ALL, BEFORE_ANY, bucket_of
from tocsin.store.postgres import queries as pg
from tocsin.store.sqlite import queries as lite

ROWS = 20_000
BUCKETS = 500
# The gate of a load's read of a reminder's row: its occurrence was saved without its ring.
UNSAID = re.compile(r"\(d(_\d+)?\.ring IS NULL\)")


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


async def test_sqlite_reads_a_bucket_part_through_due(sqlite_url: str) -> None:
    await _filled(sqlite_url)
    connection = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
    try:
        connection.execute("ANALYZE")
        plan = _sqlite_plan(
            connection,
            lite.load_due((0,)),
            {
                "last_bucket": bucket_of(NOW) + 1,
                "until": int(NOW.timestamp() * 1_000_000),
                "first_shard": 64,
                "last_shard": 127,
                "limit": 1000,
                "after_due": FIRST_PAGE_DUE,
                "after_id": "",
                "after_bucket": bucket_of(NOW),
            },
        )
        paged = _sqlite_plan(
            connection,
            lite.load_due((1,)),
            {
                "last_bucket": bucket_of(NOW) + 1,
                "until": int(NOW.timestamp() * 1_000_000),
                "first_shard": 64,
                "last_shard": 127,
                "limit": 1000,
                "after_due": 0,
                "after_id": "x",
                "after_bucket": 0,
            },
        )
        both = _sqlite_plan(
            connection,
            lite.load_due((0, 1)),
            {
                "last_bucket": bucket_of(NOW) + 1,
                "until": int(NOW.timestamp() * 1_000_000),
                "first_shard": 64,
                "last_shard": 127,
                "limit": 1000,
                "after_due": FIRST_PAGE_DUE,
                "after_id": "",
                "after_bucket": bucket_of(NOW),
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

    lane_scans = "SEARCH d USING PRIMARY KEY (lane=? AND rank=?"
    for one in (plan, paged):
        # One range scan of `due` a lane (SQLite's one process reads every lane), each row's
        # reminder by its key.
        assert sum(line.startswith(lane_scans) for line in one) == LANES, one
        assert any(line.startswith("SEARCH r USING INDEX sqlite_autoindex") for line in one)
        # The cursor bounds the range scan, whatever page: not a test of each row read.
        assert any("(bucket,due_at,reminder_id)>(?,?,?)" in line for line in one), one
        assert any(
            "(bucket,due_at)<(?,?)" in line or "(bucket,due_at)<=(?,?)" in line for line in one
        ), one
        assert not any(line.startswith(("SCAN d", "SCAN r")) for line in one), one
        assert not any("TEMP B-TREE" in line for line in one), one  # in index order, no sort
    # Every priority: one range scan of each lane and priority, merged.
    assert sum(line.startswith(lane_scans) for line in both) == 2 * LANES, both
    assert not any(line.startswith(("SCAN d", "SCAN r")) for line in both), both
    assert any("USING INDEX firings_queued" in line for line in queue)
    assert any("USING INDEX firings_sending" in line for line in queue)
    assert not any(line.startswith("SCAN firings") for line in queue)


async def test_sqlite_claims_and_records_by_primary_key(sqlite_url: str) -> None:
    """A claim or a result batch finds each row by its key: never through a partial index
    its state test also matches (firings_sending), whose whole
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
                content=r.content,
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
            for name in ("CLAIMABLE", "INSERT_ATTEMPTS", "FINISH_ATTEMPTS")
        }
    finally:
        connection.close()

    for name, plan in plans.items():
        table = "reminders" if "CLAIM" in name else "firings"
        assert any(f"INDEX sqlite_autoindex_{table}_1 (id=?)" in line for line in plan), plan
        # The batch itself is the only thing scanned (and CLAIMABLE's rows it decided); every
        # table row is found by its key (a claim's lease, the fence, by (parts, part); an
        # occurrence of `due` and a ring of `rings` by their primary keys).
        for line in plan:
            assert (
                "VIRTUAL TABLE" in line
                or line.startswith("CORRELATED SCALAR SUBQUERY")
                or line in ("SCAN decided", "MATERIALIZE decided")
                or line.startswith("LIST SUBQUERY")
                or re.search(
                    r"^SEARCH \w+ USING (COVERING )?INDEX sqlite_autoindex_\w+_1 \(id=\?\)$", line
                )
                or line == "SEARCH l USING INDEX sqlite_autoindex_leases_1 (parts=? AND part=?)"
                or re.search(r"^SEARCH \w+ USING PRIMARY KEY \((lane|due_at)=\? AND ", line)
            ), plan


def _sqlite_plan(connection: sqlite3.Connection, sql: str, params: dict[str, Any]) -> list[str]:
    rows = connection.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
    return [row[3] for row in rows]


FIRST_PAGE_DUE = int(BEFORE_ANY.timestamp() * 1_000_000)  # SQLite keeps microseconds
BUSY = 100_000  # reminders due in the busy minute of the PostgreSQL plan tests
BUSY_MINUTE = NOW + timedelta(minutes=BUCKETS + 1)

# BUSY reminders due within BUSY_MINUTE, their shards spread over all 1,024 and interleaved
# in the heap as saves from many owners leave them.
_ADD_BUSY_MINUTE = """
WITH added AS (
    INSERT INTO reminders (due_at, created_at, updated_at, bucket, freshness, version, shard,
        id, owner, status, channel, text, zone, anchor)
    SELECT $1::timestamptz + (n % 60) * interval '1 second', $1, $1, $2, 60, 1,
        ((n::bigint * 7919) % 1024)::smallint, 'busy' || lpad(n::text, 16, '0'), 'busy-' || n,
        'pending', 'null', 'ring', 'UTC', $1::text
    FROM generate_series(1, $3::integer) AS n
    RETURNING shard, bucket, due_at, id, version
)
INSERT INTO due (lane, rank, bucket, due_at, reminder_id, version, shard)
SELECT shard / 64, 0, bucket, due_at, id, version, shard FROM added
"""


@pytest.fixture
async def busy_pg(pg_migrated_url: str) -> str:
    """A migrated PostgreSQL database with the rows of `_fill`, a busy minute, and fresh
    statistics."""
    await _filled(pg_migrated_url)
    connection = await asyncpg.connect(pg_migrated_url)
    try:
        await connection.execute(_ADD_BUSY_MINUTE, BUSY_MINUTE, bucket_of(BUSY_MINUTE), BUSY)
        await connection.execute("ANALYZE reminders; ANALYZE due")
    finally:
        await connection.close()
    return pg_migrated_url


def _due_scans(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The plan's reads of `due`: of its months' tables and its default partition (where a
    test's rows are: no month is made until retention runs)."""
    return [
        n for n in nodes if re.fullmatch(r"due_(outside|\d{4}_\d{2})", n.get("Relation Name", ""))
    ]


@pytest.mark.postgres
async def test_postgres_part_reads_only_its_lane_with_nothing_forced(busy_pg: str) -> None:
    """Whatever plan the planner picks unguided, a part reads due_pkey within its own lane
    (the index's first column): never the other parts' entries of the minute; each row's
    reminder is read by its primary key."""
    busy = bucket_of(BUSY_MINUTE)
    connection = await asyncpg.connect(busy_pg)
    try:
        plans = [
            await connection.fetchval(
                "EXPLAIN (FORMAT JSON) " + pg.load_due(lanes, ranks),
                busy,
                busy,
                *part,
                limit,
                *after,
                lane,
                until,
            )
            for lanes, part, lane in ((1, (448, 511), 7), (2, (384, 511), 6))  # 7 of 16; 3 of 8
            for ranks in ((0,), (1,), (0, 1))  # a loader's priority, and every one
            for limit in (1000, 10_000)
            for after in ((None, None, None), (BUSY_MINUTE, "x", busy))
            for until in (AFTER_ALL, BUSY_MINUTE)  # reading ahead; the sweep
        ]
    finally:
        await connection.close()

    for plan in plans:
        nodes = list(_nodes(json.loads(plan)[0]["Plan"]))
        assert not any(n["Node Type"] == "Seq Scan" for n in nodes), plan
        scans = _due_scans(nodes)
        assert scans, plan
        assert all(n["Index Name"] == f"{n['Relation Name']}_pkey" for n in scans), plan
        assert all(re.match(r"\(\(lane = \d+\) AND \(rank = \d\)", n["Index Cond"]) for n in scans)
        rows = [n for n in nodes if n.get("Relation Name") == "reminders"]
        assert rows, plan
        assert all(n["Index Name"] == "reminders_pkey" for n in rows), plan


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
                    "EXPLAIN (FORMAT JSON) " + pg.load_due(lanes, ranks),
                    *part,
                    *after,
                    lane,
                    until,
                )
                for lanes, part, lane in ((1, one, 7), (2, two, 6))
                for ranks in ((0,), (0, 1))
                for after in ((BEFORE_ANY, "", busy), (BUSY_MINUTE, "x", busy))
                for until in (AFTER_ALL, BUSY_MINUTE + timedelta(seconds=20))
            ]
            await connection.execute(
                "PREPARE load_due (integer, integer, integer, integer, integer, timestamptz,"
                " text, integer, integer, timestamptz) AS " + pg.load_due(1, (0,))
            )
            await connection.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            generic = await connection.fetchval(
                "EXPLAIN (FORMAT JSON) EXECUTE load_due"
                f" ({busy}, {busy}, 448, 511, 10000, '{BUSY_MINUTE.isoformat()}', 'x', {busy}, 7,"
                f" '{AFTER_ALL.isoformat()}')"
            )
            plans.append(generic)
    finally:
        await connection.close()

    for plan in plans:
        nodes = list(_nodes(json.loads(plan)[0]["Plan"]))
        scans = _due_scans(nodes)
        assert scans, plan
        # The key, in its order, and each occurrence's row for what its ring says (migration
        # 0038), where its reminder's row was read before, by its key and heap page.
        assert all(n["Node Type"] == "Index Scan" for n in scans), plan
        # A reminder's row is read only for an occurrence saved without its ring.
        reads = [n for n in nodes if n.get("Relation Name") == "reminders"]
        gates = [n for n in nodes if UNSAID.fullmatch(n.get("One-Time Filter", ""))]
        assert len(reads) == len(gates) == len(scans), plan
        assert all(n["Index Name"] == f"{n['Relation Name']}_pkey" for n in scans), plan
        assert not any(n["Node Type"] in ("Sort", "Seq Scan") for n in nodes), plan
        # The cursor bounds the range scan: a filter instead read the part's bucket from its
        # start for every page, a heap fetch a row (the generic plan of `$6 IS NULL OR …`).
        # So does the instant it stops at (the sweep reads what is due by now alone).
        for scan in scans:
            assert "ROW(bucket, due_at, reminder_id) >" in scan["Index Cond"], plan
            assert "ROW(bucket, due_at) <=" in scan["Index Cond"], plan
            assert "ROW(bucket" not in scan.get("Filter", ""), plan


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
    """A firings table as a busy worker leaves it: most sent, some being sent (taken over
    from a sender whose hold ran out), some retries waiting, a few due (claimed from the
    reminders of `_fill`)."""
    due = await store.load_due(
        shards=range(1024), first_bucket=0, last_bucket=bucket_of(NOW) + BUCKETS, limit=10_000
    )
    lease = timedelta(seconds=30)

    def claims(state: FiringState, tenth: bool) -> list[Claim]:
        return [
            Claim(
                reminder_id=r.reminder_id,
                due_at=r.due_at,
                version=r.version,
                next_due_at=None,
                state=state,
                content=r.content,
            )
            for n, r in enumerate(due)
            if (n % 10 == 0) is tenth
        ]

    firings = await store.claim(
        claims(FiringState.SENDING, False), sender="w", now=NOW, lease=lease
    )
    results = [
        AttemptResult(
            firing_id=f.id,
            sender="w",
            attempt=None,
            state=FiringState.QUEUED if n % 7 == 0 else FiringState.SENT,
            next_attempt_at=NOW + timedelta(minutes=5),
            firing=None if f.stored else f,
        )
        for n, f in enumerate(firings)
        if n % 5
    ]
    await store.record_attempts(results)
    # The rest were not recorded before their hold ran out: written for any sender
    # (PostgreSQL), and taken by one.
    later = NOW + lease + timedelta(seconds=1)
    await store.recover_claims(now=later, limit=100)
    await store.take_deliveries(sender="w", shards=None, now=later, lease=lease, limit=10_000)
    await store.claim(claims(FiringState.QUEUED, True), sender="w", now=NOW, lease=lease)


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


@pytest.mark.postgres
async def test_postgres_takes_deliveries_by_index_from_a_plan_made_while_firings_was_empty(
    pg_migrated_url: str,
) -> None:
    """A generic plan made on a new database, kept by the prepared statement as the table
    grows, reads the partial indexes too: a sequential scan would read every firing written
    since, every round of every worker."""
    connection = await asyncpg.connect(pg_migrated_url)
    try:
        await connection.execute("ANALYZE firings")  # empty, as a new database's
        async with connection.transaction():  # as the store runs it
            await connection.execute(pg.TAKE_PLANNING)
            await connection.execute(
                "PREPARE take (timestamptz, integer, integer, integer, text, timestamptz) AS "
                + pg.TAKE_DELIVERIES
            )
            await connection.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            now, until = NOW.isoformat(), (NOW + timedelta(minutes=1)).isoformat()
            generic = await connection.fetchval(
                f"EXPLAIN (FORMAT JSON) EXECUTE take ('{now}', 0, 1023, 1000, 'w2', '{until}')"
            )
    finally:
        await connection.close()

    nodes = list(_nodes(json.loads(generic)[0]["Plan"]))
    assert {"firings_queued", "firings_sending"} <= {n.get("Index Name") for n in nodes}, generic
    assert not any(n["Node Type"] == "Seq Scan" for n in nodes), generic


# The scheduler's writes (CLAIM, RECORD_ATTEMPTS, INSERT_FIRINGS, RECOVER_CLAIMS) run with no
# planner setting. Each batch row must find its row by the primary key — the batch drives, a
# Nested Loop into the key — and nothing else of the table may be read: no sequential scan,
# and not the partial index (reminders_due, firings_sending) whose predicate the state test
# would match, which holds every pending reminder, every firing being sent. INSERT_FIRINGS
# reads no table at all (a plain insert); RECOVER_CLAIMS reads claimed_rings from the old end
# of its hold index only, and deletes what it read by its row address. Both with statistics
# analysed before a bulk import (they say nothing is pending or being sent, the partial
# indexes empty: the state right after an import, and of `sending` during any burst) and
# with fresh ones; for the plan made for a batch's arguments and for the generic plan.

FINISHED = 5_000  # finished reminders and sent firings, all the tables hold when analysed
_ADD_FINISHED = """
WITH rang AS (
    INSERT INTO reminders (due_at, created_at, updated_at, bucket, freshness, version, shard,
        id, owner, status, channel, text, zone, anchor)
    SELECT NULL, $1::timestamptz, $1, NULL, 60, 2, (n % 1024)::smallint,
        'done' || lpad(n::text, 16, '0'), 'done-' || n, 'fired', 'null', 'rang', 'UTC',
        $1::timestamptz::text
    FROM generate_series(1, $2::integer) AS n
    RETURNING id, owner, shard
)
INSERT INTO firings (due_second, reminder_id, owner, shard, due_at, deadline, created_at,
    sent_at, attempts, state, channel, text)
SELECT floor(extract(epoch FROM $1::timestamptz))::bigint, id, owner, shard, $1,
    $1 + interval '10 minutes', $1, $1, 1, 'sent', 'null', 'rang'
FROM rang
"""

# A firing being sent for each reminder of bucket $1 (a burst claimed and handed out).
_ADD_SENDING = """
INSERT INTO firings (due_second, reminder_id, owner, shard, due_at, deadline, created_at,
    attempts, state, channel, text, sender, lease_until)
SELECT floor(extract(epoch FROM due_at))::bigint, id, owner, shard, due_at,
    due_at + interval '10 minutes', due_at, 0, 'sending', 'null', 'ring', 'w',
    due_at + interval '30 seconds'
FROM reminders WHERE bucket = $1
"""

_SCHEDULER_WRITES = (
    ("claim", pg.CLAIM, 6),
    ("record", pg.RECORD_ATTEMPTS, 2),
    ("insert", pg.INSERT_FIRINGS, 3),
    ("recover", pg.RECOVER_CLAIMS, 2),
)


@pytest.mark.postgres
async def test_postgres_claims_and_records_by_primary_key_with_nothing_forced(
    pg_migrated_url: str,
) -> None:
    connection = await asyncpg.connect(pg_migrated_url)
    try:
        # Autovacuum could analyse the tables under the test; the database is reused after.
        await connection.execute(_AUTOVACUUM.format(setting="SET (autovacuum_enabled = off)"))
        try:
            batches = await _import_after_analysing(connection)
            stale = await _scheduler_plans(pg_migrated_url, batches)
            await connection.execute(_ANALYZE)
            fresh = await _scheduler_plans(pg_migrated_url, batches)
        finally:
            await connection.execute(_AUTOVACUUM.format(setting="RESET (autovacuum_enabled)"))
    finally:
        await connection.close()

    for statistics, plans in (("stale", stale), ("fresh", fresh)):
        for (name, kind), plan in plans.items():
            _assert_read_by_key(json.loads(plan)[0]["Plan"], name, (statistics, name, kind, plan))


_KEY = r"\(id = \(?{}\)?(::text)?\)"
_FIRST_FIELD = r"\({}\.value ->> 0\)"  # the first field of a batch's JSON row
# A firing's key, (due second, reminder), from a row (`{}` its alias and dot) of a due
# instant and a reminder id.
_FIRING_KEY = (
    r"\(\(due_second = \(floor\(EXTRACT\(epoch FROM {0}due_at\)\)\)::bigint\)"
    r" AND \(reminder_id = \(?{0}reminder_id\)?(::text)?\)\)"
)
# Per statement, each table it reads: the index, and the condition the index is read by.
_KEYS: dict[str, dict[str, tuple[str, str]]] = {
    "claim": {
        # No row of `reminders`: what a ring says came with its load, and no row of `due`:
        # the occurrence is decided by its key in `rings`, probed whole (decided already?),
        # and by due instant and reminder (rung already, by another version or a release
        # before?).
        "rings": (
            "rings_pkey",
            r"\(\(due_at = (claim|taken)\.due_at\)"
            r" AND \(reminder_id = \(?(claim|taken)\.reminder_id\)?(::text)?\)"
            r"( AND \(version = claim\.version\))?\)",
        ),
        # Its firing, by its key: the due second and the reminder.
        "firings": ("firings_pkey", _FIRING_KEY.format(r"(claim|taken)\.")),
    },
    # Each firing by the key its id names.
    "record": {
        "firings": (
            "firings_pkey",
            r"\(\(due_second = firing_second\({0}\)\)"
            r" AND \(reminder_id = \(?split_part\({0}, '\.'::text, 1\)\)?(::text)?\)\)".format(
                _FIRST_FIELD.format("r")
            ),
        )
    },
    # The claims it settles, deleted by their id.
    "insert": {
        "claimed_rings": (
            "claimed_rings_pkey",
            r"\(id = ANY \((\$3|'\{[0-9,]*\}'::bigint\[\])\)\)",
        )
    },
    "recover": {
        "claimed_rings": (
            "claimed_rings_hold",
            r"\(hold_until < (\$1|'[^']+'::timestamp with time zone)\)",
        ),
        # The ring's firing, by its key: the claim's due instant's second, and its reminder.
        "firings": ("firings_pkey", _FIRING_KEY.format(r"held\.")),
        "reminders": ("reminders_pkey", _KEY.format(r"held\.reminder_id")),
    },
}


def _assert_read_by_key(plan: dict[str, Any], name: str, where: tuple[str, ...]) -> None:
    """Every read of a table by statement `name` is the index lookup `_KEYS` names for it.
    claimed_rings may be read through a bitmap of that index (then sorted: the claims past
    their hold only), and a row read deleted by its address (a Tid Scan)."""
    keys = _KEYS[name]
    nodes = list(_nodes(plan))
    scans = [n for n in nodes if "Relation Name" in n and n["Node Type"] != "ModifyTable"]
    read = [n for n in scans if n["Relation Name"] != "leases"]  # leases: 16 rows
    summary = [(n["Relation Name"], n.get("Index Name"), n.get("Index Cond")) for n in read]
    assert {n["Relation Name"] for n in read} == set(keys), (where[:3], summary)
    for node in read:
        index, condition = keys[node["Relation Name"]]
        if node["Relation Name"] == "claimed_rings":
            if node["Node Type"] == "Tid Scan":
                continue
            if node["Node Type"] == "Bitmap Heap Scan":
                [node] = node["Plans"]
                assert node["Node Type"] == "Bitmap Index Scan", where
        else:
            assert node["Node Type"] in ("Index Scan", "Index Only Scan"), where
        assert node["Index Name"] == index, where
        assert re.fullmatch(condition, node["Index Cond"]), (node["Index Cond"], where[:3])
    if "claimed_rings" not in keys:
        assert not any(n["Node Type"] == "Sort" for n in nodes), where
    # Two of the statement's own row sets (CTEs, batches) are never matched by a nested loop:
    # estimated at one row each, they are a batch each, and such a join compares every row of
    # one with every row of the other (a claim's rings with its ring decisions once: 500,000
    # comparisons a batch of 1,000). A join with no condition (a batch beside a count) is no
    # match.
    for node in nodes:
        if node["Node Type"] == "Nested Loop" and "Join Filter" in node:
            inner = [_leaf(child) for child in node["Plans"]]
            assert not all(kind in _OWN_ROWS for kind in inner), (where[:3], inner)


# Node types that read a statement's own rows: its CTEs and its batch's JSON.
_OWN_ROWS = ("CTE Scan", "Function Scan")
# Node types that pass their one child's rows on.
_PASSING = ("Materialize", "Hash", "Result")


def _leaf(node: dict[str, Any]) -> str:
    """The node type under any chain of single-child nodes (a Materialize, a Hash)."""
    while node["Node Type"] in _PASSING and len(node.get("Plans", [])) == 1:
        node = node["Plans"][0]
    return str(node["Node Type"])


async def _import_after_analysing(connection: asyncpg.Connection) -> dict[str, tuple[Any, ...]]:
    """Finished rows analysed (the statistics then say nothing is pending or being sent),
    then a busy minute and a firing being sent for each of its reminders; the batches."""
    await connection.execute(_ADD_FINISHED, NOW, FINISHED)
    await connection.execute("ANALYZE reminders; ANALYZE firings")
    busy = bucket_of(BUSY_MINUTE)
    await connection.execute(_ADD_BUSY_MINUTE, BUSY_MINUTE, busy, BUSY)
    await connection.execute(_ADD_SENDING, busy)
    await connection.execute(_ADD_CLAIMED, BUSY_MINUTE, busy)
    await connection.execute(
        "INSERT INTO leases (parts, part, holder, expires_at, epoch)"
        " SELECT 16, part, 'w', $1, 1 FROM generate_series(0, 15) AS part",
        BUSY_MINUTE,
    )
    assert await connection.fetch(_STATE_STATISTICS) == [("{fired}",), ("{sent}",)]
    return await _scheduler_batches(connection, busy)


_AUTOVACUUM = (
    "ALTER TABLE reminders {setting}; ALTER TABLE firings {setting};"
    " ALTER TABLE claimed_rings {setting}"
)
_ANALYZE = "ANALYZE reminders; ANALYZE firings; ANALYZE claimed_rings"

# The claims of the busy minute's rings as its senders left them, 100 rings a claim, their
# holds over a lease (30 s): a second's worth of them run out at each recovery.
_ADD_CLAIMED = """
INSERT INTO claimed_rings (hold_until, sender, reminder_ids, due_ats)
SELECT $1::timestamptz + (chunk % 30) * interval '1 second', 'w', array_agg(id),
    array_agg(due_at)
FROM (SELECT id, due_at, row_number() OVER (ORDER BY id) / 100 AS chunk
      FROM reminders WHERE bucket = $2) AS rings
GROUP BY chunk
"""

# What the statistics say the states are (the most common values of each state column).
_STATE_STATISTICS = """
SELECT most_common_vals::text FROM pg_stats
WHERE (tablename, attname) IN (('reminders', 'status'), ('firings', 'state'))
ORDER BY tablename DESC
"""


async def _scheduler_batches(
    connection: asyncpg.Connection, busy: int
) -> dict[str, tuple[Any, ...]]:
    """A claim of 1,000 reminders of the busy minute, as a part loads them (its lane, in due
    order) and the store sends them (sorted by id); results for 1,000 of their firings; the
    firings of the claim's rings written with their results; a recovery of 100 claims."""
    rows = await connection.fetch(
        "SELECT id, due_at, version, shard FROM reminders WHERE bucket = $1 AND shard / 64 = 7"
        " ORDER BY due_at, id LIMIT 1000",
        busy,
    )
    rows = sorted(rows, key=lambda row: row["id"])
    size = len(rows)
    # What each reminder's load read for its claim.
    contents = dict(await connection.fetch(pg.RING_CONTENTS, [row["id"] for row in rows]))
    claim = (
        batches.POSTGRES_CLAIMS.json(
            {
                "reminder_id": [row["id"] for row in rows],
                "due_at": [row["due_at"] for row in rows],
                "bucket": [busy] * size,
                "version": [row["version"] for row in rows],
                "next_due_at": [None] * size,
                "next_bucket": [None] * size,
                "state": ["sending"] * size,
                "part": [row["shard"] // 64 for row in rows],
                "epoch": [1] * size,
                "error": [None] * size,
                "content": [orjson.Fragment(contents[row["id"]]) for row in rows],
                "prev_due": [None] * size,
            }
        ),
        BUSY_MINUTE,
        "w",
        BUSY_MINUTE + timedelta(seconds=30),
        16,
        "queued for the in-app feed",
    )
    firings = await connection.fetch(
        "SELECT reminder_id || '.' || due_second AS id FROM firings WHERE state = 'sending'"
        " ORDER BY hashtext(reminder_id) LIMIT 1000"
    )
    size = len(firings)
    no_earlier = batches.POSTGRES_EARLIER.json(
        {name: [] for name in batches.POSTGRES_EARLIER.names}
    )
    record = (
        batches.POSTGRES_RESULTS.json(
            {
                "firing_id": [row["id"] for row in firings],
                "sender": ["w"] * size,
                **_sent_first_tries(size),
                "held_state": ["sending"] * size,
            }
        ),
        no_earlier,
    )
    # The claim's rings written with their first try's result (sent, on the row).
    size = len(rows)
    written = [f"{row['id']}.{int(row['due_at'].timestamp())}" for row in rows]
    insert = (
        batches.POSTGRES_UNWRITTEN.json(
            {
                "firing_id": written,
                "reminder_id": [row["id"] for row in rows],
                "owner": [f"busy-{n}" for n in range(size)],
                "shard": [row["shard"] for row in rows],
                "due_at": [row["due_at"] for row in rows],
                "deadline": [row["due_at"] + timedelta(minutes=1) for row in rows],
                "route": ["webhook"] * size,
                "text": ["ring"] * size,
                "metadata": [None] * size,
                "source": [None] * size,
                "created_at": [BUSY_MINUTE] * size,
                **_sent_first_tries(size),
                "priority": [None] * size,  # urgent
            }
        ),
        no_earlier,
        [1, 2],  # the claims it settles
    )
    recover = (BUSY_MINUTE + timedelta(seconds=1.5), 100)
    return {"claim": claim, "record": record, "insert": insert, "recover": recover}


def _sent_first_tries(size: int) -> dict[str, list[Any]]:
    """The columns of `size` first tries accepted, as RECORD_ATTEMPTS and INSERT_FIRINGS both
    take them, by name: each firing's result and its try, kept on the firing row."""
    return {
        "state": ["sent"] * size,
        "next_attempt_at": [None] * size,
        "number": [1] * size,
        "at": [BUSY_MINUTE] * size,
        "channel": ["webhook"] * size,
        "outcome": ["sent"] * size,
        "last_error": [None] * size,
        "provider_id": [None] * size,
        "destination": ["app:a"] * size,
        "error": [None] * size,
        "sent_to": ["app:a"] * size,
    }


async def _scheduler_plans(
    url: str, batches: dict[str, tuple[Any, ...]]
) -> dict[tuple[str, str], str]:
    """The plans of CLAIM and RECORD_ATTEMPTS for `batches`, made for the batch's arguments
    and generic (a prepared statement's, which does not depend on the values given)."""
    connection = await asyncpg.connect(url)
    try:
        plans = {}
        for name, sql, count in _SCHEDULER_WRITES:
            assert len(batches[name]) == count
            plans[name, "custom"] = await connection.fetchval(
                "EXPLAIN (FORMAT JSON) " + sql, *batches[name]
            )
            await connection.execute(f"PREPARE {name} AS {sql}")
        await connection.execute("SET plan_cache_mode = force_generic_plan")
        for name, _, count in _SCHEDULER_WRITES:
            nulls = ", ".join(["NULL"] * count)
            plans[name, "generic"] = await connection.fetchval(
                f"EXPLAIN (FORMAT JSON) EXECUTE {name} ({nulls})"
            )
        generic = await connection.fetchval(
            "SELECT min(generic_plans) FROM pg_prepared_statements"
            " WHERE name IN ('claim', 'record', 'insert', 'recover')"
        )
        assert generic == 1
    finally:
        await connection.close()
    return plans


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
    assert "SEARCH d USING PRIMARY KEY (lane=? AND rank=? AND bucket>?)" in oldest, oldest
    assert "TEMP B-TREE" not in oldest, oldest


@pytest.mark.postgres
async def test_postgres_reads_the_queues_numbers_from_partial_indexes(pg_migrated_url: str) -> None:
    await _filled(pg_migrated_url, firings=True)
    connection = await asyncpg.connect(pg_migrated_url)
    try:
        await connection.execute("ANALYZE reminders")
        await connection.execute("ANALYZE due")
        await connection.execute("ANALYZE firings")
        depth = await connection.fetchval("EXPLAIN (FORMAT JSON) " + pg.QUEUE_DEPTH)
        oldest = await connection.fetchval("EXPLAIN (FORMAT JSON) " + pg.OLDEST_PENDING)
    finally:
        await connection.close()

    depth_nodes = list(_nodes(json.loads(depth)[0]["Plan"]))
    oldest_nodes = list(_nodes(json.loads(oldest)[0]["Plan"]))
    assert {n.get("Index Name") for n in depth_nodes} >= {"firings_queued", "firings_sending"}
    assert any(n.get("Index Name") == "due_outside_pkey" for n in oldest_nodes), oldest
    for node in (*depth_nodes, *oldest_nodes):
        if node.get("Relation Name") == "leases":
            continue  # the lowest watermark: a row a part
        assert node["Node Type"] not in ("Seq Scan", "Sort"), node


_FIRINGS_OF = """
INSERT INTO firings (due_second, reminder_id, owner, shard, due_at, deadline, channel, text,
    state, attempts, next_attempt_at, created_at)
SELECT $3::text::bigint, 'r' || n, 'owner-' || n, n % 1024, $1::timestamptz,
    $1::timestamptz + interval '10 minutes', $4::text, 'Call mom', $5::text, 0,
    CASE WHEN $5::text = 'queued' THEN $1::timestamptz + interval '10 minutes' END,
    $1::timestamptz
FROM generate_series(1, $2::integer) AS n
"""


async def test_postgres_reads_and_marks_the_feeds_rings_by_primary_key(
    pg_migrated_url: str,
) -> None:
    """With statistics that count no fresh in-app firing (a day of webhook rings analysed,
    then a burst of in-app ones), the feed's read and `sent` mark of a batch of ids look each
    id up in the primary key; the partial index `firings_feed` would read every fresh in-app
    firing for each batch."""
    connection = await asyncpg.connect(pg_migrated_url)
    day_before = NOW - timedelta(days=1)
    try:
        await connection.execute(_AUTOVACUUM.format(setting="SET (autovacuum_enabled = off)"))
        try:
            await connection.execute(_FIRINGS_OF, day_before, ROWS, "1", "webhook", "sent")
            await connection.execute("ANALYZE firings")
            await connection.execute(_FIRINGS_OF, NOW, ROWS, "2", "inapp", "queued")
            ids = [f"r{n}.2" for n in range(1, ROWS, ROWS // 250)]
            plans = {
                name: await connection.fetchval(f"EXPLAIN (FORMAT JSON) {sql}", ids, NOW)
                for name, sql in (("read", pg.FEED_RINGS), ("mark", pg.MARK_FEED_SENT))
            }
        finally:
            await connection.execute(_AUTOVACUUM.format(setting="RESET (autovacuum_enabled)"))
    finally:
        await connection.close()

    for name, plan in plans.items():
        nodes = list(_nodes(json.loads(plan)[0]["Plan"]))
        reads = [n for n in nodes if n["Node Type"] in _READS]
        assert reads, (name, plan)
        for node in reads:
            assert node.get("Index Name") == "firings_pkey", (name, plan)


_READS = ("Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Index Scan")


async def test_sqlite_reads_and_marks_the_feeds_rings_by_primary_key(sqlite_url: str) -> None:
    """The same on SQLite, whose planner is given no CASE: its statements name the channel
    and deadline plainly, and it looks the ids up in the primary key before and after
    ANALYZE, half the firings being fresh in-app ones."""
    store = await open_store(sqlite_url)
    try:
        await store.migrate()
    finally:
        await store.close()
    connection = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
    try:
        connection.executemany(
            "INSERT INTO firings (id, reminder_id, owner, shard, due_at, deadline, channel, "
            "text, state, attempts, next_attempt_at, created_at) "
            "VALUES (?, ?, ?, ?, 1000, 2000, ?, 'Call mom', ?, 0, 2000, 1000)",
            [
                (f"r{n}.1", f"r{n}", f"owner-{n}", n % 1024, *_INAPP_OR_NOT[n % 2])
                for n in range(ROWS)
            ],
        )
        connection.commit()
        params = {"ids": json.dumps([f"r{n}.1" for n in range(1, ROWS, 80)]), "now": 1500}
        for analysed in (False, True):
            if analysed:
                connection.execute("ANALYZE")
            for sql in (lite.FEED_RINGS, lite.MARK_FEED_SENT):
                plan = _sqlite_plan(connection, sql, params | {"at": 1500})
                firings = [step for step in plan if " firings " in f" {step} "]
                assert firings, plan
                assert all(
                    re.search(r"PRIMARY KEY|sqlite_autoindex_firings_1", s) for s in firings
                ), plan
    finally:
        connection.close()


_INAPP_OR_NOT = (("webhook", "sent"), ("inapp", "queued"))
