"""What people type that the grammar used to refuse, read as the big apps read it (Todoist,
Apple Reminders, Google): parts of the day, `next week`, `this weekend`, `tomorrow 9`,
numeric dates in the zone's order, fractional delays, monthly days; one default time for a
day without one, one-off or repeat; an interval's first ring on the coming matching day;
and one-box sentences split into words and time. Any text is understood or refused with a
reason, never another error."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tocsin.errors import InvalidInput
from tocsin.time import load_zone, normalise_repeat, occurrences, plan_schedule, read_when
from tocsin.time.sentence import read_sentence

# Friday 23 October 2026, 14:00 in Paris (+02:00; clocks go back on Sunday 25th), 08:00 in
# New York (-04:00; back on Sunday 1 November).
FRIDAY = datetime(2026, 10, 23, 12, 0, tzinfo=UTC)
SUNDAY = datetime(2026, 10, 25, 9, 0, tzinfo=UTC)  # 10:00 in Paris
PARIS = "Europe/Paris"
NEW_YORK = "America/New_York"


def ring(text: str, zone: str = PARIS, now: datetime = FRIDAY) -> datetime:
    at, repeat = read_when(text, zone=zone, now=now)
    return plan_schedule(zone=zone, at=at, repeat=repeat, now=now)[1]


def local(text: str, zone: str = PARIS, now: datetime = FRIDAY) -> str:
    return ring(text, zone, now).astimezone(load_zone(zone)).strftime("%a %Y-%m-%d %H:%M")


@pytest.mark.parametrize(
    ("text", "zone", "shown"),
    [
        ("next week", PARIS, "Mon 2026-10-26 09:00"),  # its Monday, in the morning
        ("this weekend", PARIS, "Sat 2026-10-24 09:00"),
        ("next weekend", PARIS, "Sat 2026-10-31 09:00"),
        ("tomorrow evening", PARIS, "Sat 2026-10-24 18:00"),
        ("tomorrow evening at 7", PARIS, "Sat 2026-10-24 19:00"),
        ("this evening", PARIS, "Fri 2026-10-23 18:00"),
        ("Sunday afternoon", PARIS, "Sun 2026-10-25 13:00"),  # the day clocks go back
        ("tomorrow in the morning", PARIS, "Sat 2026-10-24 09:00"),
        ("tonight", PARIS, "Fri 2026-10-23 21:00"),
        ("tomorrow 9", PARIS, "Sat 2026-10-24 09:00"),
        ("tomorrow 18", PARIS, "Sat 2026-10-24 18:00"),
        ("12/24 at 6pm", NEW_YORK, "Thu 2026-12-24 18:00"),  # month first there
        ("24/12 at 6pm", PARIS, "Thu 2026-12-24 18:00"),  # day first here
        ("3/4 at 9", PARIS, "Sat 2027-04-03 09:00"),
        ("3/4 at 9", NEW_YORK, "Thu 2027-03-04 09:00"),
        ("24/12 at 6pm", NEW_YORK, "Thu 2026-12-24 18:00"),  # reads only one way
        ("24.12.2026 18:00", PARIS, "Thu 2026-12-24 18:00"),
        ("12/24/27 9am", NEW_YORK, "Fri 2027-12-24 09:00"),
        ("in 1.5 hours", PARIS, "Fri 2026-10-23 15:30"),
        ("Dec 24", PARIS, "Thu 2026-12-24 09:00"),
    ],
)
def test_one_offs_people_type(text: str, zone: str, shown: str) -> None:
    assert local(text, zone) == shown


def test_this_weekend_on_a_sunday_is_today_and_a_fraction_of_a_delay_is_elapsed() -> None:
    assert local("this weekend at 18:00", now=SUNDAY) == "Sun 2026-10-25 18:00"
    # Across the fall back: 1.5 hours of elapsed time from 02:30 CEST is 03:00 CET.
    before = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert ring("in 1.5 hours", now=before) == datetime(2026, 10, 25, 2, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("every morning", "FREQ=DAILY;BYHOUR=9;BYMINUTE=0"),
        ("every evening at 7", "FREQ=DAILY;BYHOUR=19;BYMINUTE=0"),
        ("every Monday morning", "FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0"),
        ("weekdays in the evening", "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=18;BYMINUTE=0"),
        ("every last day of the month", "FREQ=MONTHLY;BYMONTHDAY=-1"),
        ("every 15th of the month at 9", "FREQ=MONTHLY;BYMONTHDAY=15;BYHOUR=9;BYMINUTE=0"),
        ("on the 1st of every month at 9", "FREQ=MONTHLY;BYMONTHDAY=1;BYHOUR=9;BYMINUTE=0"),
        ("on the last day of each month", "FREQ=MONTHLY;BYMONTHDAY=-1"),
        ("every second day", "FREQ=DAILY;INTERVAL=2"),  # not the 2nd of the month
    ],
)
def test_repeats_people_type(text: str, rule: str) -> None:
    assert normalise_repeat(text) == rule
    assert read_when(text, zone=PARIS, now=FRIDAY) == (None, text)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("every Friday", "Fri 2026-10-30 09:00"),  # 09:00 has passed today
        ("daily", "Sat 2026-10-24 09:00"),
        ("every last day of the month", "Sat 2026-10-31 09:00"),
        ("every other Tuesday at 7pm", "Tue 2026-10-27 19:00"),  # the coming one
        ("every 2 weeks on Thu", "Thu 2026-10-29 09:00"),
        ("every 3 months on the 1st", "Sun 2026-11-01 09:00"),
        ("every 30 minutes", "Fri 2026-10-23 14:00"),  # from this minute
    ],
)
def test_a_repeat_without_a_time_rings_at_nine_and_an_interval_starts_at_the_coming_day(
    text: str, shown: str
) -> None:
    assert local(text) == shown


def test_every_other_tuesday_keeps_its_fortnight_after_the_first() -> None:
    at, repeat = read_when("every other Tuesday at 7pm", zone=NEW_YORK, now=FRIDAY)
    schedule, first = plan_schedule(zone=NEW_YORK, at=at, repeat=repeat, now=FRIDAY)

    rings = [o.local.strftime("%m-%d %H:%M %z") for o in occurrences(schedule, first, 3)]
    assert rings == ["10-27 19:00 -0400", "11-10 19:00 -0500", "11-24 19:00 -0500"]


@pytest.mark.parametrize(
    ("sentence", "text", "when"),
    [
        ("call mom at 18:00", "call mom", "at 18:00"),
        ("tomorrow 9am dentist", "dentist", "tomorrow 9am"),
        ("remind me in an hour to stretch", "stretch", "in an hour"),
        ("every weekday at 8:30 standup", "standup", "every weekday at 8:30"),
        ("Remind me to water the plants every Monday", "water the plants", "every Monday"),
        ("pay rent by Friday", "pay rent", "Friday"),
        ("tomorrow call mom at 6pm", "call mom", "tomorrow at 6pm"),
        ("standup, every weekday at 8:30", "standup", "every weekday at 8:30"),
        ("take 2 pills at 9pm", "take 2 pills", "at 9pm"),
        ("Friday: dentist", "dentist", "Friday"),
        ("Morning pills every day at 07:00", "Morning pills", "every day at 07:00"),
        ("Evening walk at 7pm", "Evening walk", "at 7pm"),
    ],
)
def test_a_sentence_splits_into_its_words_and_its_time(sentence: str, text: str, when: str) -> None:
    said = read_sentence(sentence, zone=PARIS, now=FRIDAY)
    assert (said.text, said.when) == (text, when)


@pytest.mark.parametrize(
    ("sentence", "why"),
    [
        ("buy 2 apples", "found no time at the start or the end of 'buy 2 apples'"),
        ("tomorrow 9am", "is only a time: say what to remind you of too"),
        ("call mom today 08:00", "'today 08:00' (08:00) has passed"),  # not "08:00" tomorrow
        ("", "it is empty"),
    ],
)
def test_a_sentence_without_both_is_refused_saying_why(sentence: str, why: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        read_sentence(sentence, zone=PARIS, now=FRIDAY)
    assert caught.value.field == "say"
    assert why in caught.value.message


_SAMPLE = (
    "call mom at 18:00 tomorrow 9 9am every other Tuesday weekday morning evening next week "
    "this weekend in an hour 1.5 hours 12/24 24.12.2026 the 1st of month last day on to "
    "remind me , : 25:00 Feb 30 2026-02-30 +10m noon tonight ١ RRULE:FREQ=DAILY"
)
WORDS = st.sampled_from(_SAMPLE.split(" "))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.lists(WORDS | st.text(max_size=8), max_size=14),
    zone=st.sampled_from([PARIS, NEW_YORK]),
)
def test_any_text_is_understood_or_refused_with_a_reason(words: list[str], zone: str) -> None:
    text = " ".join(words)
    for reads in (lambda: read_when(text, zone=zone, now=FRIDAY),
                  lambda: read_sentence(text, zone=zone, now=FRIDAY)):  # fmt: skip
        refused = _refusal(reads)
        assert refused is None or refused.message


def _refusal(reads: Callable[[], object]) -> InvalidInput | None:
    try:
        reads()
    except InvalidInput as refused:
        return refused
    return None
