"""A claim that fails on the database changes nothing durable, and the sweep no longer reads
a part's minutes again: its entries go back to the timeline, still held (the part's
watermark never passes them), and are claimed again."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from tocsin.clock import FakeClock
from tocsin.domain import Firing
from tocsin.errors import StoreUnavailable
from tocsin.scheduler.claimer import Claimer
from tocsin.scheduler.timeline import Entry, Timeline
from tocsin.store import Store

DUE = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class AwayOnce:
    """A store whose first claim fails as a database that went away does."""

    def __init__(self) -> None:
        self.tried: list[list[str]] = []

    async def claim(self, claims: Sequence[Any], **_: Any) -> list[Firing]:
        self.tried.append([claim.reminder_id for claim in claims])
        if len(self.tried) == 1:
            raise StoreUnavailable("PostgreSQL unreachable")
        return []


async def test_a_failed_claim_gives_its_entries_back_and_they_are_claimed_again() -> None:
    async def handoff(firings: Iterable[Firing]) -> None:
        pass

    timeline, store = Timeline(), AwayOnce()
    claimer = Claimer(
        cast(Store, store),
        timeline,
        FakeClock(DUE),
        handoff,
        sender="w1",
        lease=timedelta(seconds=10),
        batch=10,
        concurrency=1,
        retry=timedelta(milliseconds=10),
    )
    entries = [Entry.make(f"r{n}", DUE, 0, None, 600, 1) for n in range(3)]
    timeline.add(entries)
    claimer.claim_soon(timeline.take_due(DUE))
    await _tried(store, 1)

    assert store.tried == [["r0", "r1", "r2"]]
    assert timeline.held(0) == 3  # still held while they wait to be tried again
    assert timeline.oldest_bucket(0) == entries[0].bucket
    for _ in range(200):
        if timeline.next_second() is not None:
            break
        await asyncio.sleep(0.01)
    again = timeline.take_due(DUE)
    assert sorted(entry.reminder_id for entry in again) == ["r0", "r1", "r2"]

    claimer.claim_soon(again)
    await _tried(store, 2)
    await claimer.drain()
    assert len(store.tried) == 2
    assert timeline.held(0) == 0
    assert timeline.oldest_bucket(0) is None


async def _tried(store: AwayOnce, claims: int) -> None:
    for _ in range(500):
        if len(store.tried) >= claims:
            await asyncio.sleep(0)  # its release or give-back, after the claim's answer
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{len(store.tried)} claims tried, not {claims}")
