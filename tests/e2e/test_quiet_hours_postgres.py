"""Quiet hours, through `tocsin api` and a `tocsin worker` on PostgreSQL: the scenario of
test_quiet_hours.py, in a file of its own so that the two backends run side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_quiet_hours import quiet_hours_hold_bulk_rings

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.long]


@pytest.mark.timeout(300)
async def test_quiet_hours_hold_bulk_rings_until_they_end_and_let_urgent_ones_through(
    pg_migrated_url: str, tmp_path: Path
) -> None:
    await quiet_hours_hold_bulk_rings("postgres", tmp_path, pg_url=pg_migrated_url)
