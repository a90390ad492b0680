"""parse_schedule: `at`, `zone` and `repeat` checked and turned into the Schedule that is stored."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tocsin.domain import Schedule
from tocsin.errors import InvalidInput
from tocsin.time import first_due, parse_at, parse_schedule, plan_schedule

NOW = datetime(2026, 10, 20, 16, 7, 23, 500_000, tzinfo=UTC)  # 12:07:23.5 in New York
NY = "America/New_York"


def schedule(at: str | None = None, repeat: str | None = None, zone: str = NY) -> Schedule:
    return parse_schedule(zone=zone, at=at, repeat=repeat, now=NOW)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-10-26T09:00", datetime(2026, 10, 26, 9)),
        ("2026-10-26 09:00", datetime(2026, 10, 26, 9)),
        ("2026-10-26T09:00:30", datetime(2026, 10, 26, 9, 0, 30)),
        ("2026-10-26T09:00:30.000", datetime(2026, 10, 26, 9, 0, 30)),
        ("2026-10-26T13:00Z", datetime(2026, 10, 26, 13, tzinfo=UTC)),
        ("2026-10-26t13:00:00z", datetime(2026, 10, 26, 13, tzinfo=UTC)),
        ("2026-10-26T13:00:00.000Z", datetime(2026, 10, 26, 13, tzinfo=UTC)),
        ("2026-10-26T15:00+02:00", datetime(2026, 10, 26, 13, tzinfo=UTC)),
        ("2026-10-26T08:15-0445", datetime(2026, 10, 26, 13, tzinfo=UTC)),
    ],
)
def test_at_forms(text: str, expected: datetime) -> None:
    assert parse_at(text) == expected
    assert (parse_at(text).tzinfo is None) == (expected.tzinfo is None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-10-26T09:00:00.5", "fraction of a second"),
        ("2026-10-26T09:00:00.123Z", "fraction of a second"),
        ("2026-10-26", "is not a date and time"),
        ("tomorrow at 9", "is not a date and time"),
        ("2026-02-30T09:00", "is not a real date and time"),
        ("2026-10-26T24:00", "is not a real date and time"),
        ("2026-10-26T09:00+25:00", "impossible UTC offset"),
        ("2026-10-26T09:00 America/New_York", "is not a date and time"),
    ],
)
def test_bad_at_is_invalid_at(text: str, expected: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_at(text)
    assert caught.value.field == "at"
    assert expected in caught.value.message


def test_local_one_off_keeps_wall_time() -> None:
    made = schedule(at="2026-10-26T09:00")
    assert made == Schedule(zone=NY, anchor=datetime(2026, 10, 26, 9), rule=None)
    assert first_due(made, NOW) == datetime(2026, 10, 26, 13, tzinfo=UTC)


def test_absolute_one_off_keeps_the_instant() -> None:
    made = schedule(at="2026-10-26T15:00+02:00")
    assert made.anchor == datetime(2026, 10, 26, 13, tzinfo=UTC)
    assert made.rule is None


def test_absolute_at_of_a_series_becomes_local_wall_time() -> None:
    made = schedule(at="2026-10-26T13:00Z", repeat="weekly")
    assert made.anchor == datetime(2026, 10, 26, 9)
    assert made.rule == "FREQ=WEEKLY"


def test_past_one_off_is_refused() -> None:
    with pytest.raises(InvalidInput) as caught:
        schedule(at="2026-10-20T12:07")
    assert caught.value.field == "at"
    assert "is in the past" in caught.value.message


def test_one_off_now_exactly_is_accepted() -> None:
    now = NOW.replace(microsecond=0)
    made = parse_schedule(zone="UTC", at="2026-10-20T16:07:23", repeat=None, now=now)
    assert made.anchor == datetime(2026, 10, 20, 16, 7, 23)


def test_neither_at_nor_repeat() -> None:
    with pytest.raises(InvalidInput) as caught:
        schedule()
    assert caught.value.field == "at"
    assert caught.value.message == "give at, repeat or both"


def test_bad_zone_is_checked_first() -> None:
    with pytest.raises(InvalidInput) as caught:
        schedule(at="2020-01-01T00:00", zone="Europe/Pariss")
    assert caught.value.field == "zone"


def test_series_without_at_anchors_today_at_the_phrase_time() -> None:
    made = schedule(repeat="every day at 6pm")
    assert made.anchor == datetime(2026, 10, 20, 18, 0)
    assert first_due(made, NOW) == datetime(2026, 10, 20, 22, tzinfo=UTC)


def test_series_without_at_whose_time_has_passed_today_rings_tomorrow() -> None:
    made = schedule(repeat="daily 9:00")
    assert made.anchor == datetime(2026, 10, 20, 9, 0)
    assert first_due(made, NOW) == datetime(2026, 10, 21, 13, tzinfo=UTC)


def test_series_without_time_anchors_at_the_current_local_minute() -> None:
    made = schedule(repeat="every 30 minutes")
    assert made.anchor == datetime(2026, 10, 20, 12, 7)
    assert first_due(made, NOW) == datetime(2026, 10, 20, 16, 37, tzinfo=UTC)


def test_rrule_without_at_uses_its_own_time() -> None:
    made = schedule(repeat="RRULE:FREQ=DAILY;BYHOUR=7;BYMINUTE=45;BYSECOND=10")
    assert made.anchor == datetime(2026, 10, 20, 7, 45, 10)


def test_anchor_date_is_today_in_the_zone_not_in_utc() -> None:
    late = datetime(2026, 10, 21, 2, 0, tzinfo=UTC)  # still Oct 20 in New York
    made = parse_schedule(zone=NY, at=None, repeat="daily 23:00", now=late)
    assert made.anchor == datetime(2026, 10, 20, 23, 0)


def test_series_may_start_in_the_past() -> None:
    made = schedule(at="2020-01-06T09:00", repeat="every Monday 9:00")
    assert first_due(made, NOW) == datetime(2026, 10, 26, 13, tzinfo=UTC)


@pytest.mark.parametrize(
    ("at", "repeat"),
    [
        ("2026-01-01T09:00", "FREQ=DAILY;COUNT=5"),
        ("2026-01-01T09:00", "FREQ=DAILY;UNTIL=20260301"),
        ("2026-01-01T09:00", "FREQ=DAILY;UNTIL=20260301T090000Z"),
        (None, "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30"),
        (None, "FREQ=MINUTELY;BYMONTH=4;BYMONTHDAY=31"),
        ("2026-10-26T09:00", "FREQ=DAILY;UNTIL=20261025"),
        ("2026-10-26T09:00", "FREQ=DAILY;INTERVAL=7;BYDAY=TU"),  # the 26th is a Monday
        ("2026-10-26T08:00", "FREQ=HOURLY;INTERVAL=2;BYHOUR=1"),
        ("2026-10-26T08:00", "FREQ=MINUTELY;BYSECOND=5;BYSETPOS=2"),
        ("2027-01-01T09:00", "FREQ=YEARLY;INTERVAL=4;BYMONTH=2;BYMONTHDAY=29"),
        # dateutil refuses this one only when first iterated (a ValueError, not InvalidInput)
        ("2026-10-26T08:00", "FREQ=MINUTELY;INTERVAL=1440;BYHOUR=3"),
    ],
)
def test_series_that_never_rings_again_is_refused(at: str | None, repeat: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        schedule(at=at, repeat=repeat)
    assert caught.value.field == "repeat"
    assert "never rings" in caught.value.message


@pytest.mark.parametrize(
    "repeat", ["FREQ=SECONDLY", "FREQ=MINUTELY;BYSECOND=0,30", "every 10 seconds"]
)
def test_more_than_once_a_minute_is_refused(repeat: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        schedule(repeat=repeat)
    assert caught.value.field == "repeat"


def test_stored_rule_is_the_normalised_phrase() -> None:
    made = schedule(at="2026-10-26T09:00", repeat="Every Monday 9:00")
    assert made.rule == "FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0"


def test_now_must_be_aware() -> None:
    with pytest.raises(ValueError, match="aware"):
        parse_schedule(zone=NY, at="2030-01-01T00:00", repeat=None, now=datetime(2026, 1, 1))


@pytest.mark.parametrize(
    ("at", "repeat"),
    [
        ("2026-10-21T09:00", None),
        ("2026-10-26T13:00Z", None),
        (None, "every Monday 09:00"),
        (None, "every 30 minutes"),
        ("2026-11-01T01:30", "daily"),
        ("2020-01-06T09:00", "every Monday 9:00"),
        ("2026-10-26T09:00", "FREQ=DAILY;COUNT=3"),
    ],
)
def test_plan_schedule_is_parse_schedule_and_first_due(at: str | None, repeat: str | None) -> None:
    for _ in range(2):  # the second time from the memoised rule and probe
        planned, due = plan_schedule(zone=NY, at=at, repeat=repeat, now=NOW)
        assert planned == schedule(at=at, repeat=repeat)
        assert due == first_due(planned, NOW)


def test_a_memoised_probe_still_tells_starts_apart() -> None:
    """The probe's memo is keyed by the start's place in the 400-year cycle: the same rule
    from a Monday and from a Tuesday are different questions."""
    rule = "FREQ=DAILY;INTERVAL=7;BYDAY=TU"
    tuesday = schedule(at="2026-10-27T09:00", repeat=rule)
    with pytest.raises(InvalidInput):
        schedule(at="2026-10-26T09:00", repeat=rule)  # a Monday: never a Tuesday

    assert first_due(tuesday, NOW) == datetime(2026, 10, 27, 13, tzinfo=UTC)
    assert first_due(schedule(at="2426-10-27T09:00", repeat=rule), NOW) is not None
