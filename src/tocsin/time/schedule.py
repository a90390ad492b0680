"""Reading `at`, `zone` and `repeat` into a checked Schedule, the one stored form of "when"."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from tocsin.domain import Schedule
from tocsin.errors import InvalidInput
from tocsin.time.expand import instant_of, rings
from tocsin.time.formatting import format_utc
from tocsin.time.phrases import ClockTime, looks_like_rrule, parse_phrase
from tocsin.time.probe import check_can_ring
from tocsin.time.rules import Rule, format_rule, parse_rrule
from tocsin.time.zones import load_zone

# A rule must ring within this many years of its start (or of now); searching further for a
# rule that can never ring would let one request keep a worker busy for seconds.
SEARCH_YEARS = 30
_AT = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})[T ](?P<hour>\d{2}):(?P<minute>\d{2})"
    r"(?::(?P<second>\d{2})(?:[.,](?P<fraction>\d+))?)?"
    r"(?P<offset>Z|[+-]\d{2}:?\d{2})?",
    re.IGNORECASE,
)


def parse_at(text: str) -> datetime:
    """A naive local wall time, or an aware UTC instant when `text` carries Z or an offset.

    Whole seconds only: a non-zero fraction is rejected (`.000`, as JavaScript writes, is fine).
    """
    match = _AT.fullmatch(text.strip())
    if not match:
        raise InvalidInput(
            "at",
            f"{text!r} is not a date and time; give e.g. '2026-10-26T09:00' (local to the zone) "
            "or '2026-10-26T13:00Z'",
        )
    if match["fraction"] and match["fraction"].strip("0"):
        raise InvalidInput("at", f"{text!r} has a fraction of a second; give whole seconds")
    try:
        local = datetime.fromisoformat(
            f"{match['date']}T{match['hour']}:{match['minute']}:{match['second'] or '00'}"
        )
    except ValueError as exc:
        raise InvalidInput("at", f"{text!r} is not a real date and time ({exc})") from None
    offset = match["offset"]
    if offset is None:
        return local
    if offset.upper() == "Z":
        return local.replace(tzinfo=UTC)
    sign = -1 if offset[0] == "-" else 1
    digits = offset[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:])
    if hours > 23 or minutes > 59:
        raise InvalidInput("at", f"{text!r} has an impossible UTC offset {offset}")
    zone = timezone(sign * timedelta(hours=hours, minutes=minutes))
    return local.replace(tzinfo=zone).astimezone(UTC)


def parse_repeat(text: str) -> tuple[Rule, ClockTime | None]:
    """A repeat (RRULE or English phrase) as a checked rule, with the time of day it names."""
    if not text.strip():
        raise InvalidInput(
            "repeat", "repeat is empty; give a phrase such as 'daily 9:00' or an RRULE"
        )
    if looks_like_rrule(text):
        rule = parse_rrule(text)
        return rule, _rule_time(rule)
    phrase = parse_phrase(text)
    return phrase.rule, phrase.time


def normalise_repeat(text: str) -> str:
    """The RRULE body a repeat is stored and shown as."""
    return format_rule(parse_repeat(text)[0])


def _rule_time(rule: Rule) -> ClockTime | None:
    if len(rule.byhour) == 1 and len(rule.byminute) == 1 and len(rule.bysecond) <= 1:
        return ClockTime(
            rule.byhour[0], rule.byminute[0], rule.bysecond[0] if rule.bysecond else None
        )
    return None


def parse_schedule(*, zone: str, at: str | None, repeat: str | None, now: datetime) -> Schedule:
    """Check a reminder's `zone`, `at` and `repeat` and return the Schedule to store.

    Raises InvalidInput naming the field at fault (`zone`, `at` or `repeat`).
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware")
    tz = load_zone(zone)
    if at is None and repeat is None:
        raise InvalidInput("at", "give at, repeat or both")
    moment = parse_at(at) if at is not None else None
    if repeat is None:
        assert moment is not None
        schedule = Schedule(zone=zone, anchor=moment)
        due = instant_of(schedule)
        if due < now:
            raise InvalidInput("at", f"{at!r} ({format_utc(due)}) is in the past")
        return schedule
    rule, clock = parse_repeat(repeat)
    if moment is not None:
        anchor = moment.astimezone(tz).replace(tzinfo=None) if moment.tzinfo else moment
    else:
        today = now.astimezone(tz).replace(tzinfo=None, second=0, microsecond=0)
        anchor = (
            today
            if clock is None
            else today.replace(hour=clock.hour, minute=clock.minute, second=clock.second or 0)
        )
    check_can_ring(rule, anchor)
    schedule = Schedule(zone=zone, anchor=anchor, rule=format_rule(rule))
    _check_rings(schedule, now)
    return schedule


def _check_rings(schedule: Schedule, now: datetime) -> None:
    """A series must ring at or after now, and within SEARCH_YEARS of its start or of now."""
    tz = load_zone(schedule.zone)
    later = max(schedule.anchor, now.astimezone(tz).replace(tzinfo=None))
    room = datetime.max - later
    cap = later + min(timedelta(days=366 * SEARCH_YEARS), room)
    if next(rings(schedule, now, strict=False, cap=cap), None) is None:
        raise InvalidInput(
            "repeat",
            f"{schedule.rule} starting {schedule.anchor.isoformat()} never rings at or after "
            f"now (looked {SEARCH_YEARS} years ahead)",
        )
