"""Ringing until done through `tocsin api` and a `tocsin worker` on PostgreSQL: the scenario
of test_until_done.py, in a file of its own so that the two backends run side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_until_done import dones_racing_nags

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.long]


@pytest.mark.timeout(420)
async def test_a_done_that_answered_stops_every_nag_after_it(
    pg_migrated_url: str, tmp_path: Path
) -> None:
    await dones_racing_nags("postgres", tmp_path, pg_url=pg_migrated_url)
