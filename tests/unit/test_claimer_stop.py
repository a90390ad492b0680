"""A worker's stop while delivery has no room (the database away, results unwritten): the
claims still waiting claimed nothing and are dropped, so the stop ends."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from tocsin.clock import FakeClock
from tocsin.domain import Firing
from tocsin.scheduler.claimer import Claimer
from tocsin.scheduler.timeline import Entry, Timeline
from tocsin.store import Store


class Unreachable:
    """A store that must not be reached: no claim may start while delivery has no room."""

    def __init__(self) -> None:
        self.claims = 0

    async def claim(self, claims: Sequence[Any], **_: Any) -> list[Firing]:
        self.claims += 1
        return []


async def test_a_stop_drops_the_claims_waiting_for_room() -> None:
    never = asyncio.Event()

    async def no_room(count: int, rank: int) -> None:
        await never.wait()

    async def handoff(firings: Iterable[Firing]) -> None:
        raise AssertionError("nothing was claimed, so nothing is handed over")

    store = Unreachable()
    claimer = Claimer(
        cast(Store, store),
        Timeline(),
        FakeClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC)),
        handoff,
        room=no_room,
        sender="w1",
        lease=timedelta(seconds=10),
        batch=10,
        concurrency=2,
    )
    entry = Entry.make("r1", datetime(2026, 3, 2, 9, 0, tzinfo=UTC), 0, None, 600, 1)
    claimer.claim_soon([entry] * 25)  # three batches: two wait for room
    await asyncio.sleep(0.01)

    await asyncio.wait_for(claimer.drain(), timeout=2)

    assert store.claims == 0
    assert claimer.claimed == 0
