"""A small run of `bench upgrade`, so that its database keeps matching the schema of the
release before 0021, and its load keeps writing as that release did: every pending reminder's
occurrence copied, and every write timed in a phase."""

from __future__ import annotations

import pytest

from tests.support.postgres import PostgresServer
from tocsin_bench.upgrade import UpgradeSpec, run_upgrade

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


async def test_upgrade_copies_every_pending_occurrence(pg_server: PostgresServer) -> None:
    spec = UpgradeSpec(
        reminders=3_000, rate=50, batch_pages=4, pg_url=pg_server.admin_url, quiet_seconds=0.5
    )

    metrics = (await run_upgrade(spec))["metrics"]

    assert set(metrics["writes_ms"]) == {"before", "migrating", "after"}
    assert metrics["uncopied"] == 0
    assert metrics["wal_bytes"] > 0
    assert "0035_occurrences_copied" in metrics["took_s"]
