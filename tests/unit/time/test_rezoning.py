"""`current_due`: a pending ring's due time under the rules in use now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tocsin.domain import Schedule
from tocsin.time.rezoning import current_due

NEW_YORK = "America/New_York"
# 09:00 in New York on Monday 14 June 2027 is 13:00Z (EDT).
NINE = datetime(2027, 6, 14, 13, tzinfo=UTC)
HOUR = timedelta(hours=1)


def _daily(rule: str = "FREQ=DAILY;BYHOUR=9;BYMINUTE=0") -> Schedule:
    return Schedule(zone=NEW_YORK, anchor=datetime(2027, 1, 4, 9), rule=rule)


def test_a_due_time_the_rules_still_give_is_kept() -> None:
    assert current_due(_daily(), NINE) == NINE
    assert current_due(_daily("FREQ=MINUTELY;INTERVAL=30"), NINE + HOUR / 2) == NINE + HOUR / 2


def test_a_series_ring_moves_to_the_nearest_occurrence() -> None:
    # Worked out with rules an hour off either way: today's 09:00 is the ring meant.
    assert current_due(_daily(), NINE - HOUR) == NINE
    assert current_due(_daily(), NINE + HOUR) == NINE
    # Halfway between two occurrences the later wins: late is better than early.
    twice = _daily("FREQ=DAILY;BYHOUR=9,10;BYMINUTE=0")
    assert current_due(twice, NINE + HOUR / 2) == NINE + HOUR


def test_a_one_off_rings_at_its_wall_time_under_the_new_rules() -> None:
    local = Schedule(zone=NEW_YORK, anchor=datetime(2027, 6, 14, 9))
    absolute = Schedule(zone=NEW_YORK, anchor=NINE - HOUR)
    assert current_due(local, NINE - HOUR) == NINE
    assert current_due(absolute, NINE - HOUR) == NINE - HOUR


def test_a_series_with_no_occurrence_near_its_due_time_is_left() -> None:
    ended = _daily("FREQ=DAILY;BYHOUR=9;BYMINUTE=0;UNTIL=20270301")
    assert current_due(ended, NINE) is None
