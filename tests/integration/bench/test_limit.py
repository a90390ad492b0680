"""A small run of `bench limit` (in-process: it has no worker processes), so the bare claim
loop keeps matching the store's statements: every row claimed once, then claimed and
recorded, and the rows really end `sent` as the store's own writes leave them; and its
floor, the bare two-write ring, rings every one of its rows and reports its WAL."""

from __future__ import annotations

import pytest

from tests.support.postgres import PostgresServer
from tocsin_bench.limit import LimitSpec, run_limit

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


async def test_limit_claims_and_records_every_row(pg_server: PostgresServer) -> None:
    result = await run_limit(LimitSpec(rows=2_500, batch=1_000, pg_url=pg_server.admin_url))

    metrics = result["metrics"]
    assert metrics["claimed"] == 2_500
    assert metrics["claimed_and_recorded"] == 2_500
    assert metrics["claims_per_s"] > 0
    assert metrics["claim_and_record_per_s"] > 0


async def test_the_floor_rings_every_row_and_reports_its_wal(pg_server: PostgresServer) -> None:
    spec = LimitSpec(rows=2_500, batch=1_000, floor_batch=1_000, pg_url=pg_server.admin_url)
    result = await run_limit(spec)

    metrics = result["metrics"]
    floor = metrics["floor"]
    assert floor["rings"] == 2_500
    assert floor["rings_per_s"] > 0
    for wal in (floor["wal_per_ring"], metrics["claim_and_record_wal_per_ring"]):
        assert wal["wal_bytes"] > 0
        assert wal["wal_records"] > 0
        assert wal["wal_fpi"] >= 0
    assert metrics["claim_and_record_share_of_floor"] > 0
