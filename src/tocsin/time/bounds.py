"""The span of time Tocsin rings in: far enough inside year 1 to 9999 that nothing overflows.

Python's datetime ends at 9999-12-31. A ring near that end still needs room: its zone's offset
turns a wall time into an instant up to ~15 hours later, its deadline is up to 7 days after
it, and the time layer steps a day either side of an instant. So every `at`, snooze, UNTIL and
ring lies in [EARLIEST, LATEST]; outside it the input is refused, naming the field, rather
than failing with an OverflowError somewhere downstream.
"""

from __future__ import annotations

from datetime import UTC, datetime

from tocsin.errors import InvalidInput

EARLIEST = datetime(1, 1, 3, tzinfo=UTC)
LATEST = datetime(9999, 12, 1, tzinfo=UTC)
# The same limits for naive local wall times (a zone moves them by less than a day).
EARLIEST_LOCAL = EARLIEST.replace(tzinfo=None)
LATEST_LOCAL = LATEST.replace(tzinfo=None)
SPAN = "from 0001-01-03 to 9999-12-01 (UTC)"


def check_in_range(moment: datetime, *, field: str, text: str) -> datetime:
    """`moment` (an instant, or a naive wall time) unless it lies outside [EARLIEST, LATEST]."""
    low, high = (EARLIEST, LATEST) if moment.tzinfo is not None else (EARLIEST_LOCAL, LATEST_LOCAL)
    if not low <= moment <= high:
        raise InvalidInput(field, f"{text!r} is outside the times Tocsin handles: {SPAN}")
    return moment
