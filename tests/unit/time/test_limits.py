"""Inputs at the edges: the ends of the calendar, ordinals past a month, digits of other scripts."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tocsin.domain import Schedule
from tocsin.errors import InvalidInput
from tocsin.time import LATEST, next_after, occurrences, parse_at, parse_duration, plan_schedule
from tocsin.time.rules import parse_rrule

NOW = datetime(2026, 10, 21, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        "9999-12-31T23:59",  # New York: 10000-01-01 in UTC
        "9999-12-31T23:59-05:00",
        "6000-01-01T00:00-05:00",  # just past LATEST as an instant
        "9999-12-31T23:59Z",
        "0001-01-01T00:00+05:00",  # before year 1 in UTC
        "0001-01-01T00:00",  # Tokyo: before year 1 in UTC
    ],
)
def test_an_at_outside_the_calendar_is_an_at_error(text: str) -> None:
    for zone, repeat in (("America/New_York", None), ("Asia/Tokyo", "daily")):
        with pytest.raises(InvalidInput) as caught:
            plan_schedule(zone=zone, at=text, repeat=repeat, now=NOW)
        assert caught.value.field == "at"
        assert "outside the times Tocsin handles" in caught.value.message


def test_the_last_moment_is_accepted() -> None:
    assert parse_at("6000-01-01T00:00Z") == LATEST
    _, due = plan_schedule(zone="UTC", at="6000-01-01T00:00", repeat=None, now=NOW)
    assert due == LATEST


@pytest.mark.parametrize(
    "until", ["99991231T235959Z", "99991231T235959", "99991231", "60000101T000001Z"]
)
def test_an_until_past_the_calendar_is_a_repeat_error(until: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_rrule(f"FREQ=DAILY;UNTIL={until}")

    assert caught.value.field == "repeat"
    assert "leave UNTIL out" in caught.value.message


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "America/New_York", "Pacific/Apia"])
def test_a_series_ends_at_the_end_of_the_calendar(zone: str) -> None:
    # Until an UNTIL at LATEST, every ring and every wall time near it must still convert.
    schedule, _ = plan_schedule(
        zone=zone, at="5999-12-31T12:00", repeat="FREQ=MINUTELY;UNTIL=60000101T000000Z", now=NOW
    )
    rings = occurrences(schedule, datetime(5999, 12, 31, 23, 50, tzinfo=UTC), 100)

    assert rings
    assert rings[-1].at <= LATEST
    assert next_after(schedule, rings[-1].at) is None
    assert (
        next_after(Schedule(zone=zone, anchor=schedule.anchor, rule="FREQ=DAILY"), LATEST) is None
    )


@pytest.mark.parametrize(
    "rule", ["FREQ=YEARLY;BYMONTH=2;BYDAY=53MO", "FREQ=YEARLY;BYMONTH=1,2;BYDAY=-6FR"]
)
def test_yearly_ordinals_with_bymonth_count_within_the_month(rule: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_rrule(rule)

    assert caught.value.field == "repeat"
    assert "1 to 5 or -5 to -1" in caught.value.message


def test_yearly_ordinals_without_bymonth_count_within_the_year() -> None:
    assert parse_rrule("FREQ=YEARLY;BYDAY=53MO").byday == ((53, 0),)
    assert parse_rrule("FREQ=YEARLY;BYMONTH=2;BYDAY=5MO").byday == ((5, 0),)


ARABIC_ONE = "\u0661"  # ١
DEVANAGARI_TWO = "\u0968"  # २


@pytest.mark.parametrize(
    ("repeat", "at"),
    [
        (f"every {ARABIC_ONE} minutes", None),
        (f"daily at {DEVANAGARI_TWO}:30", None),
        (f"monthly on the {ARABIC_ONE}st", None),
        (f"FREQ=DAILY;INTERVAL={ARABIC_ONE}", None),
        (f"FREQ=DAILY;BYHOUR={ARABIC_ONE}", None),
        (f"FREQ=MONTHLY;BYDAY={ARABIC_ONE}MO", None),
        (f"FREQ=DAILY;UNTIL=2027010{ARABIC_ONE}", None),
        (None, f"2027-01-0{ARABIC_ONE}T09:00"),
        (None, f"2027-01-01T09:00+0{ARABIC_ONE}:00"),
    ],
)
def test_only_ascii_digits_are_read(repeat: str | None, at: str | None) -> None:
    with pytest.raises(InvalidInput) as caught:
        plan_schedule(zone="UTC", at=at, repeat=repeat, now=NOW)

    assert caught.value.field == ("repeat" if repeat else "at")


@pytest.mark.parametrize("text", [f"{ARABIC_ONE}0m", f"PT{ARABIC_ONE}0M", f"1h{ARABIC_ONE}m"])
def test_durations_read_ascii_digits_only(text: str) -> None:
    with pytest.raises(InvalidInput, match="is not a duration"):
        parse_duration(text, field="snooze", minimum=1, maximum=86400)
