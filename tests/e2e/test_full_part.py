"""A ring saved into a minute whose part is full, through the running service.

A part holds at most 20,000 entries. Here 20,500 rings of one owner (one part) are due at
second 50 of a minute, read ahead before it starts, which fills the part. At second 5 a ring
is saved for second 15 with 30 s of freshness: it sorts before everything held, so it is
admitted (pushing the latest held entry out) and rings at its second — not after the bulk,
when its freshness would be gone. On `tocsin serve` (SQLite) and on `tocsin api` +
`tocsin worker` (PostgreSQL).
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.e2e.service import create, firings, iso, late, service, sleep_until
from tests.integration.engine.support import receiver, reminder
from tocsin.store import open_store

pytestmark = [pytest.mark.slow, pytest.mark.long]

BULK = 20_500  # more than a part holds (LoadTuning.max_held)
# One owner (so one part) keeps the whole bulk pending: more than the per-owner cap allows.
SETTINGS = {"TOCSIN_ALLOW_PRIVATE_URLS": "true", "TOCSIN_MAX_REMINDERS_PER_OWNER": "0"}


async def _save_bulk(url: str, due: datetime) -> None:
    store = await open_store(url)
    try:
        now = datetime.now(UTC)
        bulk = [reminder("ana", now=now, at=due, text=f"bulk {n}") for n in range(BULK)]
        for start in range(0, BULK, 5_000):
            await store.add_reminders(bulk[start : start + 5_000])
    finally:
        await store.close()


def _minute_with_time_to_spare() -> datetime:
    """The start of the next minute, at least 20 s away (the bulk's save takes seconds)."""
    now = datetime.now(UTC)
    if now.second > 40:
        time.sleep(61 - now.second)
        now = datetime.now(UTC)
    return now.replace(second=0, microsecond=0) + timedelta(minutes=1)


@pytest.mark.timeout(240)
def test_a_ring_saved_into_a_full_part_rings_at_its_second(tmp_path: Path) -> None:
    """On SQLite (`tocsin serve`); test_full_part_postgres.py runs it on PostgreSQL."""
    ring_saved_into_a_full_part("sqlite", tmp_path, pg_url="")


def ring_saved_into_a_full_part(kind: str, tmp_path: Path, *, pg_url: str) -> None:
    url = f"sqlite:///{tmp_path / 'tocsin.db'}" if kind == "sqlite" else pg_url
    with (
        receiver() as sink,
        service(kind, tmp_path, pg_url, sink, SETTINGS) as base,
        httpx.Client(base_url=base, timeout=10) as client,
    ):
        minute = _minute_with_time_to_spare()
        asyncio.run(_save_bulk(url, minute + timedelta(seconds=50)))
        sleep_until(minute + timedelta(seconds=5))  # the minute was read ahead 10 s ago
        early = create(
            client, at=iso(minute + timedelta(seconds=15)), freshness="30s", text="Early"
        )
        sleep_until(minute + timedelta(seconds=22))
        rung = firings(client, early)
    assert [firing["state"] for firing in rung] == ["sent"], rung
    assert late(rung[0]) < 3, f"rang {late(rung[0]):.1f} s late"
