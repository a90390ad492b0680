"""`bench burst` on PostgreSQL reports what one ring cost (`cost_per_ring`: WAL from
`pg_stat_wal`, the server's and the workers' CPU from /proc, row writes) and shows it on one
line of the table, and its WAL by relation; a server whose processes are not on this
machine gets no CPU figure, and the reason."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from tests.support.postgres import PostgresServer
from tocsin_bench.costs import locate_server
from tocsin_bench.firing import FiringSpec, run_firing
from tocsin_bench.report import to_table

RINGS = 300


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.timeout(110)
async def test_a_burst_reports_what_a_ring_cost(pg_server: PostgresServer) -> None:
    spec = FiringSpec(
        scenario="burst",
        db="postgres",
        reminders=RINGS,
        spread=1,
        workers=1,
        channel="null",
        pg_url=pg_server.admin_url,
        due_in=3,
    )
    result = await run_firing(spec)

    cost = result["metrics"]["cost_per_ring"]
    assert cost["rings"] == RINGS, result["metrics"]
    assert cost["wal_bytes"] > 0
    assert cost["wal_records"] > 0
    assert cost["wal_fpi"] >= 0
    assert cost["row_writes"] > 0
    assert cost["window_s"] > 0
    _positive_or_explained(cost, "db_cpu_us", "db_cpu_null_reason")
    _positive_or_explained(cost, "worker_cpu_us", "worker_cpu_null_reason")
    # By relation (`pg_waldump` over the window), where the server's WAL is on this machine.
    by_relation = result["metrics"]["wal_by_relation"]
    if "null_reason" not in by_relation:
        assert by_relation["public.firings"]["bytes"] > 0, by_relation
        assert all(set(row) == {"bytes", "fpi"} for row in by_relation.values()), by_relation
    lines = [line for line in to_table([result]).splitlines() if "cost_per_ring" in line]
    assert len(lines) == 1
    assert "B WAL" in lines[0]


def _positive_or_explained(cost: dict[str, Any], key: str, reason: str) -> None:
    if cost[key] is None:
        assert cost[reason], cost
    else:
        assert cost[key] > 0, cost
        assert reason not in cost, cost


def test_a_session_that_is_no_postgres_process_here_has_no_server_cpu() -> None:
    postmaster, reason = locate_server(os.getpid(), time.time())

    assert postmaster is None
    assert reason is not None
    assert "not a postgres process" in reason


def test_a_session_with_no_process_here_has_no_server_cpu() -> None:
    postmaster, reason = locate_server(2**22 + 1, time.time())  # above pid_max's ceiling

    assert postmaster is None
    assert reason is not None
