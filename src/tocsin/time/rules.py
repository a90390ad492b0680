"""RRULE values: reading the RFC 5545 subset Tocsin accepts, checking it, writing it canonically."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum

from tocsin.errors import InvalidInput
from tocsin.time.bounds import LATEST_LOCAL, SPAN

FREQUENCIES = ("YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY", "SECONDLY")
WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
MAX_COUNT = 10_000
MAX_INTERVAL = 10_000
# The order rule parts are written in, so one rule always has one spelling.
PART_ORDER = (
    "FREQ",
    "INTERVAL",
    "COUNT",
    "UNTIL",
    "BYMONTH",
    "BYWEEKNO",
    "BYYEARDAY",
    "BYMONTHDAY",
    "BYDAY",
    "BYHOUR",
    "BYMINUTE",
    "BYSECOND",
    "BYSETPOS",
    "WKST",
)
_INT_LIST_RANGES = {
    "BYMONTH": (1, 12, False),
    "BYWEEKNO": (1, 53, True),
    "BYYEARDAY": (1, 366, True),
    "BYMONTHDAY": (1, 31, True),
    "BYHOUR": (0, 23, False),
    "BYMINUTE": (0, 59, False),
    "BYSECOND": (0, 59, False),
    "BYSETPOS": (1, 366, True),
}
# Digits are [0-9], never `\d`: that also matches '١' (Arabic-Indic), which int() reads.
_INTEGER = re.compile(r"[+-]?[0-9]{1,6}")
_BYDAY_ITEM = re.compile(r"([+-]?[0-9]{1,2})?(MO|TU|WE|TH|FR|SA|SU)")
_UNTIL = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})(?:T([0-9]{2})([0-9]{2})([0-9]{2})(Z)?)?")


class UntilKind(StrEnum):
    """How an UNTIL value was written; each bounds the series differently."""

    DATE = "date"  # through the end of that local day
    LOCAL = "local"  # a local wall time in the reminder's zone
    UTC = "utc"  # an instant


@dataclass(frozen=True, kw_only=True, slots=True)
class Until:
    """The last moment a series may ring at: `value` is naive, except aware UTC for `UTC`."""

    kind: UntilKind
    value: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class Rule:
    """One checked recurrence rule. `byday` holds (ordinal or 0, weekday 0=Monday) pairs."""

    freq: str
    interval: int = 1
    count: int | None = None
    until: Until | None = None
    bymonth: tuple[int, ...] = ()
    byweekno: tuple[int, ...] = ()
    byyearday: tuple[int, ...] = ()
    bymonthday: tuple[int, ...] = ()
    byday: tuple[tuple[int, int], ...] = ()
    byhour: tuple[int, ...] = ()
    byminute: tuple[int, ...] = ()
    bysecond: tuple[int, ...] = ()
    bysetpos: tuple[int, ...] = ()
    wkst: int = 0


def _bad(message: str) -> InvalidInput:
    return InvalidInput("repeat", message)


def parse_rrule(text: str) -> Rule:
    """Read an RRULE (`RRULE:` prefix optional, case-insensitive); raise InvalidInput("repeat")."""
    body = text.strip()
    if body.upper().startswith("RRULE:"):
        body = body[len("RRULE:") :]
    _reject_other_properties(body)
    parts: dict[str, str] = {}
    for chunk in (piece.strip() for piece in body.split(";")):
        if not chunk:
            continue
        name, sep, value = chunk.partition("=")
        name = name.strip().upper()
        if not sep or not value.strip():
            raise _bad(f"rule part {chunk!r} has no value (write NAME=VALUE)")
        if name not in PART_ORDER:
            raise _bad(f"unknown rule part {name!r}; known parts: {', '.join(PART_ORDER)}")
        if name in parts:
            raise _bad(f"rule part {name} is given twice")
        parts[name] = value.strip().upper()
    if "FREQ" not in parts:
        raise _bad("an RRULE needs FREQ (e.g. FREQ=WEEKLY;BYDAY=MO)")
    rule = _build(parts)
    check_rule(rule)
    return rule


def _reject_other_properties(body: str) -> None:
    upper = body.upper()
    if "\n" in body or "\r" in body:
        raise _bad("give one RRULE on one line, without DTSTART, RDATE or EXDATE lines")
    for name, why in (
        ("DTSTART", "the start is taken from `at`; remove DTSTART from the rule"),
        ("EXDATE", "EXDATE is not supported; a repeat is a single RRULE"),
        ("RDATE", "RDATE is not supported; a repeat is a single RRULE"),
        ("EXRULE", "EXRULE is not supported; a repeat is a single RRULE"),
    ):
        if re.search(rf"(^|[;:\s]){name}\b", upper):
            raise _bad(why)


def _build(parts: dict[str, str]) -> Rule:
    freq = parts["FREQ"]
    if freq not in FREQUENCIES:
        raise _bad(f"FREQ={freq} is not a frequency; use one of {', '.join(FREQUENCIES[:-1])}")
    lists = {
        name.lower(): _int_list(name, parts[name]) for name in _INT_LIST_RANGES if name in parts
    }
    return Rule(
        freq=freq,
        interval=_bounded_int("INTERVAL", parts.get("INTERVAL", "1"), 1, MAX_INTERVAL),
        count=_bounded_int("COUNT", parts["COUNT"], 1, MAX_COUNT) if "COUNT" in parts else None,
        until=parse_until(parts["UNTIL"]) if "UNTIL" in parts else None,
        byday=_byday(parts["BYDAY"]) if "BYDAY" in parts else (),
        wkst=_weekday("WKST", parts["WKST"]) if "WKST" in parts else 0,
        **lists,
    )


def _bounded_int(name: str, value: str, low: int, high: int) -> int:
    if not _INTEGER.fullmatch(value) or not low <= int(value) <= high:
        raise _bad(f"{name}={value} must be a whole number from {low} to {high:,}")
    return int(value)


def _int_list(name: str, value: str) -> tuple[int, ...]:
    low, high, negatives = _INT_LIST_RANGES[name]
    span = f"{low} to {high}" + (f" or -{high} to -1" if negatives else "")
    found: set[int] = set()
    for item in value.split(","):
        item = item.strip()
        number = int(item) if _INTEGER.fullmatch(item) else None
        if number is None or not (low <= number <= high or (negatives and -high <= number <= -1)):
            raise _bad(f"{name} value {item!r} is out of range ({span})")
        found.add(number)
    return tuple(sorted(found))


def _weekday(name: str, value: str) -> int:
    if value not in WEEKDAYS:
        raise _bad(f"{name}={value} is not a weekday ({', '.join(WEEKDAYS)})")
    return WEEKDAYS.index(value)


def _byday(value: str) -> tuple[tuple[int, int], ...]:
    found: set[tuple[int, int]] = set()
    for item in value.split(","):
        match = _BYDAY_ITEM.fullmatch(item.strip())
        if not match:
            raise _bad(f"BYDAY value {item!r} is not a weekday such as MO, 2TU or -1FR")
        ordinal = int(match.group(1)) if match.group(1) else 0
        if match.group(1) and not 1 <= abs(ordinal) <= 53:
            raise _bad(f"BYDAY value {item!r}: the ordinal must be 1 to 53 or -53 to -1")
        found.add((ordinal, WEEKDAYS.index(match.group(2))))
    return tuple(sorted(found, key=lambda pair: (pair[1], pair[0])))


def parse_until(value: str) -> Until:
    """Read UNTIL: a date (`20271231`), a local time (`20271231T090000`) or UTC (`…Z`)."""
    match = _UNTIL.fullmatch(value.strip().upper())
    if not match:
        raise _bad(f"UNTIL={value} must be YYYYMMDD, YYYYMMDDTHHMMSS or YYYYMMDDTHHMMSSZ")
    year, month, day, hour, minute, second = (int(g) if g else None for g in match.groups()[:6])
    assert year is not None
    assert month is not None
    assert day is not None
    try:
        if hour is None or minute is None or second is None:
            return _in_range(Until(kind=UntilKind.DATE, value=datetime(year, month, day)), value)
        moment = datetime(year, month, day, hour, minute, second)
    except ValueError as exc:
        raise _bad(f"UNTIL={value} is not a real date or time ({exc})") from None
    if match.group(7):
        return _in_range(Until(kind=UntilKind.UTC, value=moment.replace(tzinfo=UTC)), value)
    return _in_range(Until(kind=UntilKind.LOCAL, value=moment), value)


def _in_range(until: Until, text: str) -> Until:
    # Past LATEST no series rings anyway, and near the end of year 9999 an UNTIL in UTC
    # cannot be turned into a wall time (or one a day later) without overflowing.
    if until.value.replace(tzinfo=None) > LATEST_LOCAL:
        raise _bad(
            f"UNTIL={text} is after {LATEST_LOCAL:%Y-%m-%d}, the last day Tocsin rings on "
            f"(times run {SPAN}); leave UNTIL out for a series without end"
        )
    return until


_Check = Callable[[Rule], str | None]


def _ordinals_need_period(rule: Rule) -> str | None:
    ordinals = [n for n, _ in rule.byday if n]
    if not ordinals:
        return None
    if rule.freq not in ("MONTHLY", "YEARLY") or rule.byweekno:
        return "BYDAY ordinals (2MO, -1FR) only go with FREQ=MONTHLY, or YEARLY without BYWEEKNO"
    # RFC 5545: with BYMONTH, a YEARLY rule's ordinals count within the month too.
    if (rule.freq == "MONTHLY" or rule.bymonth) and any(abs(n) > 5 for n in ordinals):
        within = "FREQ=MONTHLY" if rule.freq == "MONTHLY" else "FREQ=YEARLY and BYMONTH"
        return f"with {within} a BYDAY ordinal is 1 to 5 or -5 to -1 (it counts in the month)"
    return None


def _frequency_parts(rule: Rule) -> str | None:
    if rule.bymonthday and rule.freq == "WEEKLY":
        return "BYMONTHDAY does not go with FREQ=WEEKLY"
    if rule.byyearday and rule.freq in ("DAILY", "WEEKLY", "MONTHLY"):
        return f"BYYEARDAY does not go with FREQ={rule.freq}"
    if rule.byweekno and rule.freq != "YEARLY":
        return "BYWEEKNO only goes with FREQ=YEARLY"
    return None


def _set_position(rule: Rule) -> str | None:
    others = (rule.bymonth, rule.byweekno, rule.byyearday, rule.bymonthday, rule.byday)
    timed = (rule.byhour, rule.byminute, rule.bysecond)
    if rule.bysetpos and not any(others + timed):
        return "BYSETPOS needs another BYxxx part to choose from"
    return None


def _count_or_until(rule: Rule) -> str | None:
    if rule.count is not None and rule.until is not None:
        return "give COUNT or UNTIL, not both"
    return None


def _rate(rule: Rule) -> str | None:
    if rule.freq == "SECONDLY":
        return "FREQ=SECONDLY rings more often than once a minute; the limit is once a minute"
    if len(rule.bysecond) > 1:
        return "several BYSECOND values ring more than once a minute; the limit is once a minute"
    return None


_CHECKS: tuple[_Check, ...] = (
    _rate,
    _ordinals_need_period,
    _frequency_parts,
    _set_position,
    _count_or_until,
)


def check_rule(rule: Rule) -> None:
    """Raise InvalidInput("repeat") when parts contradict RFC 5545 or Tocsin's limits."""
    for check in _CHECKS:
        problem = check(rule)
        if problem:
            raise _bad(problem)


def format_rule(rule: Rule) -> str:
    """The canonical RRULE body: parts in PART_ORDER, values sorted, defaults left out."""
    parts = [f"FREQ={rule.freq}"]
    if rule.interval != 1:
        parts.append(f"INTERVAL={rule.interval}")
    if rule.count is not None:
        parts.append(f"COUNT={rule.count}")
    if rule.until is not None:
        parts.append(f"UNTIL={format_until(rule.until)}")
    for name in ("BYMONTH", "BYWEEKNO", "BYYEARDAY", "BYMONTHDAY"):
        values: tuple[int, ...] = getattr(rule, name.lower())
        if values:
            parts.append(f"{name}={','.join(map(str, values))}")
    if rule.byday:
        days = ",".join(f"{n or ''}{WEEKDAYS[day]}" for n, day in rule.byday)
        parts.append(f"BYDAY={days}")
    for name in ("BYHOUR", "BYMINUTE", "BYSECOND", "BYSETPOS"):
        values = getattr(rule, name.lower())
        if values:
            parts.append(f"{name}={','.join(map(str, values))}")
    if rule.wkst:
        parts.append(f"WKST={WEEKDAYS[rule.wkst]}")
    return ";".join(parts)


def format_until(until: Until) -> str:
    if until.kind is UntilKind.DATE:
        return until.value.strftime("%Y%m%d")
    if until.kind is UntilKind.UTC:
        return until.value.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return until.value.strftime("%Y%m%dT%H%M%S")


def normalise(rule: Rule) -> Rule:
    """The same rule with its lists sorted and deduplicated (phrases build rules by hand)."""
    return replace(
        rule,
        bymonth=tuple(sorted(set(rule.bymonth))),
        bymonthday=tuple(sorted(set(rule.bymonthday))),
        byday=tuple(sorted(set(rule.byday), key=lambda pair: (pair[1], pair[0]))),
        byhour=tuple(sorted(set(rule.byhour))),
        byminute=tuple(sorted(set(rule.byminute))),
        bysecond=tuple(sorted(set(rule.bysecond))),
    )
