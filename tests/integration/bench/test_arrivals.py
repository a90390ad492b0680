"""A small run of `bench arrivals` on both backends: every crossing reported rings once and
reaches the receiver, and on PostgreSQL the cost of a ring is measured."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.postgres import PostgresServer
from tocsin_bench.arrivals import ArrivalsSpec, run_arrivals

pytestmark = pytest.mark.slow

CROSSINGS = 200


async def test_arrivals_on_sqlite() -> None:
    result = await run_arrivals(ArrivalsSpec(db="sqlite", owners=CROSSINGS, rate=100))

    _check(result["metrics"])


@pytest.mark.postgres
async def test_arrivals_on_postgres(pg_server: PostgresServer) -> None:
    spec = ArrivalsSpec(owners=CROSSINGS, rate=100, pg_url=pg_server.admin_url)
    result = await run_arrivals(spec)

    metrics = _check(result["metrics"])
    assert metrics["cost_per_ring"]["rings"] == CROSSINGS
    assert metrics["cost_per_ring"]["wal_bytes"] > 0


def _check(metrics: dict[str, Any]) -> dict[str, Any]:
    assert metrics["errors"] == {}
    assert (metrics["rang"], metrics["delivered"]) == (CROSSINGS, CROSSINGS)
    assert 0 < metrics["crossing_to_sent_s"]["p99"] < 60
    return metrics
