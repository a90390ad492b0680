"""Time sources: the scheduler asks a clock for "now" so tests can run minutes in seconds."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from datetime import UTC, datetime, timedelta
from typing import Protocol

logger = logging.getLogger(__name__)


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


class DatabaseClock:
    """The real clock, kept in step with the database's: a worker rings by the clock its
    leases are judged by, so a host whose clock is off neither rings early nor late.

    Each lease renewal reads the database's clock between two readings of this one
    (`reading`). One reading places the offset within half its round trip of the midpoint,
    and a round trip slowed on one leg (a busy host or database) skews the midpoint by up to
    that much: trusting the latest reading alone once rang a ring 90 ms early on a loaded
    machine. So, as NTP does, the clock follows the reading with the shortest round trip of
    the last `SAMPLES`; a reading that cannot agree with it (their intervals do not overlap:
    a clock was stepped) starts the choice afresh. A reading whose round trip took longer
    than `MAX_ROUND_TRIP` says too little and is ignored.
    """

    MAX_ROUND_TRIP = timedelta(seconds=1)
    WARN_OFFSET = timedelta(seconds=1)
    SAMPLES = 8  # readings, one a renewal: about 40 s at the default lease

    def __init__(self) -> None:
        self.offset = timedelta(0)  # the database's clock minus the host's
        self._samples: deque[tuple[timedelta, timedelta]] = deque(maxlen=self.SAMPLES)

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset

    async def sleep_until(self, instant: datetime) -> None:
        delay = (instant - self.now()).total_seconds()
        if delay > 0:
            await asyncio.sleep(delay)

    def reading(self, sent: datetime, database: datetime, received: datetime) -> None:
        """Correct by one reading of the database's clock taken between `sent` and
        `received` (both by this clock)."""
        round_trip = received - sent
        if round_trip > self.MAX_ROUND_TRIP:
            return
        offset = self.offset + database - (sent + round_trip / 2)  # database − host
        if self._samples:
            best_trip, best = min(self._samples)
            if abs(offset - best) > (round_trip + best_trip) / 2:
                self._samples.clear()  # both cannot be right: a clock was stepped
        self._samples.append((round_trip, offset))
        before = abs(self.offset) >= self.WARN_OFFSET
        self.offset = min(self._samples)[1]
        if abs(self.offset) >= self.WARN_OFFSET and not before:
            logger.warning(
                "this host's clock is %.3f s %s the database's: ringing by the database's",
                abs(self.offset.total_seconds()),
                "behind" if self.offset > timedelta(0) else "ahead of",
            )
