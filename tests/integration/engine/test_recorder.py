"""The recorder against a real store: a result the database refuses (a NUL that PostgreSQL's
jsonb cannot hold, a lone surrogate no JSON encoder writes) among good ones costs only itself —
the good ones are recorded, the bad one is logged once and dropped, and recording goes on."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from tests.integration.engine.support import eventually
from tests.integration.store.factories import LEASE, NOW, claim, held, reminder, result
from tocsin.delivery.recorder import Recorder
from tocsin.domain import AttemptResult, Firing, FiringState, Outcome
from tocsin.store import Store

NUL = "HTTP 500: bad\x00body"
SURROGATE = "SMTP 451 queued as \udcff"  # aiosmtplib keeps a reply that is not UTF-8 so


@asynccontextmanager
async def recording(store: Store) -> AsyncIterator[Recorder]:
    """A recorder running on `store` for the block's time, checked to be running at its end."""
    recorder = Recorder(store, batch=1000, interval=0.01)
    task = asyncio.create_task(recorder.run())
    try:
        yield recorder
        assert not task.done(), "the recorder ended on its own"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _rung(store: Store, count: int, *, stored: bool) -> list[Firing]:
    """`count` rings held by worker-1: first tries as a claim hands them out, or (`stored`)
    firings written `sending` and taken, as a retry or a recovered ring is."""
    targets = [reminder(f"owner-{n}") for n in range(count)]
    await store.add_reminders(targets)
    if stored:
        return await held(store, targets)
    rung = await store.claim([claim(t) for t in targets], sender="worker-1", now=NOW, lease=LEASE)
    assert len(rung) == count
    return rung


def _poisoned(firing: Firing, error: str) -> AttemptResult:
    return result(firing, state=FiringState.FAILED, outcome=Outcome.FAILED, error=error)


async def _states(store: Store, firings: list[Firing]) -> list[FiringState | None]:
    states = []
    for firing in firings:
        found = [f for f in await store.list_firings(firing.reminder_id) if f.id == firing.id]
        states.append(found[0].state if found else None)
    return states


async def _check_poison_costs_only_itself(
    store: Store, caplog: pytest.LogCaptureFixture, error: str, *, stored: bool
) -> None:
    *good, bad, later = await _rung(store, 9, stored=stored)
    with caplog.at_level(logging.WARNING, logger="tocsin.delivery.recorder"):
        async with recording(store) as recorder:
            for firing in good[:4]:
                recorder.add(result(firing))
            recorder.add(_poisoned(bad, error))
            for firing in good[4:]:
                recorder.add(result(firing))

            async def good_ones_recorded() -> bool:
                return await _states(store, good) == [FiringState.SENT] * len(good)

            await eventually(good_ones_recorded, within=15)
            recorder.add(result(later))  # recording goes on after it

            async def later_recorded() -> bool:
                return await _states(store, [later]) == [FiringState.SENT]

            await eventually(later_recorded, within=15)
            await asyncio.sleep(0.3)  # time for it to be tried again, if it were
            assert recorder.pending == 0

    dropped = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(dropped) == 1, caplog.text
    assert bad.id in dropped[0].getMessage()
    assert getattr(dropped[0], "firing_id", None) == bad.id
    # Left as any unwritten result is: held by its sender until its hold runs out, then
    # taken over and sent again.
    assert await _states(store, [bad]) == [FiringState.SENDING if bad.stored else None]


@pytest.mark.parametrize("stored", [False, True], ids=["first-try", "held-firing"])
async def test_a_result_no_json_can_hold_is_dropped_and_the_rest_recorded(
    store: Store, caplog: pytest.LogCaptureFixture, stored: bool
) -> None:
    await _check_poison_costs_only_itself(store, caplog, SURROGATE, stored=stored)


@pytest.mark.postgres
@pytest.mark.parametrize("stored", [False, True], ids=["first-try", "held-firing"])
async def test_a_result_postgresql_refuses_is_dropped_and_the_rest_recorded(
    pg_store: Store, caplog: pytest.LogCaptureFixture, stored: bool
) -> None:
    await _check_poison_costs_only_itself(pg_store, caplog, NUL, stored=stored)
