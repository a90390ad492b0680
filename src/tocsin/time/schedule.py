"""Reading `at`, `zone` and `repeat` into a checked Schedule, the one stored form of "when"."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache
from zoneinfo import ZoneInfo

from tocsin.domain import Schedule
from tocsin.errors import InvalidInput
from tocsin.time.bounds import check_in_range
from tocsin.time.budget import DEFAULT_SECONDS, expansion_budget
from tocsin.time.expand import instant_of, rings
from tocsin.time.formatting import format_utc
from tocsin.time.oneoff import EXAMPLES, MORNING, resolve_one_off
from tocsin.time.phrases import ClockTime, UnreadPhrase, looks_like_rrule, parse_phrase
from tocsin.time.probe import check_can_ring
from tocsin.time.rules import Rule, format_rule, parse_rrule
from tocsin.time.zones import load_zone

# A rule must ring within this many years of its start (or of now); searching further for a
# rule that can never ring would let one request keep a worker busy for seconds.
SEARCH_YEARS = 30
# Digits are [0-9], never `\d`, which also matches other scripts' digits.
_AT = re.compile(
    r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})[T ](?P<hour>[0-9]{2}):(?P<minute>[0-9]{2})"
    r"(?::(?P<second>[0-9]{2})(?:[.,](?P<fraction>[0-9]+))?)?"
    r"(?P<offset>Z|[+-][0-9]{2}:?[0-9]{2})?",
    re.IGNORECASE,
)
_ISO_DATE_TIME = re.compile(r"\s*[0-9]{4}-[0-9]{2}-[0-9]{2}T", re.IGNORECASE)
_REPEAT_EXAMPLE = "'every Monday at 9:00'"
# A day-matching rule rings within this many years (29 February: 4, or 8 across 2100).
_FIRST_DAY_YEARS = 9


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
    # Checked as a wall time first: turning it into an instant could overflow year 9999.
    check_in_range(local, field="at", text=text)
    offset = match["offset"]
    if offset is None:
        return local
    return check_in_range(_with_offset(local, offset, text), field="at", text=text)


def read_at(text: str, *, zone: ZoneInfo, now: datetime, field: str = "at") -> datetime:
    """`at` as `parse_at` reads it, or a one-off phrase (`tomorrow 9am`, `in 10 minutes`)
    resolved against `now` in `zone` (`tocsin.time.oneoff`): a naive local wall time, or an
    aware UTC instant."""
    if _AT.fullmatch(text.strip()):
        return parse_at(text)
    try:
        return resolve_one_off(text, zone=zone, now=now, field=field)
    except UnreadPhrase:
        if _ISO_DATE_TIME.match(text):
            parse_at(text)  # an ISO 8601 time gone wrong: say what ISO 8601 wants
        raise


def read_when(text: str, *, zone: str, now: datetime) -> tuple[str | None, str | None]:
    """`when` as the `at` or the `repeat` it stands for: a one-off (read by `read_at` and
    resolved now, so the `at` is ISO 8601) or else a repeat (a phrase or an RRULE).

    Raises InvalidInput("when"): of the two readings, the one that understood more says why
    (an UnreadPhrase when neither understood all of it).
    """
    tz = load_zone(zone)
    if not text.strip():
        raise InvalidInput(
            "when", f"when is empty; give a time ({EXAMPLES}) or a repeat ({_REPEAT_EXAMPLE})"
        )
    if looks_like_rrule(text):
        return None, text
    try:
        moment = read_at(text, zone=tz, now=now, field="when")
    except UnreadPhrase as as_one_off:
        try:
            _read_repeat(text)
        except UnreadPhrase as as_repeat:
            raise _unread_when(text, as_one_off, as_repeat) from None
        except InvalidInput as wrong:
            raise InvalidInput("when", wrong.message) from None
        return None, text
    except InvalidInput as wrong:
        raise InvalidInput("when", wrong.message) from None
    if moment.tzinfo is not None:
        return format_utc(moment), None
    return moment.isoformat(timespec="seconds"), None


def _unread_when(text: str, as_one_off: UnreadPhrase, as_repeat: UnreadPhrase) -> UnreadPhrase:
    reached = max(as_one_off.reached, as_repeat.reached)
    if as_repeat.reached > as_one_off.reached:
        return UnreadPhrase("when", as_repeat.message, reached=reached)
    if as_one_off.reached > as_repeat.reached:
        return UnreadPhrase("when", as_one_off.message, reached=reached)
    return UnreadPhrase(
        "when",
        f"could not read {text.strip()!r} as a time or a repeat; give a time ({EXAMPLES}) "
        f"or a repeat ({_REPEAT_EXAMPLE})",
        reached=reached,
    )


def _with_offset(local: datetime, offset: str, text: str) -> datetime:
    if offset.upper() == "Z":
        return local.replace(tzinfo=UTC)
    sign = -1 if offset[0] == "-" else 1
    digits = offset[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:])
    if hours > 23 or minutes > 59:
        raise InvalidInput("at", f"{text!r} has an impossible UTC offset {offset}")
    zone = timezone(sign * timedelta(hours=hours, minutes=minutes))
    return local.replace(tzinfo=zone).astimezone(UTC)


@dataclass(frozen=True, slots=True)
class _Repeat:
    rule: Rule
    clock: ClockTime | None
    text: str  # the canonical RRULE body


@lru_cache(maxsize=4096)
def _read_repeat(text: str) -> _Repeat:
    # Pure and the same for every reminder with this `repeat` (an import has few distinct
    # ones); an unreadable text raises, and exceptions are not cached.
    rule, clock = parse_repeat(text)
    return _Repeat(rule, clock, format_rule(rule))


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
    return _read_repeat(text).text


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
    return plan_schedule(zone=zone, at=at, repeat=repeat, now=now)[0]


def plan_schedule(
    *, zone: str, at: str | None, repeat: str | None, now: datetime
) -> tuple[Schedule, datetime]:
    """`parse_schedule`, and the schedule's first ring (`first_due(schedule, now)`), which
    checking it finds anyway.

    Raises ExpansionBudgetExceeded when the rule needs more work than the active budget (at
    most DEFAULT_SECONDS) to find its first ring and the one after it.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware")
    tz = load_zone(zone)
    if at is None and repeat is None:
        raise InvalidInput("at", "give at, repeat or both")
    moment = read_at(at, zone=tz, now=now) if at is not None else None
    if repeat is None:
        assert moment is not None
        return _one_off(Schedule(zone=zone, anchor=moment), at or "", now)
    read = _read_repeat(repeat)
    with expansion_budget(DEFAULT_SECONDS):
        if moment is None:
            anchor = _series_start(read, zone, now)
        else:
            anchor = moment.astimezone(tz).replace(tzinfo=None) if moment.tzinfo else moment
        return _series_plan(Schedule(zone=zone, anchor=anchor, rule=read.text), read.rule, now)


def _series_start(read: _Repeat, zone: str, now: datetime) -> datetime:
    """Where a series given no `at` starts: today at the time it names — at 09:00 when a
    daily or longer one names none (`every Friday`, `daily`: a reminder for the day, as a
    one-off's day without a time), this minute for an hourly or minutely one. A series with
    an interval starts on its first matching day from now (`every other Tuesday` typed on a
    Friday rings the coming Tuesday, then every two weeks), not in the week, month or year of
    today, which RFC 5545 counts intervals from."""
    rule = read.rule
    clock = read.clock
    by_day = rule.freq not in ("HOURLY", "MINUTELY")
    if clock is None and by_day and not rule.byhour:
        clock = MORNING
    today = now.astimezone(load_zone(zone)).replace(tzinfo=None, second=0, microsecond=0)
    anchor = (
        today
        if clock is None
        else today.replace(hour=clock.hour, minute=clock.minute, second=clock.second or 0)
    )
    if rule.interval == 1 or not by_day:
        return anchor
    every = format_rule(replace(rule, interval=1, count=None, until=None))
    cap = anchor + timedelta(days=366 * _FIRST_DAY_YEARS)
    first = next(
        rings(Schedule(zone=zone, anchor=anchor, rule=every), now, strict=False, cap=cap), None
    )
    if first is None:
        return anchor  # it never rings: checking the rule says so
    day = first.astimezone(load_zone(zone)).date()
    return datetime.combine(day, anchor.time())


def _one_off(schedule: Schedule, at: str, now: datetime) -> tuple[Schedule, datetime]:
    due = check_in_range(instant_of(schedule), field="at", text=at)
    if due < now:
        raise InvalidInput("at", f"{at!r} ({format_utc(due)}) is in the past")
    return schedule, due


def _series_plan(schedule: Schedule, rule: Rule, now: datetime) -> tuple[Schedule, datetime]:
    # First prove the rule can ring at all (bounded work; memoised), because dateutil checks
    # the cap below only when a candidate matches: a rule that never matches would walk on.
    check_can_ring(rule, schedule.anchor)
    first = _first_ring(schedule, now)
    if first is None:
        raise InvalidInput(
            "repeat",
            f"{schedule.rule} starting {schedule.anchor.isoformat()} never rings at or after "
            f"now (looked {SEARCH_YEARS} years ahead)",
        )
    return schedule, first


@lru_cache(maxsize=1024)
def _first_ring(schedule: Schedule, now: datetime) -> datetime | None:
    """The first ring at or after now and the start (`first_due`), within SEARCH_YEARS of
    the later of them, once the ring after it was found within the budget too.

    Memoised: a batch reads every item at one `now`, and its series without `at` that share
    a repeat and a zone are the same schedule (their start is today at the named time).
    """
    tz = load_zone(schedule.zone)
    later = max(schedule.anchor, now.astimezone(tz).replace(tzinfo=None))
    cap = later + min(timedelta(days=366 * SEARCH_YEARS), datetime.max - later)
    found = rings(schedule, now, strict=False, cap=cap)
    first = next(found, None)
    # The scheduler will ask for the ring after this one (`next_after`): finding it must fit
    # the budget too, or a rule could be saved that fails at its first ring. A rule whose
    # first ring is cheap but whose next is decades of minutes away is refused here.
    next(found, None)
    return first
