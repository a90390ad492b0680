"""A small run of `bench migration`, so that its history keeps matching the schema of the
release before, and its load keeps writing as each release does: every firing keyed, the
history's and the load's, and every write timed in a phase."""

from __future__ import annotations

import pytest

from tests.support.postgres import PostgresServer
from tocsin_bench.migration import MigrationSpec, run_migration

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

FIRINGS = 3_000


async def test_migration_keys_the_history_and_the_load(pg_server: PostgresServer) -> None:
    spec = MigrationSpec(
        firings=FIRINGS, rate=50, batch_pages=4, pg_url=pg_server.admin_url, quiet_seconds=0.5
    )

    metrics = (await run_migration(spec))["metrics"]

    writes = metrics["writes_ms"]
    assert set(writes) == {"before", "0034", "upgraded", "0036", "after"}
    assert metrics["rows"] > FIRINGS  # the history, and the rings the load inserted
    assert metrics["rows_keyed"] == metrics["rows"]
    assert metrics["0034_wal_bytes"] > 0
    assert metrics["0036_s"] > 0
