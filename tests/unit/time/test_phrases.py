"""English repeat phrases: each listed phrase and its neighbours become one canonical RRULE."""

from __future__ import annotations

import pytest

from tocsin.errors import InvalidInput
from tocsin.time import normalise_repeat
from tocsin.time.phrases import ClockTime, parse_phrase

# The phrases the issue lists, with the RRULE each is stored as.
LISTED = [
    ("daily 18:00", "FREQ=DAILY;BYHOUR=18;BYMINUTE=0"),
    ("every day at 6pm", "FREQ=DAILY;BYHOUR=18;BYMINUTE=0"),
    ("every Monday 09:00", "FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0"),
    ("weekdays at 8:30", "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8;BYMINUTE=30"),
    ("weekends 10:00", "FREQ=WEEKLY;BYDAY=SA,SU;BYHOUR=10;BYMINUTE=0"),
    (
        "every 2 weeks on Tue and Thu at 7:15",
        "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,TH;BYHOUR=7;BYMINUTE=15",
    ),
    ("monthly on the 1st at 9:00", "FREQ=MONTHLY;BYMONTHDAY=1;BYHOUR=9;BYMINUTE=0"),
    ("monthly on the last Friday at 17:00", "FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0"),
    ("every year on Mar 3 at 9:00", "FREQ=YEARLY;BYMONTH=3;BYMONTHDAY=3;BYHOUR=9;BYMINUTE=0"),
    ("every 30 minutes", "FREQ=MINUTELY;INTERVAL=30"),
    ("hourly", "FREQ=HOURLY"),
]

NEIGHBOURS = [
    ("DAILY 18:00", "FREQ=DAILY;BYHOUR=18;BYMINUTE=0"),
    ("Every Day At 6 PM", "FREQ=DAILY;BYHOUR=18;BYMINUTE=0"),
    ("every day at 6:30 p.m.", "FREQ=DAILY;BYHOUR=18;BYMINUTE=30"),
    ("everyday at 7am", "FREQ=DAILY;BYHOUR=7;BYMINUTE=0"),
    ("daily at noon", "FREQ=DAILY;BYHOUR=12;BYMINUTE=0"),
    ("daily at midnight", "FREQ=DAILY;BYHOUR=0;BYMINUTE=0"),
    ("daily at 12am", "FREQ=DAILY;BYHOUR=0;BYMINUTE=0"),
    ("daily at 12pm", "FREQ=DAILY;BYHOUR=12;BYMINUTE=0"),
    ("daily at 9", "FREQ=DAILY;BYHOUR=9;BYMINUTE=0"),
    ("daily at 9:00 and 17:00", "FREQ=DAILY;BYHOUR=9,17;BYMINUTE=0"),
    ("daily at 9:00, 9:30", "FREQ=DAILY;BYHOUR=9;BYMINUTE=0,30"),
    ("daily at 9:00:30", "FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=30"),
    ("9am daily", "FREQ=DAILY;BYHOUR=9;BYMINUTE=0"),
    ("at noon every day", "FREQ=DAILY;BYHOUR=12;BYMINUTE=0"),
    ("daily", "FREQ=DAILY"),
    ("every 2 days at 8:00", "FREQ=DAILY;INTERVAL=2;BYHOUR=8;BYMINUTE=0"),
    ("every other day", "FREQ=DAILY;INTERVAL=2"),
    ("every Monday", "FREQ=WEEKLY;BYDAY=MO"),
    ("Mondays at 9", "FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0"),
    ("on Mondays at 9am", "FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0"),
    ("every mon, wed and fri at 7:00", "FREQ=WEEKLY;BYDAY=MO,WE,FR;BYHOUR=7;BYMINUTE=0"),
    ("every Tues & Thurs at 6pm", "FREQ=WEEKLY;BYDAY=TU,TH;BYHOUR=18;BYMINUTE=0"),
    ("every weekday at 8:30", "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8;BYMINUTE=30"),
    ("on weekdays at 8:30am", "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8;BYMINUTE=30"),
    ("every weekend at 10", "FREQ=WEEKLY;BYDAY=SA,SU;BYHOUR=10;BYMINUTE=0"),
    ("weekly", "FREQ=WEEKLY"),
    ("weekly on Friday at 17:00", "FREQ=WEEKLY;BYDAY=FR;BYHOUR=17;BYMINUTE=0"),
    ("every week on sat", "FREQ=WEEKLY;BYDAY=SA"),
    ("every other week on Monday", "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO"),
    ("every other Monday at 9", "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO;BYHOUR=9;BYMINUTE=0"),
    ("every second week on Tue", "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU"),
    ("every three weeks on Sunday", "FREQ=WEEKLY;INTERVAL=3;BYDAY=SU"),
    ("fortnightly on Friday at 5pm", "FREQ=WEEKLY;INTERVAL=2;BYDAY=FR;BYHOUR=17;BYMINUTE=0"),
    ("monthly", "FREQ=MONTHLY"),
    ("monthly on the 15th", "FREQ=MONTHLY;BYMONTHDAY=15"),
    ("monthly on the 1st and 15th at 9", "FREQ=MONTHLY;BYMONTHDAY=1,15;BYHOUR=9;BYMINUTE=0"),
    ("monthly on day 31", "FREQ=MONTHLY;BYMONTHDAY=31"),
    ("monthly on the last day at 18:00", "FREQ=MONTHLY;BYMONTHDAY=-1;BYHOUR=18;BYMINUTE=0"),
    ("every month on the first Monday", "FREQ=MONTHLY;BYDAY=1MO"),
    ("monthly on the 2nd Tuesday at 19:30", "FREQ=MONTHLY;BYDAY=2TU;BYHOUR=19;BYMINUTE=30"),
    ("monthly on the second-to-last Friday", "FREQ=MONTHLY;BYDAY=-2FR"),
    ("every 3 months on the 1st", "FREQ=MONTHLY;INTERVAL=3;BYMONTHDAY=1"),
    ("quarterly on the 1st at 9:00", "FREQ=MONTHLY;INTERVAL=3;BYMONTHDAY=1;BYHOUR=9;BYMINUTE=0"),
    ("monthly on the last Friday of the month", "FREQ=MONTHLY;BYDAY=-1FR"),
    ("every last Friday 17:00", "FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0"),
    ("every first Monday and Thursday at 9", "FREQ=MONTHLY;BYDAY=1MO,1TH;BYHOUR=9;BYMINUTE=0"),
    ("yearly on March 3rd", "FREQ=YEARLY;BYMONTH=3;BYMONTHDAY=3"),
    ("every year on 3 March at 9", "FREQ=YEARLY;BYMONTH=3;BYMONTHDAY=3;BYHOUR=9;BYMINUTE=0"),
    ("annually on the 3rd of March", "FREQ=YEARLY;BYMONTH=3;BYMONTHDAY=3"),
    ("every year on Feb 29", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29"),
    ("every year on the last Friday of March", "FREQ=YEARLY;BYMONTH=3;BYDAY=-1FR"),
    ("monthly on the 1st in January and July", "FREQ=MONTHLY;BYMONTH=1,7;BYMONTHDAY=1"),
    ("every 15 mins", "FREQ=MINUTELY;INTERVAL=15"),
    ("every minute", "FREQ=MINUTELY"),
    ("every hour", "FREQ=HOURLY"),
    ("every 2 hours", "FREQ=HOURLY;INTERVAL=2"),
    ("every 4 hrs", "FREQ=HOURLY;INTERVAL=4"),
    ("every year", "FREQ=YEARLY"),
]


@pytest.mark.parametrize(("phrase", "rule"), LISTED + NEIGHBOURS)
def test_phrase_becomes_canonical_rrule(phrase: str, rule: str) -> None:
    assert normalise_repeat(phrase) == rule
    assert normalise_repeat(rule) == rule  # the stored rule reads back as itself


def test_phrase_reports_its_first_time_of_day() -> None:
    assert parse_phrase("daily at 17:00 and 9:00").time == ClockTime(9, 0)
    assert parse_phrase("every day at 6pm").time == ClockTime(18, 0)
    assert parse_phrase("every 30 minutes").time is None


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        (
            "every Monday at nine-ish",
            "understood 'every Monday', could not read 'at nine-ish'",
        ),
        ("every Monday 9:00 sharpish", "understood 'every Monday 9:00', could not read 'sharpish'"),
        ("sometimes", "could not read 'sometimes' as a repeat"),
        ("every", "understood 'every', but it is incomplete"),
        ("every 30 seconds", "the shortest repeat is once a minute"),
        ("every 3 fortnights", "could not read 'fortnights'"),
        ("daily at 25:00", "25:00 is not a time of day"),
        ("daily at 13pm", "with am/pm the hour is 1 to 12"),
        ("every day at 9:15 and 17:30", "cannot share one rule"),
        ("every 30 minutes at 9:00", "a time of day does not fit an hourly or minutely repeat"),
        ("hourly on Mondays", "weekdays do not fit an hourly or minutely repeat"),
        ("weekly on the 1st", "a day of the month needs 'monthly'"),
        ("monthly on Feb 30", "there is no day 30 in that month"),
        ("monthly on the 32nd", "a day of the month is 1 to 31"),
        ("monthly on Mar 3", "a date in the year needs 'every year'"),
        ("weekly in March", "months need 'monthly' or 'every year'"),
        ("every week on the 6th Monday", "could not read 'on the 6th Monday'"),
        ("monthly on the 6th Monday", "with FREQ=MONTHLY a BYDAY ordinal is 1 to 5"),
    ],
)
def test_unreadable_phrase_says_what_was_understood(phrase: str, expected: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        normalise_repeat(phrase)
    assert caught.value.field == "repeat"
    assert expected in caught.value.message


def test_empty_repeat_is_invalid() -> None:
    with pytest.raises(InvalidInput) as caught:
        normalise_repeat("  ")
    assert caught.value.field == "repeat"
