"""Occurrences: a schedule's local wall-time series, mapped to UTC instants by the DST rules."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from itertools import islice
from typing import Any, Literal
from zoneinfo import ZoneInfo

from dateutil import rrule as dr

from tocsin.domain import Schedule
from tocsin.errors import InvalidInput
from tocsin.time.alerts import merged, nags_of
from tocsin.time.bounds import LATEST, LATEST_LOCAL
from tocsin.time.budget import DEFAULT_SECONDS, BudgetedRRule, expansion_budget
from tocsin.time.rules import Rule, UntilKind, parse_rrule
from tocsin.time.zones import gap_before, load_zone

MAX_PREVIEW = 100
# dateutil's frequency constants, YEARLY (0) to SECONDLY (6).
Frequency = Literal[0, 1, 2, 3, 4, 5, 6]
FREQUENCY: dict[str, Frequency] = {
    "YEARLY": dr.YEARLY,
    "MONTHLY": dr.MONTHLY,
    "WEEKLY": dr.WEEKLY,
    "DAILY": dr.DAILY,
    "HOURLY": dr.HOURLY,
    "MINUTELY": dr.MINUTELY,
}
# A UTC UNTIL is compared with instants; the local series is cut a day after its wall time so
# that a fold or gap next to it cannot hide an occurrence that still rings before it.
_UNTIL_SLACK = timedelta(days=1)
# How long one period of each frequency lasts at most: `latest_rings` looks back over as
# many as it wants rings (and one more) first, which holds them unless the rule skips periods.
_PERIOD: dict[int, timedelta] = {
    dr.YEARLY: timedelta(days=366),
    dr.MONTHLY: timedelta(days=31),
    dr.WEEKLY: timedelta(days=7),
    dr.DAILY: timedelta(days=1),
    dr.HOURLY: timedelta(hours=1),
    dr.MINUTELY: timedelta(minutes=1),
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Occurrence:
    """One ring: the instant (aware UTC) and the wall time it shows in the zone (aware)."""

    at: datetime
    local: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class _Series:
    """A repeating schedule made ready to expand: every BYxxx part explicit."""

    zone: ZoneInfo
    anchor: datetime  # naive local: DTSTART
    freq: Frequency
    interval: int
    wkst: int
    options: dict[str, Any]  # dateutil keyword arguments, missing parts filled from the anchor
    until_local: datetime | None  # last local wall time the series may produce
    until_utc: datetime | None  # last instant it may ring at (UNTIL given in UTC)


def _utc_of(local: datetime, zone: ZoneInfo) -> datetime:
    # fold=0 is the earlier offset: an ambiguous time gets its first instant, and a time in a
    # gap is read with the pre-gap offset, which lands it `gap` later on the clock.
    return local.replace(tzinfo=zone, fold=0).astimezone(UTC)


def instant_of(schedule: Schedule) -> datetime:
    """A one-off's ring instant (aware UTC)."""
    if schedule.anchor.tzinfo is not None:
        return schedule.anchor.astimezone(UTC)
    return _utc_of(schedule.anchor, load_zone(schedule.zone))


@lru_cache(maxsize=8192)
def _rule(text: str) -> Rule:
    return parse_rrule(text)


@lru_cache(maxsize=65536)
def _series(rule_text: str, anchor: datetime, zone_name: str) -> _Series:
    rule = _rule(rule_text)
    zone = load_zone(zone_name)
    if anchor.tzinfo is not None:
        anchor = anchor.astimezone(zone).replace(tzinfo=None)
    options = rrule_options(rule, anchor)
    freq = FREQUENCY[rule.freq]
    until_local, until_utc = _bounds(rule, zone)
    if rule.count is not None:
        counted = BudgetedRRule(
            freq, dtstart=anchor, interval=rule.interval, count=rule.count, **options
        )
        last = deque(counted, maxlen=1)
        # The COUNT-th local occurrence bounds the series exactly, which lets COUNT rules skip
        # ahead like UNTIL rules instead of counting from the anchor on every call.
        until_local = last[0] if last else anchor - timedelta(seconds=1)
    return _Series(
        zone=zone,
        anchor=anchor,
        freq=freq,
        interval=rule.interval,
        wkst=rule.wkst,
        options=options,
        until_local=until_local,
        until_utc=until_utc,
    )


def _bounds(rule: Rule, zone: ZoneInfo) -> tuple[datetime | None, datetime | None]:
    until = rule.until
    if until is None:
        return None, None
    if until.kind is UntilKind.DATE:
        return datetime.combine(until.value.date(), time(23, 59, 59)), None
    if until.kind is UntilKind.LOCAL:
        return until.value, None
    wall = until.value.astimezone(zone).replace(tzinfo=None)
    return wall + _UNTIL_SLACK, until.value


def rrule_options(rule: Rule, anchor: datetime) -> dict[str, Any]:
    """dateutil arguments with RFC 5545's defaults from DTSTART written out.

    Written out, they no longer depend on dtstart, so expansion may start at any later period
    boundary and still produce the same series.
    """
    bymonth: tuple[int, ...] | None = rule.bymonth or None
    bymonthday: tuple[int, ...] | None = rule.bymonthday or None
    byday: list[dr.weekday] | None = [dr.weekday(d, n or None) for n, d in rule.byday] or None
    if not (rule.byweekno or rule.byyearday or rule.bymonthday or rule.byday):
        if rule.freq == "YEARLY":
            bymonth = bymonth or (anchor.month,)
            bymonthday = (anchor.day,)
        elif rule.freq == "MONTHLY":
            bymonthday = (anchor.day,)
        elif rule.freq == "WEEKLY":
            byday = [dr.weekday(anchor.weekday())]
    sub_daily = rule.freq in ("HOURLY", "MINUTELY")
    return {
        "wkst": rule.wkst,
        "bysetpos": rule.bysetpos or None,
        "bymonth": bymonth,
        "bymonthday": bymonthday,
        "byyearday": rule.byyearday or None,
        "byweekno": rule.byweekno or None,
        "byweekday": byday,
        "byhour": rule.byhour or (None if sub_daily else (anchor.hour,)),
        "byminute": rule.byminute or (None if rule.freq == "MINUTELY" else (anchor.minute,)),
        "bysecond": rule.bysecond or (anchor.second,),
    }


def _period_start(series: _Series, lower: datetime) -> datetime:
    """The latest start of a whole INTERVAL-aligned period that is at or before `lower`.

    Starting the expansion there yields exactly the series' occurrences from that period on:
    BYSETPOS, BYWEEKNO and WKST all work within whole periods.
    """
    anchor, n = series.anchor, series.interval
    if series.freq == dr.YEARLY:
        k = (lower.year - anchor.year) // n * n
        return datetime(anchor.year + k, 1, 1)
    if series.freq == dr.MONTHLY:
        months = (lower.year - anchor.year) * 12 + lower.month - anchor.month
        index = anchor.year * 12 + anchor.month - 1 + months // n * n
        return datetime(index // 12, index % 12 + 1, 1)
    if series.freq == dr.WEEKLY:
        first = _week_start(anchor.date(), series.wkst)
        weeks = (_week_start(lower.date(), series.wkst) - first).days // 7
        return datetime.combine(first + timedelta(weeks=weeks // n * n), time())
    unit = {dr.DAILY: 86400, dr.HOURLY: 3600, dr.MINUTELY: 60}[series.freq]
    base = _floor(anchor, unit)
    steps = int((lower - base).total_seconds()) // unit
    return base + timedelta(seconds=steps // n * n * unit)


def _week_start(day: date, wkst: int) -> date:
    return day - timedelta(days=(day.weekday() - wkst) % 7)


def _floor(moment: datetime, unit: int) -> datetime:
    if unit == 86400:
        return datetime.combine(moment.date(), time())
    if unit == 3600:
        return moment.replace(minute=0, second=0, microsecond=0)
    return moment.replace(second=0, microsecond=0)


def _local_series(series: _Series, lower: datetime, cap: datetime | None) -> Iterable[datetime]:
    """The local occurrences from the period holding `lower` (or from the anchor) onwards."""
    start = series.anchor
    if lower > series.anchor:
        boundary = _period_start(series, lower)
        if boundary > series.anchor:
            start = boundary
    until = _earliest(series.until_local, cap)
    if until < start:
        return ()
    return BudgetedRRule(
        series.freq, dtstart=start, interval=series.interval, until=until, **series.options
    )


def _past_end(series: _Series, instant: datetime) -> bool:
    return instant > LATEST or (series.until_utc is not None and instant > series.until_utc)


def _earliest(until: datetime | None, cap: datetime | None) -> datetime:
    """Where the local series stops: its UNTIL, the caller's cap, or the end of the calendar
    Tocsin handles (a wall time a day past LATEST still converts to an instant safely)."""
    bounds = [LATEST_LOCAL + timedelta(days=1)]
    bounds += [bound for bound in (until, cap) if bound is not None]
    return min(bounds)


def _instants(locals_: Iterable[datetime], zone: ZoneInfo) -> Iterator[datetime]:
    """Map local occurrences to strictly increasing, distinct UTC instants.

    A time in a gap rings as the wall time `gap` later, which may come after local occurrences
    that follow it (02:45 → 03:45 rings after 03:00): it waits in a heap until the local
    series has passed its shifted wall time.
    """
    waiting: list[tuple[datetime, datetime]] = []
    last: datetime | None = None
    for local in locals_:
        instant = _utc_of(local, zone)
        wall = instant.astimezone(zone).replace(tzinfo=None)
        if wall == local and not waiting:
            if last is None or instant > last:
                last = instant
                yield instant
            continue
        heapq.heappush(waiting, (instant, wall))
        while waiting and waiting[0][1] <= local:
            ready, _ = heapq.heappop(waiting)
            if last is None or ready > last:
                last = ready
                yield ready
    for ready, _ in sorted(waiting):
        if last is None or ready > last:
            last = ready
            yield ready


def rings(
    schedule: Schedule, lower: datetime, *, strict: bool, cap: datetime | None = None
) -> Iterator[datetime]:
    """The schedule's rings after `lower` (`strict`) or at/after it, as aware UTC instants:
    its occurrences and, when it has alerts, theirs (`tocsin.time.alerts`).

    `cap` (naive local) stops the search there; the public functions never cap, and
    `parse_schedule` does so that a rule that never rings cannot run for long.
    """
    lower = lower.astimezone(UTC)
    if schedule.plain:
        return _occurrences(schedule, lower, strict=strict, cap=cap)
    found = _occurrences(schedule, lower, strict=strict, cap=cap)
    before = _last_occurrence(schedule, lower) if schedule.nags else None
    zone = load_zone(schedule.zone)
    nag, nags = schedule.nag, schedule.nags
    return merged(
        found, schedule.alerts, zone, lower, strict=strict, nag=nag, nags=nags, before=before
    )


def _occurrences_only(schedule: Schedule) -> Schedule:
    """The schedule's occurrences alone: no alerts, no nags."""
    return replace(schedule, alerts=(), nag=0, nags=0)


def _last_occurrence(schedule: Schedule, instant: datetime) -> datetime | None:
    """The last occurrence at or before `instant` whose nags could reach past it."""
    reach = timedelta(seconds=schedule.nag * schedule.nags)
    found = None
    for occurrence in _occurrences(schedule, instant - reach, strict=False, cap=None):
        if occurrence > instant:
            break
        found = occurrence
    return found


def _occurrences(
    schedule: Schedule, lower: datetime, *, strict: bool, cap: datetime | None
) -> Iterator[datetime]:
    """`rings` without alerts: the occurrences alone."""
    if schedule.rule is None:
        instant = instant_of(schedule)
        if instant > lower or (instant == lower and not strict):
            yield instant
        return
    series = _series(schedule.rule, schedule.anchor, schedule.zone)
    if series.until_utc is not None and lower > series.until_utc:
        return
    wall = lower.astimezone(series.zone).replace(tzinfo=None)
    start = wall - gap_before(series.zone, lower)
    for instant in _instants(_local_series(series, start, cap), series.zone):
        if _past_end(series, instant):
            return
        if instant > lower or (instant == lower and not strict):
            yield instant


def naive_rings(schedule: Schedule, cap: datetime | None = None) -> Iterator[datetime]:
    """Every ring from the anchor on (to `cap`, naive local), the slow plain way: what the fast
    path must agree with."""
    if schedule.rule is None:
        yield instant_of(schedule)
        return
    series = _series(schedule.rule, schedule.anchor, schedule.zone)
    until = _earliest(series.until_local, cap)
    local = BudgetedRRule(
        series.freq, dtstart=series.anchor, interval=series.interval, until=until, **series.options
    )
    for instant in _instants(local, series.zone):
        if _past_end(series, instant):
            return
        yield instant


def _aware(moment: datetime, name: str) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware, got {moment!r}")
    return moment


def first_due(schedule: Schedule, now: datetime) -> datetime | None:
    """The first ring at or after both the anchor and `now` (aware UTC), or None.

    Raises ExpansionBudgetExceeded when finding it needs more CPU time than the active
    budget (`tocsin.time.budget`; at most DEFAULT_SECONDS).
    """
    if schedule.rule is None and schedule.plain:  # a one-off: nothing to expand
        instant = instant_of(schedule)
        return instant if instant >= _aware(now, "now") else None
    with expansion_budget(DEFAULT_SECONDS):
        return next(rings(schedule, _aware(now, "now"), strict=False), None)


def next_after(schedule: Schedule, instant: datetime) -> datetime | None:
    """The first ring strictly after `instant` (aware UTC), or None when the series is over.

    Raises ExpansionBudgetExceeded (`tocsin.errors`) when finding it needs more CPU time than
    the active budget, at most DEFAULT_SECONDS (1 s): the rule rings too rarely for how
    finely it must be walked. The claim path should record that reminder as failed; the
    same call would spend the same budget again.
    """
    with expansion_budget(DEFAULT_SECONDS):
        return next(rings(schedule, _aware(instant, "instant"), strict=True), None)


def latest_rings(schedule: Schedule, start: datetime, upto: datetime, count: int) -> list[datetime]:
    """The schedule's last `count` rings from `start` to `upto` (both included), newest first.

    A reader finds a reminder's newest ring among these (`tocsin.store.looking`): its rings
    are kept in due order, with no index by reminder, so it must know where to look. The
    search looks back from `upto` over `count` periods of the rule, then a window eight
    times wider each round while it found fewer, never from the anchor, so a series that has
    rung for years costs what a young one does.

    Raises ExpansionBudgetExceeded when finding them needs more CPU time than the active
    budget (at most DEFAULT_SECONDS).
    """
    start = _aware(start, "start").astimezone(UTC)
    upto = _aware(upto, "upto").astimezone(UTC)
    if count < 1 or upto < start:
        return []
    window = upto - start  # a one-off's rings are few: all of them at once
    if schedule.rule is not None:
        series = _series(schedule.rule, schedule.anchor, schedule.zone)
        window = _PERIOD[series.freq] * series.interval * (count + 1)
    with expansion_budget(DEFAULT_SECONDS):
        while True:
            lower = max(start, upto - window)
            found: deque[datetime] = deque(maxlen=count)
            for ring in rings(schedule, lower, strict=False):
                if ring > upto:
                    break
                found.append(ring)
            if len(found) == count or lower == start:
                return list(reversed(found))
            window *= 8


def occurrence_from(schedule: Schedule, instant: datetime) -> datetime | None:
    """The occurrence a ring at `instant` is for: itself, the occurrence before it when it is
    one of that one's nags, else the first occurrence after it (an alert comes before it)."""
    instant = _aware(instant, "instant").astimezone(UTC)
    with expansion_budget(DEFAULT_SECONDS):
        after = next(rings(_occurrences_only(schedule), instant, strict=False), None)
        if after == instant or not schedule.nags:
            return after
        # No occurrence lies between the last one at or before `instant` and `after`: `after`
        # is the one its nags end before.
        before = _last_occurrence(schedule, instant)
        if before is not None and instant in nags_of(before, schedule.nag, schedule.nags, after):
            return before
        return after


def _nags_after(schedule: Schedule, occurrence: datetime) -> list[datetime]:
    following = next(rings(_occurrences_only(schedule), occurrence, strict=True), None)
    return nags_of(occurrence, schedule.nag, schedule.nags, following)


def after_done(
    schedule: Schedule, rung: datetime, waiting: datetime
) -> tuple[bool, datetime | None]:
    """What marking the ring at `rung` done changes when the ring at `waiting` is the one
    that waits: (False, None) when `waiting` is no nag of `rung`'s occurrence (nothing to
    stop), else (True, the first ring after that occurrence's nags, None when there is
    none)."""
    if not schedule.nags:
        return False, None
    with expansion_budget(DEFAULT_SECONDS):
        occurrence = occurrence_from(schedule, rung)
        if occurrence is None:
            return False, None
        nagging = set(_nags_after(schedule, occurrence))
        if _aware(waiting, "waiting").astimezone(UTC) not in nagging:
            return False, None
        later = (ring for ring in rings(schedule, waiting, strict=False) if ring not in nagging)
        return True, next(later, None)


def occurrences(schedule: Schedule, start: datetime, count: int) -> list[Occurrence]:
    """The next `count` (1 to 100) rings at or after `start` and the anchor.

    Raises ExpansionBudgetExceeded when finding them all needs more CPU time than the
    active budget (at most DEFAULT_SECONDS).
    """
    if not 1 <= count <= MAX_PREVIEW:
        raise InvalidInput("count", f"count must be from 1 to {MAX_PREVIEW}, got {count}")
    zone = load_zone(schedule.zone)
    with expansion_budget(DEFAULT_SECONDS):
        found = list(islice(rings(schedule, _aware(start, "start"), strict=False), count))
    return [Occurrence(at=at, local=at.astimezone(zone)) for at in found]
