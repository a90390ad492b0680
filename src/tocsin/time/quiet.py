"""Quiet hours: a span of the owner's local day (`22:00`–`07:00`) in which bulk rings wait.

A span is read on the local wall clock of its zone, start included and end excluded, and
crosses midnight when its end comes before its start. The instant it ends is its end time on
the local day it ends, read as the time engine reads a one-off's local time: an end the clocks
skip (02:30 on the night they go forward) is read with the offset before the gap, so it lands
the gap later on the clock (03:30); an end the clocks pass twice (01:30 on the night they go
back) is its first instant. So quiet hours never end early by an hour, and never last past
the first time the wall clock shows their end. Whether an instant is inside is judged on
the same instants, so a ring's hold and the span agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from tocsin.time.zones import load_zone

# What a bulk ring held by its owner's quiet hours says (its last error), and one they held
# past its deadline; the status board counts the rings whose last error begins so.
QUIET_HELD = "held by quiet hours until"
QUIET_EXPIRED = "expired: quiet hours held it until"
# Quiet hours of several savers (the owner's own, the reminder's app's) may follow one
# another; a chain longer than this is cut (two savers give at most two spans a day).
MOST_SPANS = 8


@dataclass(frozen=True, kw_only=True, slots=True)
class QuietHours:
    """An owner's quiet hours as one saver set them: the owner himself (`source` None), whose
    apply to every ring of his, or an app, whose apply to the rings of its reminders."""

    owner: str
    source: str | None
    start: time
    end: time
    zone: str
    updated_at: datetime

    def until(self, now: datetime) -> datetime | None:
        """When the span that holds `now` ends (aware UTC), or None when `now` is outside
        every span. A span is the instants from its start to its end, each read on the local
        day it falls on; only one that began on `now`'s local day or the day before can hold
        it (a span is shorter than a day)."""
        zone = load_zone(self.zone)
        today = now.astimezone(zone).date()
        across_midnight = self.end < self.start
        for began in (today - timedelta(days=1), today):
            ended = began + timedelta(days=1) if across_midnight else began
            start = _instant(datetime.combine(began, self.start), zone)
            end = _instant(datetime.combine(ended, self.end), zone)
            if start <= now < end:
                return end
        return None


def quiet_until(spans: list[QuietHours], now: datetime) -> datetime | None:
    """When a ring at `now` may go out under `spans` (every one that applies to it), or None
    when none holds it: the end of the span that holds it, then of any span that holds that
    instant, and so on."""
    held: datetime | None = None
    at = now
    for _ in range(MOST_SPANS):
        ends = [end for span in spans if (end := span.until(at)) is not None]
        if not ends:
            break
        held = at = max(ends)
    return held


def parse_clock(text: str) -> time:
    """`HH:MM` on the 24-hour clock (`00:00` to `23:59`); ValueError for anything else."""
    hours, colon, minutes = text.partition(":")
    if not (colon and len(hours) == 2 and len(minutes) == 2):
        raise ValueError("must be HH:MM on the 24-hour clock, e.g. 22:00")
    if not (hours.isdigit() and minutes.isdigit() and hours.isascii() and minutes.isascii()):
        raise ValueError("must be HH:MM on the 24-hour clock, e.g. 22:00")
    if int(hours) > 23 or int(minutes) > 59:
        raise ValueError("must be a time of day from 00:00 to 23:59")
    return time(int(hours), int(minutes))


def clock_text(value: time) -> str:
    return f"{value.hour:02d}:{value.minute:02d}"


def _instant(local: datetime, zone: ZoneInfo) -> datetime:
    # fold=0, as the time engine reads a local time (tocsin.time.expand): the first instant of
    # an ambiguous time, the pre-gap offset for one the clocks skip.
    return local.replace(tzinfo=zone, fold=0).astimezone(UTC)
