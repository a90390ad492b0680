"""The churn run's seed and table readings (`bench retention --churn`) on real PostgreSQL,
without the run itself (minutes long): the old rings it seeds are ones the store's retention
deletes, at the ring rate, and a reading tells every churn table's sizes, indexes, counters
and pgstattuple shares, so the harness cannot rot."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import asyncpg
import pytest

from tests.e2e.workers import query
from tests.integration.engine.support import eventually
from tocsin.store import open_store
from tocsin_bench import retention
from tocsin_bench.bloat import CHURN_TABLES, reading

pytestmark = pytest.mark.postgres

SPEC = retention.ChurnSpec(rate=10, duration=30, workers=2, channel="null")


async def _read(url: str) -> dict[str, Any]:
    connection = await asyncpg.connect(url)
    try:
        return await reading(connection)
    finally:
        await connection.close()


async def test_the_seeded_rings_come_of_age_at_the_ring_rate(pg_migrated_url: str) -> None:
    url = pg_migrated_url
    seeded = await retention.seed_churn(url, SPEC)

    assert seeded["autovacuum"]["autovacuum"] in {"on", "off"}
    before = seeded["before"]
    assert set(before) == set(CHURN_TABLES)
    for table in CHURN_TABLES:
        assert before[table]["live"] == before[table]["live_counted"] == SPEC.seeded
        assert before[table]["dead_pct"] == 0
        assert before[table]["total_mb"] > 0
    assert {"firings_pkey", "firings_open"} <= set(before["firings"]["indexes"])
    assert before["reminders"]["indexes"]["reminders_pkey"]["leaf_density_pct"] > 0
    # Fired by their rings, the seeded one-offs are in no age index: they go with their rings.
    assert before["reminders"]["indexes"]["reminders_finished"]["leaf_density_pct"] is None

    # 10 s after the first one's due: 10 rings a second, the first 100 come of age.
    [first] = await query(url, "SELECT min(due_at) AS due FROM firings")
    cutoff = first["due"] + timedelta(seconds=10)
    store = await open_store(url)
    try:
        pruned = await store.prune(
            firings_before=cutoff, reminders_before=cutoff, keys_before=cutoff, limit=1000
        )
        again = await store.prune(
            firings_before=cutoff, reminders_before=cutoff, keys_before=cutoff, limit=1000
        )
    finally:
        await store.close()

    assert (pruned.firings, pruned.attempts, pruned.reminders) == (100, 100, 100)
    assert again.rows == 0

    # The counters run on across the tests a recycled database served: compared, not read.
    async def counted() -> bool:
        rows = await query(
            url,
            "SELECT sum(n_tup_del) AS n FROM pg_stat_user_tables WHERE relname = ANY($1)",
            list(CHURN_TABLES),
        )
        return bool(rows[0]["n"] == deleted_before + 300)

    deleted_before = sum(before[table]["deleted"] for table in CHURN_TABLES)
    await eventually(counted, within=10, every=0.2)
    after = await _read(url)
    for table in CHURN_TABLES:
        assert after[table]["deleted"] - before[table]["deleted"] == 100
        assert after[table]["live_counted"] == SPEC.seeded - 100
