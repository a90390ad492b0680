"""One-offs as people say them: each phrase of the issue at a fixed now, and the same phrases
at daylight saving time changes (Paris, New York, Lord Howe's half hour), in zones a half or
three quarters of an hour off (Kolkata, Kathmandu), at month ends and on a leap day."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tocsin.errors import InvalidInput
from tocsin.time import normalise_repeat, plan_schedule, read_when

# A Wednesday, 14:00 in Paris (summer time, +02:00).
WEDNESDAY = datetime(2026, 10, 21, 12, 0, 0, 250_000, tzinfo=UTC)
PARIS = "Europe/Paris"
NEW_YORK = "America/New_York"
LORD_HOWE = "Australia/Lord_Howe"


def due(text: str, now: datetime, zone: str = PARIS) -> tuple[datetime, datetime]:
    """The anchor kept for a one-off `at` (a naive wall time, or an instant for a delay) and
    its ring."""
    schedule, ring = plan_schedule(zone=zone, at=text, repeat=None, now=now)
    return schedule.anchor, ring


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "wall", "ring"),
    [
        ("18:00", datetime(2026, 10, 21, 18), utc(2026, 10, 21, 16)),
        ("at 6pm", datetime(2026, 10, 21, 18), utc(2026, 10, 21, 16)),
        ("6:30 pm", datetime(2026, 10, 21, 18, 30), utc(2026, 10, 21, 16, 30)),
        ("noon", datetime(2026, 10, 22, 12), utc(2026, 10, 22, 10)),  # passed today
        ("tonight at 9", datetime(2026, 10, 21, 21), utc(2026, 10, 21, 19)),
        ("today 18:00", datetime(2026, 10, 21, 18), utc(2026, 10, 21, 16)),
        ("tomorrow 9am", datetime(2026, 10, 22, 9), utc(2026, 10, 22, 7)),
        ("next Friday at 17:00", datetime(2026, 10, 23, 17), utc(2026, 10, 23, 15)),
        ("on Friday", datetime(2026, 10, 23, 9), utc(2026, 10, 23, 7)),
        ("Dec 24 at 18:00", datetime(2026, 12, 24, 18), utc(2026, 12, 24, 17)),  # winter: +01
        ("24 December 6pm", datetime(2026, 12, 24, 18), utc(2026, 12, 24, 17)),
        ("2026-12-24 18:00", datetime(2026, 12, 24, 18), utc(2026, 12, 24, 17)),
        # Neighbours: other orders and spellings of the same.
        ("9am tomorrow", datetime(2026, 10, 22, 9), utc(2026, 10, 22, 7)),
        ("Tomorrow at 9", datetime(2026, 10, 22, 9), utc(2026, 10, 22, 7)),
        ("at 17:00 next Friday", datetime(2026, 10, 23, 17), utc(2026, 10, 23, 15)),
        ("friday 5pm", datetime(2026, 10, 23, 17), utc(2026, 10, 23, 15)),
        ("the 24th of December at 6 p.m.", datetime(2026, 12, 24, 18), utc(2026, 12, 24, 17)),
        ("December 24th, 18:00", datetime(2026, 12, 24, 18), utc(2026, 12, 24, 17)),
        ("Dec 24 2027 6pm", datetime(2027, 12, 24, 18), utc(2027, 12, 24, 17)),
        ("2026-12-24 at 6pm", datetime(2026, 12, 24, 18), utc(2026, 12, 24, 17)),
        ("on the 30th", datetime(2026, 10, 30, 9), utc(2026, 10, 30, 8)),
        ("tonight at 11:30", datetime(2026, 10, 21, 23, 30), utc(2026, 10, 21, 21, 30)),
        ("tonight at 1am", datetime(2026, 10, 22, 1), utc(2026, 10, 21, 23)),
        ("tonight at 12", datetime(2026, 10, 22, 0), utc(2026, 10, 21, 22)),
        ("midnight", datetime(2026, 10, 22, 0), utc(2026, 10, 21, 22)),
        ("18:00:30", datetime(2026, 10, 21, 18, 0, 30), utc(2026, 10, 21, 16, 0, 30)),
        ("at 6 o'clock", datetime(2026, 10, 22, 6), utc(2026, 10, 22, 4)),
        ("tomorrow", datetime(2026, 10, 22, 9), utc(2026, 10, 22, 7)),
        ("in 2 days", datetime(2026, 10, 23, 14), utc(2026, 10, 23, 12)),
        ("in 1 week", datetime(2026, 10, 28, 14), utc(2026, 10, 28, 13)),  # after fall back
    ],
)
def test_listed_phrases_name_a_wall_time(text: str, wall: datetime, ring: datetime) -> None:
    assert due(text, WEDNESDAY) == (wall, ring)


@pytest.mark.parametrize(
    ("text", "ring"),
    [
        ("in 10 minutes", utc(2026, 10, 21, 12, 10)),
        ("in 2 hours", utc(2026, 10, 21, 14)),
        ("in 1h30", utc(2026, 10, 21, 13, 30)),
        ("in 30 seconds", utc(2026, 10, 21, 12, 0, 30)),
        ("in 5 seconds", utc(2026, 10, 21, 12, 0, 5)),
        ("+10m", utc(2026, 10, 21, 12, 10)),
        ("+1s", utc(2026, 10, 21, 12, 0, 1)),
        ("in an hour", utc(2026, 10, 21, 13)),
        ("in half an hour", utc(2026, 10, 21, 12, 30)),
        ("in 1 hour and 15 minutes", utc(2026, 10, 21, 13, 15)),
        ("in 1 day 2 hours", utc(2026, 10, 22, 14)),
    ],
)
def test_delays_are_instants_from_now(text: str, ring: datetime) -> None:
    """Whole seconds from now (its fraction dropped), kept as the instant."""
    assert due(text, WEDNESDAY) == (ring, ring)


# Paris springs forward on 29 March 2026 (02:00 → 03:00) and falls back on 25 October
# (03:00 → 02:00); New York on 8 March and 1 November; Lord Howe moves half an hour.
@pytest.mark.parametrize(
    ("zone", "now", "text", "ring"),
    [
        # In the gap: rings the gap later, 03:30 summer time.
        (PARIS, utc(2026, 3, 28, 23, 30), "02:30", utc(2026, 3, 29, 1, 30)),
        (PARIS, utc(2026, 3, 28, 23, 30), "today 02:30", utc(2026, 3, 29, 1, 30)),
        (PARIS, utc(2026, 3, 28, 18, 30), "tomorrow 2:30am", utc(2026, 3, 29, 1, 30)),
        (PARIS, utc(2026, 3, 28, 18, 30), "tomorrow 9am", utc(2026, 3, 29, 7)),  # +02:00
        # Elapsed time across the gap: two hours are two hours (03:30 on the clock).
        (PARIS, utc(2026, 3, 28, 23, 30), "in 2 hours", utc(2026, 3, 29, 1, 30)),
        # Twice: the first 02:30 (summer time).
        (PARIS, utc(2026, 10, 24, 20), "tomorrow 2:30am", utc(2026, 10, 25, 0, 30)),
        (PARIS, utc(2026, 10, 24, 20), "in 4 hours", utc(2026, 10, 25, 0)),
        # Between the two 02:30s the first has passed: the next day's (DESIGN: at the first).
        (PARIS, utc(2026, 10, 25, 1, 10), "02:30", utc(2026, 10, 26, 1, 30)),
        (PARIS, utc(2026, 10, 25, 1, 10), "04:00", utc(2026, 10, 25, 3)),
        (NEW_YORK, utc(2026, 3, 8, 4), "2:30am", utc(2026, 3, 8, 7, 30)),
        (NEW_YORK, utc(2026, 3, 8, 4), "tomorrow 9am", utc(2026, 3, 8, 13)),
        (NEW_YORK, utc(2026, 11, 1, 2), "1:30am", utc(2026, 11, 1, 5, 30)),
        (NEW_YORK, utc(2026, 11, 1, 2), "tomorrow 9am", utc(2026, 11, 1, 14)),
        (NEW_YORK, utc(2026, 10, 31, 16), "Sunday at 1:30", utc(2026, 11, 1, 5, 30)),
        # Lord Howe: 02:00 → 02:30 on 4 October 2026, 02:00 → 01:30 on 5 April.
        (
            "Australia/Lord_Howe",
            utc(2026, 10, 3, 11, 30),
            "tomorrow 2:15am",
            utc(2026, 10, 3, 15, 45),
        ),
        (LORD_HOWE, utc(2026, 10, 3, 11, 30), "in 5 hours", utc(2026, 10, 3, 16, 30)),
        (LORD_HOWE, utc(2026, 4, 4, 11), "tomorrow 1:45am", utc(2026, 4, 4, 14, 45)),
        # Half and three quarters of an hour from UTC.
        ("Asia/Kolkata", WEDNESDAY, "18:00", utc(2026, 10, 21, 12, 30)),
        ("Asia/Kolkata", WEDNESDAY, "17:00", utc(2026, 10, 22, 11, 30)),  # passed: tomorrow
        ("Asia/Kolkata", WEDNESDAY, "in 45 minutes", utc(2026, 10, 21, 12, 45)),
        ("Asia/Kathmandu", utc(2028, 2, 28, 18), "tomorrow 9am", utc(2028, 2, 29, 3, 15)),
        ("Asia/Kathmandu", utc(2028, 2, 28, 18), "00:10", utc(2028, 2, 28, 18, 25)),
        ("Asia/Kathmandu", utc(2028, 2, 28, 18), "in 20 minutes", utc(2028, 2, 28, 18, 20)),
    ],
)
def test_dst_and_odd_offsets(zone: str, now: datetime, text: str, ring: datetime) -> None:
    assert due(text, now, zone)[1] == ring


@pytest.mark.parametrize(
    ("now", "text", "wall"),
    [
        (utc(2026, 1, 31, 9), "the 31st", datetime(2026, 3, 31, 9)),  # 10:00: passed; no Feb 31
        (utc(2026, 1, 31, 9), "on the 30th", datetime(2026, 3, 30, 9)),
        (utc(2026, 1, 31, 9), "tomorrow 9am", datetime(2026, 2, 1, 9)),
        (utc(2026, 1, 31, 9), "Feb 29", datetime(2028, 2, 29, 9)),
        (utc(2028, 2, 28, 20), "tomorrow 9am", datetime(2028, 2, 29, 9)),
        (utc(2028, 2, 28, 20), "Feb 29 at 18:00", datetime(2028, 2, 29, 18)),
        (utc(2028, 2, 28, 20), "on the 29th", datetime(2028, 2, 29, 9)),
        (utc(2028, 2, 29, 20), "Feb 29 at 18:00", datetime(2032, 2, 29, 18)),  # passed
        (utc(2028, 2, 29, 20), "tomorrow 9am", datetime(2028, 3, 1, 9)),
        (utc(2026, 12, 31, 22, 59, 30), "Dec 31 at 23:59", datetime(2027, 12, 31, 23, 59)),
        (utc(2026, 12, 31, 20), "Jan 1", datetime(2027, 1, 1, 9)),
        (utc(2026, 12, 31, 20), "23:30", datetime(2026, 12, 31, 23, 30)),
        (utc(2026, 12, 31, 20), "on Friday", datetime(2027, 1, 1, 9)),
        (utc(2026, 4, 30, 20), "in 1 week", datetime(2026, 5, 7, 22)),
    ],
)
def test_month_ends_and_leap_days(now: datetime, text: str, wall: datetime) -> None:
    assert due(text, now)[0] == wall


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "today 08:00",
            "'today 08:00' (08:00) has passed: it is 2026-10-21 14:00 in "
            "Europe/Paris; say 'tomorrow 08:00'",
        ),
        ("tonight at 1pm", "has passed"),
        ("2025-01-01 9am", "is in the past: it is 2026-10-21 14:00 in Europe/Paris"),
        ("Dec 24 2025", "is in the past"),
        ("Feb 30", "there is no 30 February"),
        ("Feb 29 2027", "there is no 29 February 2027"),
        ("today", "say at what time, e.g. 'today 18:00'"),
        ("at 25:00", "25:00 is not a time of day"),
        ("13pm", "with am/pm the hour is 1 to 12"),
        ("in 0 minutes", "it must be from 1 second to 366 days"),
        ("in 400 days", "it must be from 1 second to 366 days"),
        ("Dec 24 6001", "outside the times Tocsin handles"),
    ],
)
def test_refusals_say_why(text: str, expected: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        due(text, WEDNESDAY)
    assert caught.value.field == "at"
    assert expected in caught.value.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("blursday", "could not read 'blursday' as a time; e.g. 'tomorrow 9am', 'in 10 minutes'"),
        ("tomorrow at nine-ish", "understood 'tomorrow at', could not read 'nine-ish'"),
        ("6", "a bare number: say 'at 9' (09:00), '9pm' or '21:00'"),
        ("mondays at 9", "a repeat? say 'every Monday at 9:00'"),
        ("next month", "understood 'next', could not read 'month' (expected a day such as Friday)"),
        ("tomorrow today", "the day is given twice"),
        ("18:00 19:00", "the time is given twice"),
        ("in a while", "could not read 'a while' as a delay; give e.g. 'in 30 seconds'"),
        ("at", "understood 'at', but it is incomplete"),
        ("2026-10-26T09:00 America/New_York", "is not a date and time; give e.g."),
    ],
)
def test_unreadable_phrases_say_what_was_not_understood(text: str, expected: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        due(text, WEDNESDAY)
    assert caught.value.field == "at"
    assert expected in caught.value.message


def test_a_phrase_at_starts_a_series() -> None:
    schedule, ring = plan_schedule(zone=PARIS, at="tomorrow 9am", repeat="daily", now=WEDNESDAY)
    assert schedule.anchor == datetime(2026, 10, 22, 9)
    assert ring == utc(2026, 10, 22, 7)
    schedule, ring = plan_schedule(zone=PARIS, at="in 10 minutes", repeat="hourly", now=WEDNESDAY)
    assert schedule.anchor == datetime(2026, 10, 21, 14, 10)  # the instant as a wall time
    assert ring == utc(2026, 10, 21, 12, 10)


@pytest.mark.parametrize(
    ("text", "at", "repeat"),
    [
        ("tomorrow 9am", "2026-10-22T09:00:00", None),
        ("on Friday", "2026-10-23T09:00:00", None),
        ("Friday at 17:00", "2026-10-23T17:00:00", None),
        ("in 5 seconds", "2026-10-21T12:00:05Z", None),
        ("2026-12-24T18:00Z", "2026-12-24T18:00:00Z", None),
        ("2026-12-24 18:00", "2026-12-24T18:00:00", None),
        ("every Monday at 9am", None, "every Monday at 9am"),
        ("weekdays at 8:30pm", None, "weekdays at 8:30pm"),
        ("Mondays at 9", None, "Mondays at 9"),
        ("9am daily", None, "9am daily"),
        ("FREQ=DAILY;BYHOUR=9", None, "FREQ=DAILY;BYHOUR=9"),
    ],
)
def test_when_is_a_one_off_or_a_repeat(text: str, at: str | None, repeat: str | None) -> None:
    assert read_when(text, zone=PARIS, now=WEDNESDAY) == (at, repeat)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("every blursday", "understood 'every', could not read 'blursday'"),
        ("tomorrow at nine-ish", "understood 'tomorrow at', could not read 'nine-ish'"),
        (
            "blursday",
            "could not read 'blursday' as a time or a repeat; give a time (e.g. 'tomorrow "
            "9am', 'in 10 minutes', 'Friday at 17:00' or '2026-12-24 18:00') or a repeat "
            "('every Monday at 9:00')",
        ),
        ("today 08:00", "has passed"),
        ("   ", "when is empty"),
        ("every 30 seconds", "the shortest repeat is once a minute"),
    ],
)
def test_when_refusals_name_when_and_the_reading_that_got_further(text: str, expected: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        read_when(text, zone=PARIS, now=WEDNESDAY)
    assert caught.value.field == "when"
    assert expected in caught.value.message


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("every Monday at 9am", "FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0"),
        ("weekdays at 8:30pm", "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=20;BYMINUTE=30"),
        ("every day at 12am", "FREQ=DAILY;BYHOUR=0;BYMINUTE=0"),
        ("every Friday at 5:45 p.m.", "FREQ=WEEKLY;BYDAY=FR;BYHOUR=17;BYMINUTE=45"),
    ],
)
def test_twelve_hour_times_in_repeats(text: str, rule: str) -> None:
    assert normalise_repeat(text) == rule
