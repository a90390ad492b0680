"""Early alerts and nags: extra rings before each occurrence of a reminder (`"alerts": ["1d",
"15m"]`), and after it until a ring of it is marked done (`"until_done": "5m"`).

A lead is a duration. Its whole days count on the reminder's local clock: "1d" before Monday
09:00 is Sunday 09:00, 23 or 25 hours earlier across a change of the clocks, as a person
means "the day before"; what is left counts in elapsed time: "15m" is 15 minutes before the
instant, "1d2h" two hours before the day before's wall time. A day before that the clocks
skip is read as every wall time in a gap is (`expand._utc_of`: the gap later on the clock),
one they pass twice is its first instant.

An alert rings like any ring: its own identity (`<reminder>.<epoch second>` of its instant),
the reminder's text, its channels. Alerts and occurrences are one timeline (`merged`): the
claim of each ring moves the reminder on to the next instant of it, whichever it is, and an
alert at the instant of another ring of the same reminder is that ring (one identity an
instant). Alerts that have passed when a reminder is saved or edited do not ring.

Nags come after their occurrence, every `nag` seconds, at most `nags` of them, and never at or
after the next occurrence (a daily reminder nagged every 5 minutes stops nagging when
tomorrow's ring comes). Marking a ring done takes the rest of its occurrence's nags back
(`nags_of`, `after_nags`).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from tocsin.errors import InvalidInput
from tocsin.time.durations import describe_duration, format_duration, parse_duration

MAX_ALERTS = 5
NAG_MIN = 60
NAG_MAX = 86400
NAGS_MAX = 100
ALERT_MIN = 60  # a minute: rings are claimed by the second, but an earlier alert is noise
ALERT_MAX = 28 * 86400  # four weeks before
DAY = 86400
# How much earlier than its lead an alert may fall: a local day is 23 to 25 hours, and a zone
# that repeated a calendar day (Pacific/Apia in 1892) made one 48.
_DAY_SLACK = timedelta(days=2)


def parse_alerts(texts: Sequence[str]) -> tuple[int, ...]:
    """The leads of `texts` in seconds, earliest alert first; InvalidInput naming
    `alerts.<index>` (or `alerts`) when one is unreadable, out of range or repeated, or
    there are too many."""
    if len(texts) > MAX_ALERTS:
        raise InvalidInput("alerts", f"at most {MAX_ALERTS} alerts, got {len(texts)}")
    leads: list[int] = []
    for index, text in enumerate(texts):
        field = f"alerts.{index}"
        lead = parse_duration(text, field=field, minimum=ALERT_MIN, maximum=ALERT_MAX)
        if lead in leads:
            raise InvalidInput(field, f"{text!r} is {describe_duration(lead)} again")
        leads.append(lead)
    return tuple(sorted(leads, reverse=True))


def format_alerts(leads: Sequence[int]) -> list[str]:
    """The leads as `parse_alerts` reads them back (`1d`, `15m`), earliest alert first."""
    return [format_duration(lead) for lead in leads]


def stored_alerts(leads: Sequence[int]) -> str | None:
    """The leads as stored: `1d,15m`, or NULL for none."""
    return ",".join(format_alerts(leads)) or None


@lru_cache(maxsize=1024)  # the loader reads it a row; reminders share a few lists
def alerts_from_text(stored: str | None) -> tuple[int, ...]:
    """The leads of a stored list (written by `stored_alerts`)."""
    if not stored:
        return ()
    return parse_alerts(stored.split(","))


def alert_instant(occurrence: datetime, lead: int, zone: ZoneInfo) -> datetime:
    """When the alert `lead` seconds before `occurrence` (aware) rings, aware UTC: never
    after the occurrence."""
    days, rest = divmod(lead, DAY)
    instant = occurrence.astimezone(UTC)
    if days:
        wall = occurrence.astimezone(zone).replace(tzinfo=None) - timedelta(days=days)
        instant = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    return min(instant - timedelta(seconds=rest), occurrence.astimezone(UTC))


def nags_of(
    occurrence: datetime, nag: int, nags: int, following: datetime | None
) -> list[datetime]:
    """The nags after `occurrence`: every `nag` seconds, `nags` at most, before `following`
    (the next occurrence, if any)."""
    found = []
    for number in range(1, nags + 1):
        ring = occurrence + timedelta(seconds=nag * number)
        if following is not None and ring >= following:
            break
        found.append(ring)
    return found


def merged(
    occurrences: Iterator[datetime],
    leads: Sequence[int],
    zone: ZoneInfo,
    lower: datetime,
    *,
    strict: bool,
    nag: int = 0,
    nags: int = 0,
    before: datetime | None = None,
) -> Iterator[datetime]:
    """Every ring after `lower` (`strict`) or at/after it, in order, of `occurrences` (in
    order, none before `lower`), the alerts `leads` before each and the nags after each.
    `before`: the occurrence before the first of `occurrences`, whose nags may still be to
    come. An instant two rings share is yielded once."""
    horizon = timedelta(seconds=max(leads, default=0)) + _DAY_SLACK
    waiting: list[datetime] = []
    previous = before
    upcoming = next(occurrences, None)
    last: datetime | None = None

    def hold(following: datetime | None) -> None:
        """Hold the rings `following` adds when it is read: the nags of the occurrence before
        it (which end before it), its alerts and itself; None: the last one's nags."""
        found = nags_of(previous, nag, nags, following) if previous is not None else []
        if following is not None:
            found += [*(alert_instant(following, lead, zone) for lead in leads), following]
        for ring in found:
            if ring > lower or (ring == lower and not strict):
                heapq.heappush(waiting, ring)

    while True:
        # An occurrence's alerts are at most `horizon` before it: once the next one's earliest
        # possible alert is after the soonest ring held, that ring is the next of all. The
        # nags of an occurrence go in with the next one, or once there is none: nothing after
        # an occurrence is held before them.
        while upcoming is not None and (not waiting or upcoming - horizon <= waiting[0]):
            hold(upcoming)
            previous, upcoming = upcoming, next(occurrences, None)
        if upcoming is None and previous is not None:
            hold(None)
            previous = None
        if not waiting:
            return
        ring = heapq.heappop(waiting)
        if ring != last:
            last = ring
            yield ring
