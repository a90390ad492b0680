"""One-off times as people say them (`tomorrow 9am`, `in 10 minutes`, `Dec 24 at 18:00`),
resolved against now in a zone.

A phrase names a local wall time, or a delay from now. The wall time is returned naive, so
that it is stored as the zone's wall time and mapped to an instant by the DESIGN rules (a time
in a gap rings after it, a time that happens twice at the first); a delay is returned as an
aware UTC instant. A phrase that leaves the day open (`18:00`, `on Friday`, `Dec 24`) means
the first such day whose instant is still ahead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from fractions import Fraction
from zoneinfo import ZoneInfo

from tocsin.errors import InvalidInput
from tocsin.time.bounds import check_in_range
from tocsin.time.durations import parse_duration
from tocsin.time.phrases import (
    DAYS,
    MONTHS,
    PARTS_OF_DAY,
    ClockTime,
    Token,
    Unreadable,
    UnreadPhrase,
    read_clock,
    read_part_of_day,
    refusal,
    tokenize,
)

# A day named without a time of day rings in the morning: "on Friday" is a Friday reminder,
# not one at midnight (dateparser's choice) or at this minute's time (parsedatetime's).
MORNING = ClockTime(9, 0)
LONGEST_DELAY = 366 * 86400
EXAMPLES = "e.g. 'tomorrow 9am', 'in 10 minutes', 'Friday at 17:00' or '2026-12-24 18:00'"
_RELATIVE = re.compile(r"\s*(?:in\s+|\+\s*)(?P<delay>.+)", re.IGNORECASE)
# `1h30`: the minutes' unit left out, as people write it.
_HOURS_MINUTES = re.compile(r"([0-9]+)\s*h(?:ours?|rs?)?\s*([0-9]{1,2})\Z")
_DELAY_PART = re.compile(r"([0-9]+)\s*([a-z]+)")
_CALENDAR_UNITS = frozenset({"d", "day", "days", "w", "wk", "wks", "week", "weeks"})
_FILLER = frozenset({"at", "@", "on", "the", "of", ","})
_YEARS_AHEAD = 8  # a 29 February without a year is at most 8 years ahead (2096 → 2104)
# `1.5 hours`: a fraction of a unit, as elapsed seconds.
_FRACTION = re.compile(r"([0-9]+\.[0-9]+)\s*([a-z]+)")
_SATURDAY = 5
# Where a short numeric date is written month first (`12/24`): the United States and the
# places that follow its usage, and East Asia's month/day. Everywhere else day first (`24/12`).
_MONTH_FIRST_ZONES = frozenset({
    "Asia/Manila", "Asia/Shanghai", "Asia/Tokyo", "Asia/Seoul", "Asia/Taipei", "Pacific/Guam",
    "Pacific/Saipan", "America/Puerto_Rico", "Pacific/Pago_Pago", "Pacific/Honolulu",
    "America/Anchorage", "America/Juneau", "America/Sitka", "America/Nome", "America/Yakutat",
    "America/Metlakatla", "America/Adak", "America/New_York", "America/Chicago",
    "America/Denver", "America/Phoenix", "America/Los_Angeles", "America/Boise",
    "America/Detroit", "America/Menominee", "Asia/Chongqing", "Asia/Harbin", "Japan", "ROK",
    "PRC", "ROC", "Navajo",
})  # fmt: skip
_MONTH_FIRST_PREFIXES = ("US/", "America/Indiana/", "America/Kentucky/", "America/North_Dakota/")


@dataclass(frozen=True, slots=True)
class _Day:
    """What a phrase says of the day: `kind` is today, tonight, tomorrow, weekday, next
    (a weekday, never today), weekend (this one's Saturday, or today if it is Sunday),
    nextweekend (next week's Saturday), date or monthday."""

    kind: str
    weekday: int = 0
    year: int | None = None
    month: int = 0
    day: int = 0


@dataclass(frozen=True, slots=True)
class _Said:
    day: _Day | None
    clock: ClockTime | None
    half_given: bool  # the time carried am/pm (or was noon or midnight)


class _Wrong(Exception):
    """Understood, but it names no time: `Feb 30`, `25:00`."""


def resolve_one_off(text: str, *, zone: ZoneInfo, now: datetime, field: str) -> datetime:
    """The ring a one-off phrase names: a naive wall time in `zone`, or an aware UTC instant
    for a delay (`in 10 minutes`, `+10m`).

    Raises UnreadPhrase(field) when `text` is not such a phrase, and InvalidInput(field) when
    it reads but names no future time (`today 08:00` at noon, `Feb 30`).
    """
    relative = _RELATIVE.fullmatch(text)
    if relative:
        return _after(relative["delay"], text, zone=zone, now=now, field=field)
    said = _read(text, field, month_first=month_first(zone))
    return _resolve(said, text, zone=zone, now=now, field=field)


def month_first(zone: ZoneInfo) -> bool:
    """Whether `12/24` in `zone` is 24 December (else `24/12` is)."""
    return zone.key in _MONTH_FIRST_ZONES or zone.key.startswith(_MONTH_FIRST_PREFIXES)


# ---- delays


def _after(delay: str, text: str, *, zone: ZoneInfo, now: datetime, field: str) -> datetime:
    spoken = _plain_delay(delay)
    try:
        parse_duration(spoken, field=field, minimum=1, maximum=LONGEST_DELAY)
    except InvalidInput as error:
        if "is not a duration" not in error.message:
            raise InvalidInput(field, f"{text.strip()!r}: {error.message}") from None
        message = (
            f"could not read {delay.strip()!r} as a delay; give e.g. 'in 30 seconds', "
            "'in 10 minutes', 'in 1h30' or 'in 2 days'"
        )
        raise UnreadPhrase(field, message, reached=len(text) - len(delay)) from None
    days = elapsed = 0
    for amount, unit in _DELAY_PART.findall(spoken):
        if unit in _CALENDAR_UNITS:
            days += int(amount) * (7 if unit.startswith("w") else 1)
        else:
            elapsed += parse_duration(f"{amount}{unit}", field=field, minimum=0, maximum=10**10)
    # Days are the calendar's ("in 2 days" is the same time of day), which a DST change
    # makes 23 or 25 hours; hours, minutes and seconds are elapsed time.
    start = now.replace(microsecond=0)
    if not days:
        return (start + timedelta(seconds=elapsed)).astimezone(UTC)
    wall = start.astimezone(zone).replace(tzinfo=None) + timedelta(days=days)
    if not elapsed:
        return wall
    return _instant(wall, zone) + timedelta(seconds=elapsed)


def _plain_delay(delay: str) -> str:
    spoken = delay.strip().lower()
    spoken = re.sub(r"\bhalf an? hour\b", "30 minutes", spoken)
    spoken = re.sub(r"\ban?\s+(?=[a-z])", "1 ", spoken)  # "an hour", "a minute"
    spoken = re.sub(r"\s*(?:,|\band\b)\s*", " ", spoken)
    spoken = _FRACTION.sub(_in_seconds, spoken)
    return _HOURS_MINUTES.sub(r"\1h\2m", spoken)


def _in_seconds(match: re.Match[str]) -> str:
    """`1.5 hours` as `5400s` (to the whole second); left as it is when the unit is not one."""
    try:
        unit = parse_duration(f"1{match[2]}", field="at", minimum=1, maximum=10**10)
    except InvalidInput:
        return match[0]
    return f"{round(Fraction(match[1]) * unit)}s"


# ---- reading


def _read(text: str, field: str, *, month_first: bool) -> _Said:
    tokens = tokenize(text.lower())
    try:
        if not tokens:
            raise Unreadable(0, "it is empty")
        return _Reader(tokens, len(text), month_first=month_first).read()
    except Unreadable as stop:
        message = refusal(text, stop, reading="a time", examples=EXAMPLES, suggest_always=True)
        raise UnreadPhrase(field, message, reached=stop.at) from None
    except _Wrong as wrong:
        raise InvalidInput(field, f"{text.strip()!r}: {wrong}") from None


class _Reader:
    """A day and a time of day, each at most once, in either order, with `at`/`on` between."""

    def __init__(self, tokens: list[Token], length: int, *, month_first: bool) -> None:
        self.tokens = tokens
        self.length = length
        self.month_first = month_first
        self.index = 0
        self.day: _Day | None = None
        self.clock: ClockTime | None = None
        self.half_given = False

    def peek(self, ahead: int = 0) -> Token | None:
        spot = self.index + ahead
        return self.tokens[spot] if spot < len(self.tokens) else None

    def stop(self, why: str = "") -> Unreadable:
        token = self.peek()
        return Unreadable(token.start if token is not None else self.length, why)

    def read(self) -> _Said:
        while (token := self.peek()) is not None:
            after_at = token.text in ("at", "@")
            if token.text in _FILLER or token.kind == "separator":
                self.index += 1
                if after_at and not self.time_of_day(bare_hours=True):
                    raise self.stop("expected a time such as 18:00, 6pm or noon")
                continue
            # A bare hour after a day is the day's hour (`tomorrow 9`), 24-hour as `at 9`.
            bare = self.day is not None and token.kind == "number" and len(token.text) <= 2
            if not (self.time_of_day(bare_hours=bare) or self.day_part()):
                raise self.stop(self.hint(token))
        if self.day is None and self.clock is None:
            raise self.stop("give a time such as 18:00, or a day")
        return _Said(self.day, self.clock, self.half_given)

    def hint(self, token: Token) -> str:
        if token.kind == "number":
            return "a bare number: say 'at 9' (09:00), '9pm' or '21:00'"
        name = token.text
        if (name.endswith("s") and name[:-1] in DAYS) or name.startswith(("every", "each")):
            return "a repeat? say 'every Monday at 9:00'"
        return ""

    def word(self, ahead: int) -> str:
        token = self.peek(ahead)
        return token.text if token is not None else ""

    def set_day(self, day: _Day) -> bool:
        if self.day is not None:
            raise self.stop("the day is given twice")
        self.day = day
        return True

    def time_of_day(self, *, bare_hours: bool) -> bool:
        token = self.peek()
        if token is None:
            return False
        if token.text == "in" and self.word(1) == "the" and self.word(2) in PARTS_OF_DAY:
            self.index += 2  # "tomorrow in the evening"
            token = self.tokens[self.index]
        part = read_part_of_day(self.tokens, self.index)
        found = part[0] if isinstance(part, tuple) else part
        if found is None:
            found = read_clock(token, bare_hours=bare_hours)
        if found is None:
            return False
        if isinstance(found, str):
            raise _Wrong(found)
        if self.clock is not None:
            raise self.stop("the time is given twice")
        self.clock = found
        self.half_given = token.kind == "hour_ampm" or bool(re.search(r"[ap]\.?m", token.text))
        self.half_given = self.half_given or token.text in ("noon", "midday", "midnight")
        self.half_given = self.half_given or part is not None
        self.index += part[1] - 1 if isinstance(part, tuple) else 0
        self.index += 1
        if (after := self.peek()) is not None and after.text in ("sharp", "o'clock"):
            self.index += 1
        return True

    def day_part(self) -> bool:
        token = self.peek()
        assert token is not None
        word = token.text
        if word in ("today", "tonight", "tomorrow", "tmrw"):
            self.index += 1
            return self.set_day(_Day("tomorrow" if word == "tmrw" else word))
        if word in ("next", "this") and self.peek(1) is not None:
            if self.week_part(word, self.word(1)):
                return True
            weekday = DAYS.get(self.tokens[self.index + 1].text)
            if weekday is None:
                raise Unreadable(self.tokens[self.index + 1].start, "expected a day such as Friday")
            self.index += 2
            return self.set_day(_Day("next" if word == "next" else "weekday", weekday=weekday))
        if word in DAYS:
            self.index += 1
            return self.set_day(_Day("weekday", weekday=DAYS[word]))
        if token.kind == "isodate":
            return self.iso_date(token)
        if token.kind == "numdate":
            return self.numeric_date(token)
        return self.month_date()

    def week_part(self, which: str, what: str) -> bool:
        """`next week` (its Monday, as Todoist and Apple read it), `this weekend` (its
        Saturday), `next weekend`, and `this morning`/`evening`… (today, at that time: the
        part of the day is read next as the time)."""
        if what in PARTS_OF_DAY and which == "this":
            self.index += 1
            return self.set_day(_Day("today"))
        kinds = {
            ("next", "week"): _Day("next", weekday=0),
            ("this", "weekend"): _Day("weekend"),
            ("next", "weekend"): _Day("nextweekend"),
        }
        day = kinds.get((which, what))
        if day is None:
            return False
        self.index += 2
        return self.set_day(day)

    def numeric_date(self, token: Token) -> bool:
        """`12/24`, `24/12/2026`, `24.12.`: month first in the zones that write it so, else
        day first; a date that reads only the other way (`24/12` in New York) is read so."""
        parts = [int(p) for p in re.split(r"[/.]", token.text) if p]
        first, second = parts[0], parts[1]
        month, day = (first, second) if self.month_first else (second, first)
        if month > 12 >= day:
            month, day = day, month
        year = None
        if len(parts) == 3:
            year = parts[2] + (2000 if parts[2] < 100 else 0)
        self.check_date(year, month, day)
        self.index += 1
        return self.set_day(_Day("date", year=year, month=month, day=day))

    def iso_date(self, token: Token) -> bool:
        year, month, day = (int(part) for part in token.text.split("-"))
        self.check_date(year, month, day)
        self.index += 1
        return self.set_day(_Day("date", year=year, month=month, day=day))

    def month_date(self) -> bool:
        """`Dec 24`, `December 24th`, `24 December`, `the 24th of December`, a year after
        any of them (`Dec 24 2026`), or a day of the month alone (`the 24th`)."""
        first, second = self.peek(), self.peek(1)
        assert first is not None
        numeric = ("number", "ordinal")
        if first.text in MONTHS and second is not None and second.kind in numeric:
            month, day = MONTHS[first.text], _number(second)
            used = 2
        elif first.kind in numeric and second is not None and second.text in MONTHS:
            month, day = MONTHS[second.text], _number(first)
            used = 2
        elif first.kind in numeric and second is not None and second.text == "of":
            third = self.peek(2)
            if third is None or third.text not in MONTHS:
                return False
            month, day = MONTHS[third.text], _number(first)
            used = 3
        elif first.kind == "ordinal":
            self.index += 1
            if not 1 <= _number(first) <= 31:
                raise _Wrong(f"{first.text}: a day of the month is 1 to 31")
            return self.set_day(_Day("monthday", day=_number(first)))
        else:
            return False
        year_token = self.peek(used)
        year = None
        if year_token is not None and year_token.kind == "number" and len(year_token.text) == 4:
            year = int(year_token.text)
            used += 1
        self.check_date(year, month, day)
        self.index += used
        return self.set_day(_Day("date", year=year, month=month, day=day))

    def check_date(self, year: int | None, month: int, day: int) -> None:
        try:
            date(year or 2000, month, day)  # 2000: a leap year, so 29 February passes
        except ValueError:
            if not 1 <= month <= 12:
                raise _Wrong(f"there is no month {month}") from None
            shown = f"{day} {_month_name(month)}{f' {year}' if year else ''}"
            raise _Wrong(f"there is no {shown}") from None


def _number(token: Token) -> int:
    return int(re.sub(r"[^0-9]", "", token.text))


def _month_name(month: int) -> str:
    return date(2000, month, 1).strftime("%B")


# ---- resolving


def _resolve(said: _Said, text: str, *, zone: ZoneInfo, now: datetime, field: str) -> datetime:
    local_now = now.astimezone(zone).replace(tzinfo=None)
    day = said.day
    clock = said.clock
    if clock is None and day is not None and day.kind == "tonight":
        clock = ClockTime(*PARTS_OF_DAY["night"])
    if clock is None:
        if day is not None and day.kind == "today":
            example = f"'{day.kind} 18:00'"
            raise InvalidInput(field, f"{text.strip()!r}: say at what time, e.g. {example}")
        clock = MORNING
    if day is not None and day.kind == "tonight" and not said.half_given:
        clock = _evening(clock)
    wanted = time(clock.hour, clock.minute, clock.second or 0)
    for candidate in _days(day, local_now.date(), wanted):
        wall = datetime.combine(candidate, wanted)
        check_in_range(wall, field=field, text=text)
        if _instant(wall, zone) > now:
            return wall
    raise InvalidInput(field, _passed(text, day, wanted, local_now, zone))


def _evening(clock: ClockTime) -> ClockTime:
    """`tonight at 9` is 21:00, and `tonight at 12` midnight."""
    if clock.hour == 12:
        return ClockTime(0, clock.minute, clock.second)
    if 1 <= clock.hour <= 11:
        return ClockTime(clock.hour + 12, clock.minute, clock.second)
    return clock


def _instant(wall: datetime, zone: ZoneInfo) -> datetime:
    # fold=0: the first of a time that happens twice; a time in a gap is read with the offset
    # before it, which lands it the gap later (tocsin.time.expand does the same for series).
    return wall.replace(tzinfo=zone, fold=0).astimezone(UTC)


def _days(day: _Day | None, today: date, wanted: time) -> Iterator[date]:
    """The days a phrase may mean, earliest first; the first whose instant is ahead wins."""
    one = timedelta(days=1)
    if day is None:
        yield from (today, today + one, today + 2 * one)
    elif day.kind == "today":
        yield today
    elif day.kind == "tonight":
        yield today if wanted.hour >= 12 else today + one  # 1am tonight is tomorrow's 1am
    elif day.kind == "tomorrow":
        yield today + one
    elif day.kind in ("weekday", "next"):
        yield from _weekdays(today, day.weekday, skip_today=day.kind == "next")
    elif day.kind == "weekend":
        if today.weekday() == _SATURDAY + 1:  # on a Sunday, this weekend is today
            yield today
        yield from _weekdays(today, _SATURDAY, skip_today=False)
    elif day.kind == "nextweekend":
        monday = next(_weekdays(today, 0, skip_today=True))
        yield monday + timedelta(days=_SATURDAY)
    elif day.kind == "monthday":
        yield from _month_days(today, day.day)
    else:
        yield from _dates(today, day)


def _weekdays(today: date, weekday: int, *, skip_today: bool) -> Iterator[date]:
    first = today + timedelta(days=(weekday - today.weekday()) % 7)
    if skip_today and first == today:
        first += timedelta(days=7)
    yield from (first, first + timedelta(days=7))


def _dates(today: date, day: _Day) -> Iterator[date]:
    if day.year is not None:
        yield date(day.year, day.month, day.day)
        return
    for year in range(today.year, today.year + _YEARS_AHEAD + 1):
        if day.month != 2 or day.day != 29 or _is_leap(year):
            yield date(year, day.month, day.day)


def _month_days(today: date, number: int) -> Iterator[date]:
    year, month = today.year, today.month
    for _ in range(14):  # the 31st is at most two months away (past June 30 to Aug 31)
        try:
            found = date(year, month, number)
        except ValueError:
            found = None
        if found is not None and found >= today:
            yield found
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _passed(text: str, day: _Day | None, wanted: time, local_now: datetime, zone: ZoneInfo) -> str:
    clock = wanted.strftime("%H:%M" if not wanted.second else "%H:%M:%S")
    it_is = f"it is {local_now:%Y-%m-%d %H:%M} in {zone.key}"
    if day is not None and day.kind in ("today", "tonight"):
        return f"{text.strip()!r} ({clock}) has passed: {it_is}; say 'tomorrow {clock}'"
    return f"{text.strip()!r} is in the past: {it_is}"
