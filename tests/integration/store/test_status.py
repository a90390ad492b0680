"""The status board's reads: workers and their breakers, minutes ahead, rings sampled per
minute, queue depth — on both backends, and through indexes (EXPLAIN with real rows)."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from typing import Any

import asyncpg
import pytest

from tests.integration.store.factories import LEASE, NOW, claim, held, reminder, result
from tocsin.domain import Firing, FiringState, Lateness, Outcome, Reminder, RingMinute
from tocsin.store import Store, open_store
from tocsin.store.codec import bucket_of
from tocsin.store.postgres import queries as pg
from tocsin.store.sqlite import queries as lite

TTL = timedelta(seconds=10)
FIRST = bucket_of(NOW)


async def _ring(
    store: Store, reminders: list[Reminder], *, sent_after: float | None
) -> list[Firing]:
    """Save and claim these reminders (`sending`); record them sent `sent_after` seconds after
    their due time, unless None (left in flight). The rings as claimed."""
    await store.add_reminders(reminders)
    firings = await store.claim(
        [claim(r) for r in reminders], sender="worker-1", now=NOW, lease=LEASE
    )
    if sent_after is not None:
        await store.record_attempts(
            [result(f, at=f.due_at + timedelta(seconds=sent_after)) for f in firings]
        )
    return firings


async def test_workers_show_their_parts_and_the_breakers_they_reported(store: Store) -> None:
    await store.renew_leases("w1", parts=4, ttl=TTL, breakers=["webhook:hooks.example"])
    await store.renew_leases("w2", parts=4, ttl=TTL)
    await store.renew_leases("w1", parts=4, ttl=TTL, breakers=["sms", "apns"])  # lets 2 go
    await store.renew_leases("w2", parts=4, ttl=TTL)  # takes them

    workers = await store.list_workers()

    assert [w.worker for w in workers] == ["w1", "w2"]
    w1, w2 = workers
    assert w1.breakers == ("apns", "sms")  # the last heartbeat's, sorted
    assert w2.breakers == ()
    assert len(w1.parts) == len(w2.parts) == 2
    assert sorted(w1.parts + w2.parts) == [0, 1, 2, 3]
    assert w1.heartbeat_at.tzinfo is not None


async def test_a_worker_that_stopped_is_gone_with_its_breakers(store: Store) -> None:
    await store.renew_leases("w1", parts=2, ttl=TTL, breakers=["sms"])
    await store.release_leases("w1")

    assert await store.list_workers() == []


async def test_due_counts_per_bucket_are_capped_and_overdue_is_counted(store: Store) -> None:
    due = [NOW + timedelta(minutes=m, seconds=s) for m, s in [(0, 1), (0, 59), (2, 5)]]
    late = [NOW - timedelta(minutes=3), NOW - timedelta(seconds=1)]
    crowd = [NOW + timedelta(minutes=5)] * 7
    await store.add_reminders(
        [reminder(f"o{n}", due_at=at) for n, at in enumerate(due + late + crowd)]
    )

    counts = await store.count_due(first_bucket=FIRST, last_bucket=FIRST + 59, cap=5)

    assert counts.buckets == {FIRST: 2, FIRST + 2: 1, FIRST + 5: 5}  # 7 counted up to 5
    assert counts.overdue == 2


async def test_rings_are_counted_per_minute_with_their_lateness(store: Store) -> None:
    sent = [reminder(f"s{n}", due_at=NOW + timedelta(seconds=n)) for n in range(3)]
    waiting = [reminder("w", due_at=NOW + timedelta(minutes=1, seconds=10))]
    crowd = [reminder(f"c{n}", due_at=NOW + timedelta(minutes=2, seconds=n)) for n in range(6)]
    await _ring(store, sent, sent_after=1.5)
    [in_flight] = await _ring(store, waiting, sent_after=None)
    await _ring(store, crowd, sent_after=0.25)

    minutes = await store.sample_rings(first_minute=FIRST, last_minute=FIRST + 3, per_minute=4)

    # The board counts firing rows: a first try still in flight has none on PostgreSQL.
    assert minutes == [
        _minute(0, sent=3, lateness=1.5),
        _minute(1, waiting=1 if in_flight.stored else 0),
        _minute(2, sent=4, lateness=0.25),  # 6 due, the 4 earliest read
        _minute(3),
    ]


def _minute(offset: int, *, sent: int = 0, waiting: int = 0, lateness: float = 0) -> RingMinute:
    """A minute FIRST + offset with nothing failed or expired, every sent ring as late."""
    late = Lateness(p50=lateness, p99=lateness, max=lateness) if sent else None
    return RingMinute(
        minute=FIRST + offset, sent=sent, failed=0, expired=0, waiting=waiting, lateness=late
    )


async def test_lateness_is_by_nearest_rank(store: Store) -> None:
    items = [reminder(f"r{n}", due_at=NOW + timedelta(seconds=n)) for n in range(10)]
    await store.add_reminders(items)
    firings = await store.claim([claim(r) for r in items], sender="worker-1", now=NOW, lease=LEASE)
    await store.record_attempts(
        [result(f, at=f.due_at + timedelta(seconds=int(f.due_at.second) + 1)) for f in firings]
    )

    [minute] = await store.sample_rings(first_minute=FIRST, last_minute=FIRST, per_minute=100)

    assert minute.lateness == Lateness(p50=5.0, p99=10.0, max=10.0)  # of 1 … 10 s


async def test_failed_rings_have_no_lateness(store: Store) -> None:
    item = reminder(due_at=NOW)
    await store.add_reminders([item])
    [firing] = await store.claim([claim(item)], sender="worker-1", now=NOW, lease=LEASE)
    await store.record_attempts(
        [result(firing, state=FiringState.FAILED, outcome=Outcome.FAILED, error="gone")]
    )

    [minute] = await store.sample_rings(first_minute=FIRST, last_minute=FIRST, per_minute=10)

    assert (minute.failed, minute.sent, minute.lateness) == (1, 0, None)


async def test_queue_depth_counts_queued_and_sending_up_to_the_cap(store: Store) -> None:
    queued = [reminder(f"q{n}", due_at=NOW) for n in range(4)]
    sending = [reminder(f"s{n}", due_at=NOW) for n in range(2)]
    first_tries = [reminder(f"f{n}", due_at=NOW) for n in range(2)]
    await store.add_reminders(queued + sending + first_tries)
    await held(store, sending, sender="worker-1")  # written `sending`: taken by a sender
    await store.claim(
        [claim(r, state=FiringState.QUEUED) for r in queued],
        sender="worker-1",
        now=NOW,
        lease=LEASE,
    )
    in_flight = await store.claim(
        [claim(r) for r in first_tries], sender="worker-1", now=NOW, lease=LEASE
    )

    # A first try in flight is a firing row `sending` on SQLite; on PostgreSQL it has no row
    # until its result is written, and the board counts rows.
    counted = 2 + sum(f.stored for f in in_flight)
    assert await store.count_queue(cap=3) == {
        FiringState.QUEUED: 3,
        FiringState.SENDING: min(counted, 3),
    }
    assert counted == (4 if in_flight[0].stored else 2)


# -- plans: every read is an index range scan, with enough rows for the planners to choose --

ROWS = 6_000
MINUTES = 120


async def _fill(url: str) -> None:
    """ROWS reminders: the first half due over MINUTES minutes, pending; the second half in
    3 busy minutes, claimed and sent (a busy minute is where a read must stop at its cap)."""
    store = await open_store(url)
    try:
        await store.migrate()
        reminders = [
            reminder(
                f"owner-{n}",
                due_at=NOW
                + timedelta(minutes=n % (MINUTES if n < ROWS // 2 else 3), seconds=n % 60),
                created_at=NOW + timedelta(milliseconds=n),
            )
            for n in range(ROWS)
        ]
        await store.add_reminders(reminders[: ROWS // 2])
        await _ring(store, reminders[ROWS // 2 :], sent_after=0.5)
    finally:
        await store.close()


def _sqlite_plan(connection: sqlite3.Connection, sql: str, params: dict[str, Any]) -> list[str]:
    return [row[3] for row in connection.execute("EXPLAIN QUERY PLAN " + sql, params)]


async def test_sqlite_status_reads_use_indexes(sqlite_url: str) -> None:
    await _fill(sqlite_url)
    connection = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
    try:
        connection.execute("ANALYZE")
        params = {"first": FIRST, "last": FIRST + 59, "cap": 100, "start": 0, "end": 1, "limit": 9}
        plans = {
            name: _sqlite_plan(connection, getattr(lite, name), params)
            for name in ("COUNT_DUE", "COUNT_OVERDUE", "SAMPLE_RINGS", "COUNT_QUEUE")
        }
    finally:
        connection.close()

    assert any(
        "USING PRIMARY KEY (lane=? AND rank=? AND bucket=?)" in line for line in plans["COUNT_DUE"]
    ), plans["COUNT_DUE"]
    assert any(
        "USING PRIMARY KEY (lane=? AND rank=? AND bucket>? AND bucket<?)" in line
        for line in plans["COUNT_OVERDUE"]
    ), plans["COUNT_OVERDUE"]
    assert any(
        "INDEX firings_due (due_at>? AND due_at<?)" in line for line in plans["SAMPLE_RINGS"]
    )
    assert any("INDEX firings_queued" in line for line in plans["COUNT_QUEUE"])
    assert any("INDEX firings_sending" in line for line in plans["COUNT_QUEUE"])
    # A whole scan only of the partial indexes of the queue, which hold queued or sending
    # firings only (and stop at the cap).
    partial = (
        "SCAN firings USING INDEX firings_queued",
        "SCAN firings USING INDEX firings_sending",
    )
    for plan in plans.values():
        scans = [line for line in plan if line.startswith(("SCAN reminders", "SCAN firings"))]
        assert set(scans) <= set(partial), plan
        assert not any("TEMP B-TREE" in line for line in plan), plan


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(node for child in plan.get("Plans", []) for node in _nodes(child))]


@pytest.mark.postgres
async def test_postgres_status_reads_use_indexes(pg_migrated_url: str) -> None:
    await _fill(pg_migrated_url)
    connection = await asyncpg.connect(pg_migrated_url)
    try:
        await connection.execute("ANALYZE reminders; ANALYZE due; ANALYZE firings")
        statements: dict[str, tuple[str, tuple[int, ...]]] = {
            "COUNT_DUE": (pg.COUNT_DUE, (FIRST, FIRST + 59, 100)),
            "COUNT_OVERDUE": (pg.COUNT_OVERDUE, (FIRST, 100)),
            "SAMPLE_RINGS": (pg.SAMPLE_RINGS, (FIRST, FIRST + 59, 100)),
            "COUNT_QUEUE": (pg.COUNT_QUEUE, (100,)),
        }
        plans = {}
        async with connection.transaction():  # as the store runs them
            await connection.execute(pg.STATUS_PLANNING)
            for name, (sql, args) in statements.items():
                explained = await connection.fetchval("EXPLAIN (FORMAT JSON) " + sql, *args)
                plans[name] = _nodes(json.loads(explained)[0]["Plan"])
    finally:
        await connection.close()

    # Each occurrence read is probed in `rings` (decided already, and not yet tidied?); the
    # overdue ones are counted from the lowest watermark (`leases`: a row a part).
    expected = {
        "COUNT_DUE": {"due_outside_pkey", "rings_pkey"},  # no month made: the default partition
        "COUNT_OVERDUE": {"due_outside_pkey", "rings_pkey"},
        "SAMPLE_RINGS": {"firings_pkey"},
        "COUNT_QUEUE": {"firings_queued", "firings_sending"},
    }
    for name, nodes in plans.items():
        assert {n["Index Name"] for n in nodes if "Index Name" in n} == expected[name], nodes
        kinds = {n["Node Type"] for n in nodes if n.get("Relation Name") != "leases"}
        assert not kinds & {"Seq Scan", "Bitmap Heap Scan", "Sort"}, nodes
