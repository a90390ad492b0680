"""English repeat phrases ("every Monday at 9:00") read into rules, with errors that point."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from tocsin.errors import InvalidInput
from tocsin.time.rules import Rule, check_rule, normalise

# Digits are [0-9], never `\d`: that also matches '١' (Arabic-Indic), which int() reads.
_TOKEN = re.compile(
    r"""
    (?P<isodate>[0-9]{4}-[0-9]{2}-[0-9]{2}(?![0-9]))
  | (?P<numdate>[0-9]{1,2}(?P<sep>[/.])[0-9]{1,2}(?:(?P=sep)(?:[0-9]{4}|[0-9]{2}))?(?![0-9/.:]))
  | (?P<clock>[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?(?:\s*[ap]\.?m\.?)?(?![a-z0-9]))
  | (?P<hour_ampm>[0-9]{1,2}\s*[ap]\.?m\.?(?![a-z0-9]))
  | (?P<ordinal>[0-9]{1,2}(?:st|nd|rd|th)(?![a-z0-9]))
  | (?P<number>[0-9]+(?![a-z0-9:]))
  | (?P<word>[a-z]+(?:[-'][a-z]+)*)
  | (?P<separator>,|&|\+)
  | (?P<other>\S+)
    """,
    re.VERBOSE,
)
DAYS = {
    "monday": 0, "mon": 0,
    "tuesday": 1, "tue": 1, "tues": 1,
    "wednesday": 2, "wed": 2,
    "thursday": 3, "thu": 3, "thur": 3, "thurs": 3,
    "friday": 4, "fri": 4,
    "saturday": 5, "sat": 5,
    "sunday": 6, "sun": 6,
}  # fmt: skip
MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}  # fmt: skip
_UNITS = {
    "minute": "MINUTELY", "min": "MINUTELY", "mins": "MINUTELY",
    "hour": "HOURLY", "hr": "HOURLY", "hrs": "HOURLY",
    "day": "DAILY", "week": "WEEKLY", "wk": "WEEKLY", "wks": "WEEKLY",
    "month": "MONTHLY", "year": "YEARLY", "yr": "YEARLY", "yrs": "YEARLY",
}  # fmt: skip
_ADVERBS = {
    "minutely": ("MINUTELY", 1), "hourly": ("HOURLY", 1), "daily": ("DAILY", 1),
    "nightly": ("DAILY", 1), "everyday": ("DAILY", 1), "weekly": ("WEEKLY", 1),
    "fortnightly": ("WEEKLY", 2), "monthly": ("MONTHLY", 1), "quarterly": ("MONTHLY", 3),
    "yearly": ("YEARLY", 1), "annually": ("YEARLY", 1),
}  # fmt: skip
_COUNTS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
    "thirty": 30, "forty-five": 45, "other": 2,
}  # fmt: skip
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "last": -1,
    "second-last": -2, "second-to-last": -2, "penultimate": -2,
}  # fmt: skip
# A part of the day rings at the time Google's and Apple's reminders give it.
PARTS_OF_DAY = {
    "morning": (9, 0), "afternoon": (13, 0), "evening": (18, 0), "night": (21, 0),
}  # fmt: skip
_WEEKDAYS = (0, 1, 2, 3, 4)
_WEEKEND = (5, 6)
_FILLER = frozenset({"the", "of", "a", "an"})
_EXAMPLES = "e.g. 'every Monday at 9:00', 'weekdays at 8:30' or an RRULE"


@dataclass(frozen=True, slots=True)
class Token:
    """One word, number or time of a lowered phrase, and where it starts."""

    kind: str
    text: str
    start: int


def tokenize(lowered: str) -> list[Token]:
    """The tokens of a lowered phrase (repeats and one-offs share them)."""
    return [Token(str(m.lastgroup), m.group().strip(), m.start()) for m in _TOKEN.finditer(lowered)]


class UnreadPhrase(InvalidInput):
    """A phrase that could not be read; `reached` is how far (in characters) it was.

    Text that may be a one-off or a repeat (`when`) is read both ways: the reading that
    got further says what was wrong."""

    def __init__(self, field: str, message: str, *, reached: int) -> None:
        super().__init__(field, message)
        self.reached = reached


@dataclass(frozen=True, slots=True)
class ClockTime:
    """A time of day a phrase names."""

    hour: int
    minute: int
    second: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Phrase:
    """What a phrase means: its rule, and the first time of day it names (None: none given)."""

    rule: Rule
    time: ClockTime | None


class Unreadable(Exception):
    """Raised at the character where reading a phrase stopped (`why`: what was expected)."""

    def __init__(self, at: int, why: str = "") -> None:
        super().__init__(why)
        self.at = at
        self.why = why


@dataclass
class _Draft:
    freq: str = ""
    interval: int = 1
    byday: list[tuple[int, int]] = field(default_factory=list)
    bymonthday: list[int] = field(default_factory=list)
    bymonth: list[int] = field(default_factory=list)
    times: list[ClockTime] = field(default_factory=list)


def looks_like_rrule(text: str) -> bool:
    """An RRULE has `=` in it (`FREQ=…`); a phrase never does."""
    return "=" in text or text.strip().upper().startswith("RRULE:")


def parse_phrase(text: str) -> Phrase:
    """Read an English repeat phrase; raise InvalidInput("repeat") saying where reading stopped."""
    reader = _Reader(tokenize(text.lower()), len(text))
    try:
        draft = reader.read()
    except Unreadable as stop:
        message = refusal(text, stop, reading="a repeat", examples=_EXAMPLES, joiners=",&+")
        raise UnreadPhrase("repeat", message, reached=stop.at) from None
    rule = _to_rule(draft, text)
    try:
        check_rule(rule)
    except InvalidInput as exc:
        raise InvalidInput("repeat", f"{text.strip()!r}: {exc.message}") from None
    return Phrase(rule=rule, time=min(draft.times, key=_clock_key, default=None))


def _clock_key(clock: ClockTime) -> tuple[int, int, int]:
    return clock.hour, clock.minute, clock.second or 0


def refusal(
    text: str,
    stop: Unreadable,
    *,
    reading: str,
    examples: str,
    joiners: str = ",",
    suggest_always: bool = False,
) -> str:
    """What to say of `text` read as `reading` (a repeat, a time) up to `stop`: what was
    understood (without the `joiners` it ended on) and what was not, and `examples` — after
    a partial reading too when `suggest_always`."""
    understood = text[: stop.at].strip().rstrip(joiners).strip()
    rest = text[stop.at :].strip()
    why = f" ({stop.why})" if stop.why else ""
    if not understood:
        return f"could not read {rest!r} as {reading}{why}; {examples}"
    if not rest:
        return f"understood {understood!r}, but it is incomplete{why}; {examples}"
    suggestion = f"; {examples}" if suggest_always else ""
    return f"understood {understood!r}, could not read {rest!r}{why}{suggestion}"


class _Reader:
    """A recursive-descent reader over the phrase's tokens: a frequency, then modifiers."""

    def __init__(self, tokens: list[Token], length: int) -> None:
        self.tokens = tokens
        self.length = length
        self.index = 0
        self.draft = _Draft()

    # ---- token helpers
    def peek(self, ahead: int = 0) -> Token | None:
        spot = self.index + ahead
        return self.tokens[spot] if spot < len(self.tokens) else None

    def word(self, ahead: int = 0) -> str:
        token = self.peek(ahead)
        return token.text if token is not None and token.kind == "word" else ""

    def position(self) -> int:
        token = self.peek()
        return token.start if token is not None else self.length

    def stop(self, why: str = "") -> Unreadable:
        return Unreadable(self.position(), why)

    def take(self, *words: str) -> bool:
        if self.word() in words:
            self.index += 1
            return True
        return False

    # ---- grammar
    def read(self) -> _Draft:
        if not self.tokens:
            raise Unreadable(0, "it is empty")
        if self.word() in ("at", "@") or self.clock(bare_hours=False) is not None:
            self.index = 0
            self.modifier()  # "9am daily", "at noon every day"
        self.frequency()
        while self.peek() is not None:
            self.modifier()
        if not self.draft.freq:
            raise self.stop("no frequency such as 'daily' or 'every week'")
        return self.draft

    def frequency(self) -> None:
        word = self.word()
        if word in _ADVERBS:
            self.index += 1
            self.draft.freq, self.draft.interval = _ADVERBS[word]
            return
        if self.take("every", "each"):
            self.every()
            return
        on = self.take("on")
        if self.weekday_set():
            return
        if on and self.on_every_month():
            return
        raise self.stop()

    def every(self) -> None:
        if self.nth_weekday():  # "every last Friday": monthly
            return
        if self.word() in PARTS_OF_DAY:  # "every morning": daily, at the morning's time
            self.draft.freq = "DAILY"
            return
        if self.every_month_day():
            return
        interval = self.count()
        unit = self.word()
        singular = unit[:-1] if unit.endswith("s") and unit[:-1] in _UNITS else unit
        if unit in ("second", "seconds", "sec", "secs"):
            raise self.stop("the shortest repeat is once a minute")
        if singular in _UNITS:
            if interval is None and unit != singular:
                raise self.stop("say 'every 2 weeks' or 'every week'")
            self.index += 1
            self.draft.freq, self.draft.interval = _UNITS[singular], interval or 1
            return
        if (interval is not None and interval != 2) or self.peek() is None:
            raise self.stop("expected a unit such as minutes, hours, days or weeks")
        if interval == 2:  # "every other Monday"
            self.draft.interval = 2
        if not self.weekday_set():
            raise self.stop("expected a unit or a weekday")

    def nth_weekday(self) -> bool:
        """`every last Friday`, `every first Monday and Thursday`: the nth weekday(s) of
        every month. Not `every second Tuesday`: many read it as every other Tuesday, so it
        stays an error that asks for one or the other."""
        following = self.word(1)
        if DAYS.get(following, DAYS.get(following[:-1])) is None:
            return False
        if self.word() == "second":
            raise self.stop(
                f"say 'every other {following}' (every two weeks) or "
                f"'monthly on the second {following}'"
            )
        ordinal = _ORDINALS.get(self.word())
        if ordinal is None:
            return False
        self.index += 1
        days = self.day_names()
        self.draft.freq, self.draft.interval = "MONTHLY", 1
        self.draft.byday.extend((ordinal, day) for day in days)
        return True

    def every_month_day(self) -> bool:
        """`every last day of the month`, `every 1st`, `every 15th of the month`: monthly
        on that day. Not `every second day` nor `every 2nd day` (every two days)."""
        token, following = self.peek(), self.word(1)
        if token is None:
            return False
        worded = token.text in ("first", "last") and following in ("day", "of")
        numbered = token.kind == "ordinal" and following != "day"
        if not (worded or numbered):
            return False
        self.draft.freq = "MONTHLY"
        self.month_days()
        return True

    def on_every_month(self) -> bool:
        """`on the 1st of every month`, `the last day of each month`: monthly on those days
        (read after `on`, before any frequency)."""
        start = self.index
        draft = self.draft
        saved = replace(draft, bymonthday=[], byday=[], bymonth=[], times=list(draft.times))
        self.draft.freq = "MONTHLY"
        try:
            self.month_days()
        except Unreadable:
            self.index, self.draft = start, saved
            return False
        if self.draft.bymonth:  # "the 3rd of March": a date in the year, not monthly
            self.index, self.draft = start, saved
            return False
        return self.index > start

    def count(self) -> int | None:
        token = self.peek()
        if token is None:
            return None
        if token.kind == "number" or token.kind == "ordinal":
            value = int(re.sub(r"[^0-9]", "", token.text))
        elif token.text in _COUNTS:
            value = _COUNTS[token.text]
        elif token.text in ("second", "third", "fourth") and self.word(1).rstrip("s") in _UNITS:
            value = _ORDINALS[token.text]
        else:
            return None
        if value < 1:
            raise self.stop("the interval must be at least 1")
        self.index += 1
        return value

    def weekday_set(self) -> bool:
        """`weekdays`, `weekends`, or a list of day names; the rule becomes weekly on them."""
        word = self.word()
        days: tuple[int, ...]
        if word in ("weekday", "weekdays", "weekend", "weekends"):
            self.index += 1
            days = _WEEKDAYS if word.startswith("weekday") else _WEEKEND
        else:
            days = self.day_names()
            if not days:
                return False
        self.set_weekly(days)
        return True

    def set_weekly(self, days: tuple[int, ...]) -> None:
        draft = self.draft
        if draft.freq in ("", "DAILY", "WEEKLY"):
            draft.freq = "WEEKLY" if draft.freq != "DAILY" or draft.interval == 1 else "DAILY"
            draft.byday.extend((0, day) for day in days)
        elif draft.freq in ("MONTHLY", "YEARLY"):
            draft.byday.extend((0, day) for day in days)
        else:
            raise self.stop("weekdays do not fit an hourly or minutely repeat")

    def day_names(self) -> tuple[int, ...]:
        days: list[int] = []
        end = self.index
        while True:
            name = self.word()
            day = DAYS.get(name, DAYS.get(name[:-1]) if name.endswith("s") else None)
            if day is None:
                break
            days.append(day)
            self.index += 1
            end = self.index
            if not self.separator():
                break
        self.index = end  # a trailing "and" or "," belongs to what follows
        return tuple(days)

    def separator(self) -> bool:
        token = self.peek()
        if token is not None and (token.kind == "separator" or token.text == "and"):
            self.index += 1
            return True
        return False

    def modifier(self) -> None:
        start = self.index
        try:
            self.one_modifier()
        except Unreadable as stop:
            self.index = start
            raise Unreadable(self.position(), stop.why) from None

    def one_modifier(self) -> None:
        if self.separator():
            return
        if self.take("at", "@"):
            self.clock_times()
        elif self.take("on"):
            self.on()
        elif self.take("in"):
            self.in_months()
        elif not self.clock_times(optional=True):
            raise self.stop()

    def on(self) -> None:
        self.take("the")
        if self.weekday_set():
            return
        if self.month_date():
            return
        self.month_days()

    def month_days(self) -> None:
        """`the 1st`, `the 1st and 15th`, `the last Friday`, `day 15`, `the last day`."""
        draft = self.draft
        if draft.freq not in ("MONTHLY", "YEARLY"):
            raise self.stop("a day of the month needs 'monthly' or 'every year'")
        found = False
        while True:
            self.take("the")
            self.take("day")
            ordinal = self.ordinal()
            if ordinal is None:
                break
            found = True
            days = self.day_names()
            if days:
                draft.byday.extend((ordinal, day) for day in days)
            else:
                self.take("day")
                draft.bymonthday.append(ordinal)
            if self.take("of"):
                self.month_tail()
            if not self.separator():
                break
        if not found:
            raise self.stop("expected a day such as 'the 1st' or 'the last Friday'")

    def ordinal(self) -> int | None:
        token = self.peek()
        if token is None:
            return None
        if token.kind in ("ordinal", "number"):
            value = int(re.sub(r"[^0-9]", "", token.text))
            if not 1 <= value <= 31:
                raise self.stop("a day of the month is 1 to 31")
        elif token.text in _ORDINALS:
            value = _ORDINALS[token.text]
        else:
            return None
        self.index += 1
        if value == -1 and self.take("but"):  # "last but one"
            if not self.take("one"):
                raise self.stop()
            value = -2
        return value

    def month_tail(self) -> None:
        """After `of`: `the month`, `every month` or a month name."""
        self.take("the", "every", "each")
        if self.take("month"):
            return
        months = self.month_names()
        if not months:
            raise self.stop("expected a month")
        self.set_months(months)

    def month_date(self) -> bool:
        """`Mar 3`, `March 3rd`, `3 March`, `the 3rd of March`."""
        token, following = self.peek(), self.peek(1)
        if token is None or following is None:
            return False
        if token.text in MONTHS and following.kind in ("number", "ordinal"):
            month, day = MONTHS[token.text], following.text
        elif token.kind in ("number", "ordinal") and following.text in MONTHS:
            month, day = MONTHS[following.text], token.text
        elif (
            token.kind in ("number", "ordinal")
            and following.text == "of"
            and self.word(2) in MONTHS
        ):
            month, day = MONTHS[self.word(2)], token.text
            self.index += 1
        else:
            return False
        number = int(re.sub(r"[^0-9]", "", day))
        if not 1 <= number <= (29 if month == 2 else 30 if month in (4, 6, 9, 11) else 31):
            raise self.stop(f"there is no day {number} in that month")
        self.index += 2
        if not self.draft.freq:
            self.draft.freq = "YEARLY"
        if self.draft.freq != "YEARLY":
            raise self.stop("a date in the year needs 'every year' or 'yearly'")
        self.draft.bymonth.append(month)
        self.draft.bymonthday.append(number)
        return True

    def in_months(self) -> None:
        if self.word() == "the" and self.word(1) in PARTS_OF_DAY:  # "in the morning"
            self.index += 1
            self.clock_times()
            return
        months = self.month_names()
        if not months:
            raise self.stop("expected a month name")
        self.set_months(months)

    def set_months(self, months: tuple[int, ...]) -> None:
        if self.draft.freq not in ("MONTHLY", "YEARLY"):
            raise self.stop("months need 'monthly' or 'every year'")
        self.draft.bymonth.extend(months)

    def month_names(self) -> tuple[int, ...]:
        found: list[int] = []
        end = self.index
        while self.word() in MONTHS:
            found.append(MONTHS[self.word()])
            self.index += 1
            end = self.index
            if not self.separator():
                break
        self.index = end
        return tuple(found)

    def clock_times(self, *, optional: bool = False) -> bool:
        first = self.clock(bare_hours=not optional)
        if first is None:
            if optional:
                return False
            raise self.stop("expected a time such as 9:00, 6pm, noon or midnight")
        times = [first]
        while self.peek() is not None:
            mark = self.index
            if not self.separator():
                break
            self.take("at")
            more = self.clock(bare_hours=True)
            if more is None:
                self.index = mark
                break
            times.append(more)
        self.draft.times.extend(times)
        return True

    def clock(self, *, bare_hours: bool) -> ClockTime | None:
        token = self.peek()
        if token is None:
            return None
        part = read_part_of_day(self.tokens, self.index)
        if isinstance(part, str):
            raise self.stop(part)
        if part is not None:
            self.index += part[1]
            return part[0]
        found = read_clock(token, bare_hours=bare_hours)
        if found is None:
            return None
        if isinstance(found, str):
            raise self.stop(found)
        self.index += 1
        if self.word() in ("sharp", "o'clock", "h", "hrs"):
            self.index += 1
        return found


def read_part_of_day(tokens: list[Token], index: int) -> tuple[ClockTime, int] | str | None:
    """A part of the day at `tokens[index]` and how many tokens it took: `evening` (18:00),
    or with the time it is at, `evening at 7` (19:00: a bare hour after noon's parts is pm)
    or `morning at 7:30`. A string says why it is not a time; None: not a part of the day."""
    part = tokens[index].text if index < len(tokens) else ""
    if part not in PARTS_OF_DAY:
        return None
    if index + 2 < len(tokens) and tokens[index + 1].text in ("at", "@"):
        given = read_clock(tokens[index + 2], bare_hours=True)
        if isinstance(given, str):
            return given
        if given is not None:
            bare = tokens[index + 2].kind == "number"
            if bare and part != "morning" and 1 <= given.hour <= 11:
                given = ClockTime(given.hour + 12, given.minute, given.second)
            return given, 3
    return ClockTime(*PARTS_OF_DAY[part]), 1


def read_clock(token: Token, *, bare_hours: bool) -> ClockTime | str | None:
    """A time of day from one token; a string says why it is not a valid one."""
    if token.text in ("noon", "midday"):
        return ClockTime(12, 0)
    if token.text == "midnight":
        return ClockTime(0, 0)
    if token.kind == "clock":
        match = re.fullmatch(
            r"([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?\s*([ap])?\.?m?\.?", token.text
        )
        assert match is not None
        hour, minute = int(match.group(1)), int(match.group(2))
        second = int(match.group(3)) if match.group(3) else None
        half = match.group(4)
    elif token.kind == "hour_ampm":
        match = re.fullmatch(r"([0-9]{1,2})\s*([ap])\.?m\.?", token.text)
        assert match is not None
        hour, minute, second, half = int(match.group(1)), 0, None, match.group(2)
    elif token.kind == "number" and bare_hours:
        hour, minute, second, half = int(token.text), 0, None, None
    else:
        return None
    if half:
        if not 1 <= hour <= 12:
            return f"{token.text} is not a time: with am/pm the hour is 1 to 12"
        hour = hour % 12 + (12 if half == "p" else 0)
    if hour > 23 or minute > 59 or (second or 0) > 59:
        return f"{token.text} is not a time of day"
    return ClockTime(hour, minute, second)


def _to_rule(draft: _Draft, text: str) -> Rule:
    times = draft.times
    if times and draft.freq in ("HOURLY", "MINUTELY"):
        raise InvalidInput(
            "repeat",
            f"{text.strip()!r}: a time of day does not fit an hourly or minutely repeat; "
            "give the start as `at` instead",
        )
    rule = Rule(
        freq=draft.freq,
        interval=draft.interval,
        bymonth=tuple(draft.bymonth),
        bymonthday=tuple(draft.bymonthday),
        byday=tuple(draft.byday),
    )
    if times:
        minutes = {clock.minute for clock in times}
        seconds = {clock.second for clock in times}
        if len(minutes) > 1 and len({clock.hour for clock in times}) > 1:
            shown = " and ".join(f"{c.hour}:{c.minute:02d}" for c in times)
            raise InvalidInput(
                "repeat", f"times {shown} cannot share one rule: give times with the same minutes"
            )
        rule = replace(
            rule,
            byhour=tuple(clock.hour for clock in times),
            byminute=tuple(minutes),
            bysecond=tuple(s for s in seconds if s is not None),
        )
    return normalise(rule)
