"""The span of time Tocsin rings in, which every layer can hold: from 0001-01-03 to 6000-01-01.

Python's datetime runs from year 1 to 9999, and an instant near either end has no room left:
a zone's offset moves a wall time up to ~15 hours, a deadline is up to 7 days after its ring,
a snooze up to 366 days, and the time layer steps a day either side of an instant. PostgreSQL
keeps a ring's bucket (its UTC epoch minute) in a 32-bit integer, which runs out in 6053. So
every `at`, snooze, UNTIL and ring lies in [EARLIEST, LATEST]; outside it the input is
refused, naming the field, rather than failing downstream with an OverflowError or a
database error.
"""

from __future__ import annotations

from datetime import UTC, datetime

from tocsin.errors import InvalidInput

EARLIEST = datetime(1, 1, 3, tzinfo=UTC)
LATEST = datetime(6000, 1, 1, tzinfo=UTC)
# The same limits for naive local wall times (a zone moves them by less than a day).
EARLIEST_LOCAL = EARLIEST.replace(tzinfo=None)
LATEST_LOCAL = LATEST.replace(tzinfo=None)
SPAN = "from 0001-01-03 to 6000-01-01 (UTC)"


def check_in_range(moment: datetime, *, field: str, text: str) -> datetime:
    """`moment` (an instant, or a naive wall time) unless it lies outside [EARLIEST, LATEST]."""
    low, high = (EARLIEST, LATEST) if moment.tzinfo is not None else (EARLIEST_LOCAL, LATEST_LOCAL)
    if not low <= moment <= high:
        raise InvalidInput(field, f"{text!r} is outside the times Tocsin handles: {SPAN}")
    return moment
