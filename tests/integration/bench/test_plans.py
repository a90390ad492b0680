"""A small run of `bench plans`, so its bulk rows keep matching the schema and its batches
the store's statements: every batch executes. (On tables this small the planner may read a
table whole instead of looking 1,000 rows up — as cheap there — so the plans are checked by
tests/integration/store/test_plans.py, on larger ones.)"""

from __future__ import annotations

import pytest

from tests.support.postgres import PostgresServer
from tocsin_bench.plans import PlansSpec, run_plans

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


async def test_plans_reads_by_primary_key(pg_server: PostgresServer) -> None:
    spec = PlansSpec(
        reminders=50_000,
        busy=10_000,
        firings=50_000,
        sending=10_000,
        finished=1_000,
        executions=2,
        pg_url=pg_server.admin_url,
    )
    result = await run_plans(spec)

    metrics = result["metrics"]
    for statistics in ("stale", "analysed"):
        for name in ("claim", "record"):
            for plan in ("custom", "generic"):
                measured = metrics[statistics][f"{name}.{plan}"]
                assert measured["ms"] > 0
                assert measured["buffers"] > 0
                assert measured["reads"]
