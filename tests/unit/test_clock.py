"""The fake clock stands still until moved, wakes sleepers when moved, and never goes back."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from tocsin.clock import FakeClock, SystemClock

START = datetime(2026, 11, 1, 5, 0, tzinfo=UTC)


async def test_time_stands_still_until_advanced() -> None:
    clock = FakeClock(START)
    await asyncio.sleep(0.01)
    assert clock.now() == START
    clock.advance(timedelta(minutes=90))
    assert clock.now() == START + timedelta(minutes=90)


async def test_a_sleeper_wakes_only_when_its_instant_comes() -> None:
    clock = FakeClock(START)
    sleeper = asyncio.create_task(clock.sleep_until(START + timedelta(seconds=30)))
    clock.advance(timedelta(seconds=29))
    await asyncio.sleep(0.01)
    assert not sleeper.done()
    clock.advance(timedelta(seconds=1))
    await asyncio.wait_for(sleeper, timeout=1)


async def test_set_jumps_to_an_instant() -> None:
    clock = FakeClock(START)
    clock.set(START + timedelta(days=1))
    assert clock.now() == START + timedelta(days=1)


def test_time_does_not_go_back() -> None:
    clock = FakeClock(START)
    with pytest.raises(ValueError, match="back"):
        clock.advance(timedelta(seconds=-1))


def test_a_naive_start_is_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        FakeClock(datetime(2026, 11, 1, 5, 0))


async def test_a_fast_clock_runs_ahead_of_real_time() -> None:
    clock = FakeClock(START, speed=100.0)
    await clock.sleep_until(START + timedelta(seconds=5))  # ~50 ms of real time
    assert clock.now() >= START + timedelta(seconds=5)


async def test_the_system_clock_is_aware_utc_and_sleeps_past_instants_at_once() -> None:
    clock = SystemClock()
    now = clock.now()
    assert now.tzinfo is UTC
    await asyncio.wait_for(clock.sleep_until(now - timedelta(seconds=1)), timeout=0.5)
