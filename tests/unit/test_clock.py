"""The fake clock stands still until moved, wakes sleepers when moved, and never goes back;
the database clock follows the database by its best reading."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from tocsin.clock import DatabaseClock, FakeClock, SystemClock

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


def _read(clock: DatabaseClock, *, offset: float, there: float, back: float) -> None:
    """One reading of a database `offset` seconds ahead of the host, whose request took
    `there` seconds to arrive and whose answer `back` seconds to return."""
    sent = clock.now()
    database = sent - clock.offset + timedelta(seconds=offset + there)
    clock.reading(sent, database, sent + timedelta(seconds=there + back))


def test_the_database_clock_follows_the_reading_with_the_shortest_round_trip() -> None:
    clock = DatabaseClock()
    _read(clock, offset=0.0, there=0.001, back=0.001)
    # A slow answer on a busy host: its midpoint is 0.2 s off. Trusted alone, it would make
    # the worker ring 0.2 s early.
    _read(clock, offset=0.0, there=0.001, back=0.4)
    assert abs(clock.offset.total_seconds()) < 0.002


def test_the_database_clock_follows_a_step_at_once() -> None:
    clock = DatabaseClock()
    _read(clock, offset=0.0, there=0.001, back=0.001)
    _read(clock, offset=3.0, there=0.05, back=0.05)  # cannot agree with the first: a step
    assert abs(clock.offset.total_seconds() - 3.0) < 0.001


def test_the_database_clock_forgets_old_readings_and_ignores_slow_ones() -> None:
    clock = DatabaseClock()
    _read(clock, offset=0.5, there=0.001, back=0.001)
    _read(clock, offset=9.0, there=0.9, back=0.9)  # a round trip over a second says too little
    assert abs(clock.offset.total_seconds() - 0.5) < 0.002
    for _ in range(DatabaseClock.SAMPLES):  # later, consistent readings of a drifted clock
        _read(clock, offset=0.51, there=0.005, back=0.005)
    assert abs(clock.offset.total_seconds() - 0.51) < 0.002
