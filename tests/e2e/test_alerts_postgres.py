"""Early alerts through `tocsin api` and a `tocsin worker` on PostgreSQL: the scenario of
test_alerts.py, in a file of its own so that the two backends run side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_alerts import alert_then_cancel

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.long]


@pytest.mark.timeout(480)
async def test_an_alert_rings_before_its_occurrence_and_a_cancel_after_it_stops_the_rest(
    pg_migrated_url: str, tmp_path: Path
) -> None:
    await alert_then_cancel("postgres", tmp_path, pg_url=pg_migrated_url)
