"""Every pending row gets in: a ring saved into a part that is full rings at its second, and
a row saved below its part's watermark is still rung. On both backends, with a real clock."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

from tests.integration.engine.support import (
    TUNING,
    eventually,
    firings_of,
    reminder,
    running,
    settings,
)
from tocsin.clock import SystemClock
from tocsin.domain import FiringState
from tocsin.scheduler import LoadTuning
from tocsin.store import Store

clock = SystemClock()

# A part full at 100 entries, read 40 at a time: the bulk below fills it.
SMALL = replace(TUNING, load=LoadTuning(lead=TUNING.load.lead, max_held=100, page=40, low_water=20))


async def settled(store: Store, reminder_id: str) -> bool:
    """Whether the reminder rang, and its ring reached an outcome."""
    firings = await firings_of(store, reminder_id)
    return bool(firings) and all(firing.state.is_final for firing in firings)


async def test_a_ring_saved_into_a_full_part_rings_at_its_second(store: Store) -> None:
    """150 rings of one owner (one part) due in 20 s fill the part; one saved then for 5 s
    from now sorts before them all: it is admitted, pushing the latest held entry out, and
    rings on time. Every ring of the bulk still rings once: what was pushed out is read
    again in its turn."""
    now = clock.now().replace(microsecond=0)
    bulk = [
        reminder("ana", now=now, at=now + timedelta(seconds=20), text=f"bulk {n}")
        for n in range(150)
    ]
    await store.add_reminders(bulk)
    async with running(store, settings(), clock, tuning=SMALL):
        await asyncio.sleep(3)  # the bulk is read ahead: the part is full
        saved_at = clock.now().replace(microsecond=0)
        early = reminder("ana", now=saved_at, at=saved_at + timedelta(seconds=5), text="early")
        await store.add_reminders([early])

        async def early_rang() -> bool:
            return await settled(store, early.id)

        await eventually(early_rang, within=30)
        (rung,) = await firings_of(store, early.id)

        async def bulk_rang() -> bool:
            return all([await settled(store, one.id) for one in bulk])

        await eventually(bulk_rang, within=60, every=0.2)
        bulk_firings = [await firings_of(store, one.id) for one in bulk]
    assert rung.state is FiringState.SENT
    assert rung.sent_at is not None
    late = (rung.sent_at - rung.due_at).total_seconds()
    assert late < 5, f"rang {late:.1f} s late: behind the bulk due 15 s after it"
    assert [len(firings) for firings in bulk_firings] == [1] * len(bulk)
    assert {firings[0].state for firings in bulk_firings} == {FiringState.SENT}


async def test_a_row_saved_below_the_watermark_is_still_rung(store: Store) -> None:
    """A worker swept its part past the last minutes and stopped; a row is then saved due
    two minutes ago (an API host whose clock is behind, while no worker listens). The next
    worker's first sweep reads what was saved since the last one of the part, whatever the
    watermark: it rings, late and inside its freshness, instead of staying pending for
    ever."""
    async with running(store, settings(), clock, tuning=TUNING):
        await asyncio.sleep(2)  # a few sweeps: the watermark is at the last minute
    past = clock.now().replace(microsecond=0) - timedelta(seconds=150)
    stray = reminder("ana", now=past - timedelta(seconds=1), at=past, text="stray")
    await store.add_reminders([stray])  # no worker listens
    async with running(store, settings(), clock, tuning=TUNING):

        async def rang() -> bool:
            return await settled(store, stray.id)

        await eventually(rang, within=30)
        (firing,) = await firings_of(store, stray.id)
    assert firing.state is FiringState.SENT
