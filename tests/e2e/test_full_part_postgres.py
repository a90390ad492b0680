"""A ring saved into a minute whose part is full, through `tocsin api` and a `tocsin worker`
on PostgreSQL: the scenario of test_full_part.py, in a file of its own so that the two
backends run side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_full_part import ring_saved_into_a_full_part

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.long]


@pytest.mark.timeout(240)
def test_a_ring_saved_into_a_full_part_rings_at_its_second(
    pg_migrated_url: str, tmp_path: Path
) -> None:
    ring_saved_into_a_full_part("postgres", tmp_path, pg_url=pg_migrated_url)
