"""Catch-up after the workers were down for 30 minutes: fresh rings go out late, stale ones
are recorded expired, a series rings at most once for what it missed and goes on."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from tests.integration.engine.support import T0, eventually, firings_of, reminder, running, settings
from tocsin.clock import FakeClock
from tocsin.domain import FiringState, Reminder
from tocsin.store import Store

SIX = T0.replace(minute=0) + timedelta(hours=1)  # 18:00Z; T0 is 17:58Z
BACK = SIX + timedelta(minutes=30, seconds=30)  # the workers come back at 18:30:30


def at(minutes: float) -> Reminder:
    return reminder(f"owner-{minutes}", now=T0, at=SIX + timedelta(minutes=minutes))


async def states(store: Store, one: Reminder) -> list[tuple[int, FiringState]]:
    """(minutes past 18:00, state) of each firing."""
    return [
        ((f.due_at - SIX) // timedelta(minutes=1), f.state) for f in await firings_of(store, one.id)
    ]


async def test_catch_up_after_thirty_minutes_down(store: Store) -> None:
    clock = FakeClock(T0)
    stale, fresh, last_moment, future = at(5), at(25), at(29.5), at(40)
    every5 = reminder("series-5", now=T0, at=SIX, repeat="every 5 minutes")
    every7 = reminder("series-7", now=T0, at=SIX, repeat="every 7 minutes", freshness=60)
    everyone = [stale, fresh, last_moment, future, every5, every7]
    await store.add_reminders(everyone)
    config = settings()
    async with running(store, config, clock, worker_id="before"):
        clock.set(T0 + timedelta(seconds=5))  # runs, records its watermarks, then stops
        await asyncio.sleep(0.3)
    clock.set(BACK)
    async with running(store, config, clock, worker_id="after"):

        async def caught_up() -> bool:
            for one in (stale, fresh, last_moment, every5, every7):
                firings = await firings_of(store, one.id)
                if not firings or not all(f.state.is_final for f in firings):
                    return False
            return len(await firings_of(store, every5.id)) == 2

        await eventually(caught_up)
        assert await states(store, stale) == [(5, FiringState.EXPIRED)]
        assert await states(store, fresh) == [(25, FiringState.SENT)]
        assert await states(store, last_moment) == [(29, FiringState.SENT)]
        # Seven occurrences missed (18:00…18:30): only the newest rang.
        assert await states(store, every5) == [(0, FiringState.EXPIRED), (30, FiringState.SENT)]
        # None of 18:00…18:28 is fresh (60 s) at 18:30:30: nothing rang; it goes on at 18:35.
        assert await states(store, every7) == [(0, FiringState.EXPIRED)]
        for one, upcoming in ((every5, 35), (every7, 35)):
            row = await store.get_reminder(one.id)
            assert row is not None
            assert row.due_at == SIX + timedelta(minutes=upcoming)
        late = (await firings_of(store, fresh.id))[0]
        assert late.sent_at == BACK, "rang late, at once"
        assert await firings_of(store, future.id) == []
        clock.set(SIX + timedelta(minutes=35))

        async def series_goes_on() -> bool:
            for one, count in ((every5, 3), (every7, 2)):
                firings = await firings_of(store, one.id)
                if len(firings) != count or not firings[-1].state.is_final:
                    return False
            return True

        await eventually(series_goes_on)
        clock.set(SIX + timedelta(minutes=40))

        async def future_rang() -> bool:
            firings = await firings_of(store, future.id)
            return bool(firings) and firings[0].state is FiringState.SENT

        await eventually(future_rang)
    assert await states(store, every5) == [
        (0, FiringState.EXPIRED),
        (30, FiringState.SENT),
        (35, FiringState.SENT),
        (40, FiringState.SENT),
    ]
    assert await states(store, every7) == [(0, FiringState.EXPIRED), (35, FiringState.SENT)]
