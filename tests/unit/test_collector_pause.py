"""The feed's pause of the garbage collector during a burst: bounded, rested, and never
turning on a collector someone else turned off."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from tocsin.api.collector import CollectorPause


class Ticks:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


async def test_a_burst_pauses_collection_until_the_pause_ends() -> None:
    pause = CollectorPause(pause=0.05, rest=10)

    pause.burst()
    assert pause.paused
    assert not gc.isenabled()
    pause.burst()  # a second announcement of the same burst changes nothing
    await asyncio.sleep(0.1)

    assert not pause.paused
    assert gc.isenabled()


async def test_the_next_pause_waits_for_the_rest() -> None:
    ticks = Ticks()
    pause = CollectorPause(pause=0.01, rest=5, clock=ticks)
    pause.burst()
    await asyncio.sleep(0.05)
    assert gc.isenabled()

    ticks.now += 4.9
    pause.burst()  # a steady stream of rings: the collector still runs
    assert gc.isenabled()
    assert not pause.paused

    ticks.now += 0.2
    pause.burst()
    assert not gc.isenabled()
    pause.resume()
    assert gc.isenabled()


async def test_a_collector_turned_off_by_someone_else_stays_off() -> None:
    pause = CollectorPause(pause=0.01, rest=0)
    gc.disable()

    pause.burst()
    await asyncio.sleep(0.05)

    assert not pause.paused
    assert not gc.isenabled()


async def test_resume_ends_the_pause_at_once_and_cancels_its_timer() -> None:
    pause = CollectorPause(pause=60, rest=0)
    pause.burst()

    pause.resume()
    pause.resume()  # twice is harmless

    assert gc.isenabled()
    assert not pause.paused
