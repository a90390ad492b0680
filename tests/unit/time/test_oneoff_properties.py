"""Property tests for one-off phrases: random phrases at random instants near DST changes and
month ends, against a plain reading of what each says.

Every accepted phrase rings at a future instant, the first instant of the wall time it names
on the first day it allows (a wall time in a gap: the gap later); a phrase refused names no
such future day. Delays are exact: elapsed seconds from now, or the same wall time N days on.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tocsin.errors import InvalidInput
from tocsin.time import load_zone, plan_schedule, read_when

# DST of an hour, of half an hour (Lord Howe), of two (Troll); at midnight (Havana); none but
# an offset of a half or three quarters of an hour (Kolkata, Kathmandu, Chatham's 12:45 with
# DST); negative DST (Dublin); a skipped day (Apia, 2011).
ZONES = ["Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Antarctica/Troll",
         "America/Havana", "Asia/Kolkata", "Asia/Kathmandu", "Pacific/Chatham", "Europe/Dublin",
         "Pacific/Apia", "America/Sao_Paulo", "UTC"]  # fmt: skip
DAY_NAMES = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August",
               "September", "October", "November", "December"]  # fmt: skip
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@cache
def transitions(zone: str) -> list[datetime]:
    """Every change of the zone's offset from 2010 to 2035 (to the minute)."""
    tz = ZoneInfo(zone)
    found = []
    day = datetime(2010, 1, 1, tzinfo=UTC)
    while day.year < 2035:
        following = day + timedelta(days=1)
        if day.astimezone(tz).utcoffset() != following.astimezone(tz).utcoffset():
            low, high = day, following
            while high - low > timedelta(minutes=1):
                middle = low + (high - low) / 2
                same = middle.astimezone(tz).utcoffset() == low.astimezone(tz).utcoffset()
                low, high = (middle, high) if same else (low, middle)
            found.append(high)
        day = following
    return found


@st.composite
def instants(draw: st.DrawFn, zone: str) -> datetime:
    """Now: within two days of a DST change, of a month's end, or anywhere in 2010–2034."""
    near = st.timedeltas(min_value=timedelta(hours=-50), max_value=timedelta(hours=50))
    kind = draw(st.sampled_from(["change", "month end", "any"]))
    changes = transitions(zone)
    if kind == "change" and changes:
        return draw(st.sampled_from(changes)) + draw(near)
    if kind == "month end":
        year, month = draw(st.integers(2010, 2034)), draw(st.integers(1, 12))
        first = date(year + month // 12, month % 12 + 1, 1)
        return datetime.combine(first, time(), tzinfo=ZoneInfo(zone)).astimezone(UTC) + draw(near)
    moment = draw(st.datetimes(min_value=datetime(2010, 1, 1), max_value=datetime(2034, 12, 31)))
    return moment.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Clock:
    text: str
    wall: time
    half_given: bool


@st.composite
def clocks(draw: st.DrawFn) -> Clock:
    hour, minute = draw(st.integers(0, 23)), draw(st.sampled_from([0, 0, 15, 30, 45, 59]))
    half = "am" if hour < 12 else "pm"
    twelve = hour % 12 or 12
    forms = [(f"{hour:02d}:{minute:02d}", False), (f"{hour}:{minute:02d}", False)]
    forms += [(f"{twelve}:{minute:02d} {half}", True), (f"{twelve}:{minute:02d}{half}", True)]
    if minute == 0:
        forms += [(f"{twelve}{half}", True), (f"{twelve} {half.upper()}", True)]
        forms += [(f"at {hour}", False)]
        if hour == 12:
            forms += [("noon", True)]
        if hour == 0:
            forms += [("midnight", True)]
    text, half_given = draw(st.sampled_from(forms))
    return Clock(text, time(hour, minute), half_given)


@dataclass(frozen=True, slots=True)
class Day:
    """A day as said, and which days it allows (checked in order: the first ahead wins)."""

    text: str
    kind: str
    weekday: int = 0
    month: int = 0
    day: int = 0
    year: int | None = None


@st.composite
def days(draw: st.DrawFn) -> Day | None:
    kind = draw(st.sampled_from(["none", "today", "tonight", "tomorrow", "weekday", "next",
                                 "date", "dated", "monthday"]))  # fmt: skip
    if kind == "none":
        return None
    if kind in ("today", "tonight", "tomorrow"):
        return Day(draw(st.sampled_from([kind, kind.capitalize()])), kind)
    if kind in ("weekday", "next"):
        weekday = draw(st.integers(0, 6))
        name = draw(st.sampled_from([DAY_NAMES[weekday], DAY_NAMES[weekday][:3].lower()]))
        said = f"next {name}" if kind == "next" else draw(st.sampled_from([name, f"on {name}"]))
        return Day(said, kind, weekday=weekday)
    month = draw(st.integers(1, 12))
    longest = 29 if month == 2 else 30 if month in (4, 6, 9, 11) else 31
    number = draw(st.integers(1, longest) | st.integers(max(1, longest - 2), longest))
    if kind == "monthday":
        return Day(f"on the {number}{_suffix(number)}", kind, day=number)
    name = draw(st.sampled_from([MONTH_NAMES[month - 1], MONTH_NAMES[month - 1][:3]]))
    said = draw(st.sampled_from([f"{name} {number}", f"{number} {name}",
                                 f"the {number}{_suffix(number)} of {name}"]))  # fmt: skip
    if kind == "dated":
        year = draw(st.integers(2010, 2036))
        if month == 2 and number == 29 and not _leap(year):
            year += 4 - year % 4
        return Day(f"{said} {year}", kind, month=month, day=number, year=year)
    return Day(said, kind, month=month, day=number)


def _suffix(number: int) -> str:
    if number in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def said_wall(day: Day | None, clock: Clock | None) -> time:
    """The time of day a phrase names: 09:00 for a day alone, 21:00 for `tonight` alone;
    `tonight at 9` is 21:00."""
    if clock is None:
        return time(21) if day is not None and day.kind == "tonight" else time(9)
    wall = clock.wall
    if day is not None and day.kind == "tonight" and not clock.half_given:
        if wall.hour == 12:
            return wall.replace(hour=0)
        if 1 <= wall.hour <= 11:
            return wall.replace(hour=wall.hour + 12)
    return wall


def allowed(day: Day | None, candidate: date, today: date, wall: time) -> bool:
    """Whether the phrase allows `candidate` as its day, read plainly from what it says."""
    if day is None:
        return True
    match day.kind:
        case "today":
            return candidate == today
        case "tonight":
            return candidate == (today if wall.hour >= 12 else today + timedelta(days=1))
        case "tomorrow":
            return candidate == today + timedelta(days=1)
        case "weekday":
            return candidate.weekday() == day.weekday
        case "next":
            return candidate.weekday() == day.weekday and candidate > today
        case "monthday":
            return candidate.day == day.day
        case _:
            same = candidate.month == day.month and candidate.day == day.day
            return same and (day.year is None or candidate.year == day.year)


def first_instant(wall: datetime, zone: ZoneInfo) -> datetime:
    return wall.replace(tzinfo=zone, fold=0).astimezone(UTC)


def expected_wall(day: Day | None, wall: time, zone: ZoneInfo, now: datetime) -> datetime | None:
    today = now.astimezone(zone).date()
    if day is not None and day.year is not None:
        candidates = [date(day.year, day.month, day.day)]
    else:  # a 29 February is at most 8 years away
        candidates = [today + timedelta(days=ahead) for ahead in range(0, 366 * 9)]
    for candidate in candidates:
        moment = datetime.combine(candidate, wall)
        if allowed(day, candidate, today, wall) and first_instant(moment, zone) > now:
            return moment
    return None


def phrase(day: Day | None, clock: Clock | None, time_first: bool, at: bool) -> str:
    clock_text = clock.text if clock is not None else ""
    if clock is not None and at and not clock.text.startswith("at ") and clock.text[0].isdigit():
        clock_text = f"at {clock_text}"
    parts = [day.text if day else "", clock_text]
    return " ".join(part for part in (parts[::-1] if time_first else parts) if part)


def check_shown_wall(ring: datetime, wall: datetime, zone: ZoneInfo) -> None:
    """The ring shows the wall time named, or (a time the clocks skip) that time the gap on."""
    shown = ring.astimezone(zone).replace(tzinfo=None)
    if shown != wall:
        after = ring.astimezone(zone).utcoffset()
        before = (ring - timedelta(days=1)).astimezone(zone).utcoffset()
        assert after is not None
        assert before is not None
        assert shown - wall == after - before > timedelta(0)


@SETTINGS
@given(
    zone=st.sampled_from(ZONES),
    data=st.data(),
    day=days(),
    clock=st.none() | clocks(),
    time_first=st.booleans(),
    at=st.booleans(),
)
@example(zone="Europe/Paris", data=None, day=Day("tomorrow", "tomorrow"),
         clock=Clock("2:30am", time(2, 30), True), time_first=False, at=False)  # fmt: skip
def test_every_accepted_phrase_rings_ahead_at_the_wall_time_it_names(
    zone: str,
    data: st.DataObject | None,
    day: Day | None,
    clock: Clock | None,
    time_first: bool,
    at: bool,
) -> None:
    if day is None and clock is None:
        return
    tz = load_zone(zone)
    now = data.draw(instants(zone)) if data else datetime(2026, 3, 28, 18, tzinfo=UTC)
    text = phrase(day, clock, time_first, at)
    wall = said_wall(day, clock)
    expected = expected_wall(day, wall, tz, now)
    needs_time = day is not None and day.kind == "today" and clock is None
    try:
        schedule, ring = plan_schedule(zone=zone, at=text, repeat=None, now=now)
    except InvalidInput as error:
        refused: InvalidInput | None = error
    else:
        refused = None
    if refused is not None:
        assert refused.field == "at"
        assert expected is None or needs_time, (text, now, refused.message)
        return
    assert not needs_time
    assert expected is not None, (text, now, schedule)
    assert schedule.anchor == expected, (text, now)
    assert ring == first_instant(expected, tz)
    assert ring > now
    check_shown_wall(ring, expected, tz)
    assert read_when(text, zone=zone, now=now) == (expected.isoformat(timespec="seconds"), None)


@SETTINGS
@given(
    zone=st.sampled_from(ZONES),
    data=st.data(),
    amount=st.integers(1, 200),
    unit=st.sampled_from(["seconds", "minutes", "hours", "s", "m", "h", "min"]),
)
def test_a_delay_is_that_much_elapsed_time(
    zone: str, data: st.DataObject, amount: int, unit: str
) -> None:
    now = data.draw(instants(zone))
    seconds = amount * {"s": 1, "m": 60, "h": 3600}[unit[0]]
    schedule, ring = plan_schedule(zone=zone, at=f"in {amount} {unit}", repeat=None, now=now)
    assert ring == now.replace(microsecond=0) + timedelta(seconds=seconds)
    assert ring > now
    assert schedule.anchor == ring  # kept as the instant: a delay does not move with the clock


@SETTINGS
@given(zone=st.sampled_from(ZONES), data=st.data(), amount=st.integers(1, 52),
       unit=st.sampled_from(["days", "weeks"]))  # fmt: skip
def test_days_ahead_keep_the_wall_time(
    zone: str, data: st.DataObject, amount: int, unit: str
) -> None:
    tz = load_zone(zone)
    now = data.draw(instants(zone))
    number = amount if unit == "days" else amount * 7
    if number > 366:
        return
    schedule, ring = plan_schedule(zone=zone, at=f"in {amount} {unit}", repeat=None, now=now)
    wall = now.replace(microsecond=0).astimezone(tz).replace(tzinfo=None) + timedelta(days=number)
    assert schedule.anchor == wall
    assert ring == first_instant(wall, tz)
    assert ring > now
    check_shown_wall(ring, wall, tz)
