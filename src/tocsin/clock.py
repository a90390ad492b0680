"""Time sources: the scheduler asks a clock for "now" so tests can run minutes in seconds."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """What the scheduler and delivery need to know about time."""

    def now(self) -> datetime:
        """The current instant, timezone-aware UTC."""
        ...

    async def sleep_until(self, instant: datetime) -> None:
        """Return at or soon after `instant` (at once when it has passed)."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep_until(self, instant: datetime) -> None:
        delay = (instant - datetime.now(UTC)).total_seconds()
        if delay > 0:
            await asyncio.sleep(delay)


class FakeClock:
    """A clock for tests: time stands still until `advance` moves it, then sleepers wake.

    With `speed` > 0 it instead runs `speed` times faster than real time from `start`,
    which lets an end-to-end test play an hour of schedule in a minute.
    """

    def __init__(self, start: datetime, *, speed: float = 0.0) -> None:
        if start.tzinfo is None:
            raise ValueError("FakeClock needs an aware start instant")
        self._now = start.astimezone(UTC)
        self._speed = speed
        self._real_start = time.monotonic()
        self._changed = asyncio.Event()

    def now(self) -> datetime:
        if not self._speed:
            return self._now
        loop_now = time.monotonic()
        return self._now + timedelta(seconds=(loop_now - self._real_start) * self._speed)

    def advance(self, delta: timedelta) -> None:
        """Move time forward (never back) and wake every sleeper to look again."""
        if delta < timedelta(0):
            raise ValueError("time does not go back")
        self._now += delta
        self._changed.set()
        self._changed = asyncio.Event()

    def set(self, instant: datetime) -> None:
        """Jump to `instant` (which must not be in the past)."""
        self.advance(instant.astimezone(UTC) - self._now)

    async def sleep_until(self, instant: datetime) -> None:
        while self.now() < instant:
            if self._speed:
                wait = (instant - self.now()).total_seconds() / self._speed
                await asyncio.sleep(max(wait, 0.0))
            else:
                await self._changed.wait()
