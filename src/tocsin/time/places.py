"""When a crossing of a place rings its reminders: the local window and the local day.

A window is a span of the local day, `after` included and `before` excluded, read on the
wall clock of the reminder's zone the way quiet hours are (`tocsin.time.quiet`): each bound
is the instant it names on the local day it falls on, an instant the clocks skip lands the
gap later, one they pass twice is its first. It crosses midnight when `before` comes first;
`after` alone runs to midnight, `before` alone from it. The day a ring counts against for
"once a day" is the local day its window began on, so a window of 22:00-02:00 rings once a
night, not once before midnight and again after it; with no window it is the local date of
the crossing.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from tocsin.time.zones import load_zone

MIDNIGHT = time(0, 0)


def window_day(
    instant: datetime, zone: str, *, after: time | None, before: time | None
) -> date | None:
    """The local day (in `zone`) whose window holds `instant`, or None when it lies outside
    every window; with no window, `instant`'s local date."""
    tz = load_zone(zone)
    today = instant.astimezone(tz).date()
    if after is None and before is None:
        return today
    start, end = after or MIDNIGHT, before or MIDNIGHT
    across_midnight = end <= start
    for began in (today, today - timedelta(days=1)):
        ended = began + timedelta(days=1) if across_midnight else began
        if _instant(began, start, tz) <= instant < _instant(ended, end, tz):
            return began
    return None


def _instant(day: date, clock: time, zone: ZoneInfo) -> datetime:
    # fold=0: the first instant of a time passed twice, the pre-gap offset for one skipped
    return datetime.combine(day, clock).replace(tzinfo=zone, fold=0).astimezone(UTC)
