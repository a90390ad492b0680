"""Where a pending ring falls under the time zone rules in use now, when its due time was
worked out with another tzdata release (`tocsin rezone`).

A one-off's wall time is its anchor: under the new rules it rings at that wall time's new
instant. A series' pending ring was some local occurrence of its rule; the old rules are gone
(the package was upgraded), so which one is read back from the due time: the occurrence under
the new rules nearest to it (the later one on a tie: late is better than early). Offsets
change by an hour or two, never more than a day (Samoa, December 2011), while a rule whose
occurrences are closer together than the change keeps its due time: it is an occurrence under
the new rules too, and the ring after the last one rung is the same either way. A due time
that is an occurrence under the new rules is kept, so a row worked out with the new release
already never moves: the computation is its own fixed point, and needs no record of which
release each row was worked out with.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from tocsin.domain import Schedule
from tocsin.time.budget import DEFAULT_SECONDS, expansion_budget
from tocsin.time.expand import instant_of, rings

REACH = timedelta(hours=26)
"""How far from its old due time a ring can move: a day (Samoa's jump across the date line)
and slack."""

_FIRST_LOOK_BACK = timedelta(minutes=1)


def current_due(schedule: Schedule, due_at: datetime) -> datetime | None:
    """The pending ring `due_at` under the rules in use now; None when the series has no
    occurrence within `REACH` of it any more (left as it is)."""
    if schedule.rule is None and schedule.plain:
        return instant_of(schedule)
    with expansion_budget(DEFAULT_SECONDS):
        after = next(rings(schedule, due_at, strict=False), None)
        if after == due_at:
            return due_at
        before = _last_before(schedule, due_at)
    near = [ring for ring in (before, after) if ring is not None and abs(ring - due_at) <= REACH]
    if not near:
        return None
    return min(near, key=lambda ring: (abs(ring - due_at), ring < due_at))


def _last_before(schedule: Schedule, instant: datetime) -> datetime | None:
    """The last ring before `instant` within `REACH`, looking back 1 minute, then 4, 16 …: a
    dense series is walked for minutes, not for a day."""
    look_back = _FIRST_LOOK_BACK
    while True:
        found = None
        for ring in rings(schedule, instant - look_back, strict=False):
            if ring >= instant:
                break
            found = ring
        if found is not None or look_back >= REACH:
            return found
        look_back = min(look_back * 4, REACH)
