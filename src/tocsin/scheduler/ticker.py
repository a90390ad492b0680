"""Fire by the second: one timer for the earliest loaded second, not one per reminder."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tocsin.clock import Clock
from tocsin.delivery.waiting import sleep_until
from tocsin.scheduler.claimer import Claimer
from tocsin.scheduler.timeline import Timeline

IDLE = timedelta(seconds=60)  # how long to sleep with nothing loaded (an add wakes it)


class Ticker:
    """Sleeps until the earliest second anything is due, takes everything due by then out of
    the timeline and starts its claims; an entry landing earlier wakes it at once."""

    def __init__(self, timeline: Timeline, claimer: Claimer, clock: Clock) -> None:
        self._timeline = timeline
        self._claimer = claimer
        self._clock = clock

    async def run(self) -> None:
        while True:
            self._timeline.earlier.clear()
            now = self._clock.now()
            due = self._timeline.take_due(now)
            if due:
                self._claimer.claim_soon(due)
            second = self._timeline.next_second()
            until = now + IDLE if second is None else datetime.fromtimestamp(second, UTC)
            await sleep_until(self._clock, until, self._timeline.earlier)
