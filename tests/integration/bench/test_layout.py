"""A small run of `bench layout` (in-process), so the two layouts it compares keep ringing
what they are given: each pass rings every row of its set exactly once, after a checkpoint,
and reports its WAL and CPU a ring."""

from __future__ import annotations

import pytest

from tests.support.postgres import PostgresServer
from tocsin_bench.layout import SETS, LayoutSpec, run_layout

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


async def test_each_layout_rings_every_row_of_its_set_once(pg_server: PostgresServer) -> None:
    result = await run_layout(LayoutSpec(rows=1_500, among=6, pg_url=pg_server.admin_url))

    passes = result["metrics"]
    assert set(passes) == set(SETS)
    for measured in passes.values():
        assert measured["rings"] == 1_500
        assert measured["wal_bytes"] > 0
        assert measured["wal_records"] > 0
        assert measured["wal_fpi"] >= 0


async def test_fewer_rows_than_sets_is_refused(pg_server: PostgresServer) -> None:
    with pytest.raises(ValueError, match="at least 4"):
        await run_layout(LayoutSpec(rows=10, among=3, pg_url=pg_server.admin_url))
