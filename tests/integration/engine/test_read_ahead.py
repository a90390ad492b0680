"""A ring whose claim schedules the next one into a minute the loader has read ahead already:
the occurrence the claim writes waits where no load reads again (no wake-up names it, and
the sweep reads only what API writes saved), so the timeline holds it from the claim."""

from __future__ import annotations

from datetime import timedelta

from tests.integration.engine.support import T0, eventually, firings_of, reminder, running, settings
from tocsin.clock import FakeClock
from tocsin.domain import FiringState
from tocsin.store import Store

FIRST = T0 + timedelta(minutes=1, seconds=55)  # 17:59:55: the loader reads 18:00 at 17:59:50


async def test_a_series_ringing_in_a_minutes_last_seconds_rings_every_time(store: Store) -> None:
    series = reminder("minutely", now=T0, at=FIRST, repeat="every minute")
    await store.add_reminders([series])
    clock = FakeClock(T0)
    async with running(store, settings(), clock):
        for n in range(3):
            # Past each ring: its claim writes the next into the minute read ahead already.
            clock.set(FIRST + timedelta(minutes=n, seconds=1))

            async def rang(count: int = n + 1) -> bool:
                return len(await firings_of(store, series.id)) == count

            await eventually(rang, within=60)  # slack a loaded machine cannot eat
    firings = await firings_of(store, series.id)
    assert [f.due_at for f in firings] == [FIRST + timedelta(minutes=n) for n in range(3)]
    assert all(f.state is not FiringState.EXPIRED for f in firings)
