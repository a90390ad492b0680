"""A small run of `bench limit` (in-process: it has no worker processes), so the bare claim
loop keeps matching the store's statements: every row claimed once, then claimed and
recorded, and the rows really end `sent` as the store's own writes leave them."""

from __future__ import annotations

import pytest

from tests.support.postgres import PostgresServer
from tocsin.bench.limit import LimitSpec, run_limit

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


async def test_limit_claims_and_records_every_row(pg_server: PostgresServer) -> None:
    result = await run_limit(LimitSpec(rows=2_500, batch=1_000, pg_url=pg_server.admin_url))

    metrics = result["metrics"]
    assert metrics["claimed"] == 2_500
    assert metrics["claimed_and_recorded"] == 2_500
    assert metrics["claims_per_s"] > 0
    assert metrics["claim_and_record_per_s"] > 0
