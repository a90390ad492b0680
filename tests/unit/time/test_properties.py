"""Property tests: random zones, rules and instants against a plain, independent expansion."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

from dateutil import rrule as dr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tocsin.domain import Schedule
from tocsin.errors import InvalidInput
from tocsin.time import load_zone, next_after, occurrences, zone_names
from tocsin.time.expand import latest_rings, naive_rings, rings
from tocsin.time.probe import check_can_ring
from tocsin.time.rules import WEEKDAYS, Rule, UntilKind, format_rule, parse_rrule

AREAS = ("Africa", "America", "Antarctica", "Asia", "Atlantic", "Australia", "Europe", "Indian",
         "Pacific")  # fmt: skip
ZONES = sorted(name for name in zone_names() if name.split("/")[0] in AREAS)
ODD = ["America/New_York", "Australia/Lord_Howe", "Pacific/Apia", "Europe/Dublin",
       "Asia/Kathmandu", "America/Sao_Paulo", "Pacific/Kiritimati", "Antarctica/Casey"]  # fmt: skip
# How far past the anchor each frequency may look, so the plain expansion stays quick.
REACH = {"MINUTELY": 3, "HOURLY": 60, "DAILY": 700, "WEEKLY": 3000, "MONTHLY": 9000,
         "YEARLY": 20000}  # fmt: skip
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def small_sets(low: int, high: int, size: int = 3) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(st.integers(low, high), min_size=1, max_size=size, unique=True).map(
        lambda xs: tuple(sorted(xs))
    )


@st.composite
def rules(draw: st.DrawFn) -> Rule:
    freq = draw(st.sampled_from(list(REACH)))
    interval = draw(st.integers(1, 45 if freq == "MINUTELY" else 4))
    parts: dict[str, tuple[int, ...]] = {}
    maybe = st.booleans()
    if draw(maybe):
        parts["bymonth"] = draw(small_sets(1, 12, 4))
    if freq in ("YEARLY", "MONTHLY", "DAILY", "HOURLY", "MINUTELY") and draw(maybe):
        days = st.integers(1, 31) | st.integers(-31, -1)
        parts["bymonthday"] = tuple(sorted(set(draw(st.lists(days, min_size=1, max_size=3)))))
    byday: tuple[tuple[int, int], ...] = ()
    if draw(maybe):
        ordinal = st.sampled_from([0, 1, 2, -1]) if freq in ("MONTHLY", "YEARLY") else st.just(0)
        pairs = st.lists(st.tuples(ordinal, st.integers(0, 6)), min_size=1, max_size=3)
        byday = tuple(sorted(set(draw(pairs)), key=lambda p: (p[1], p[0])))
    if freq == "YEARLY" and draw(st.integers(0, 5)) == 0:
        parts["byweekno"] = draw(small_sets(1, 53, 2))
        byday = tuple((0, day) for _, day in byday)
    if freq in ("DAILY", "WEEKLY", "MONTHLY", "YEARLY") and draw(maybe):
        parts["byhour"] = draw(small_sets(0, 23))
    if freq != "MINUTELY" and draw(maybe):
        parts["byminute"] = draw(small_sets(0, 59, 2))
    if draw(st.integers(0, 4)) == 0:
        parts["bysecond"] = (draw(st.integers(0, 59)),)
    chosen = any(parts.values()) or byday
    if chosen and freq in ("MONTHLY", "YEARLY", "WEEKLY") and draw(st.integers(0, 3)) == 0:
        parts["bysetpos"] = (draw(st.sampled_from([1, 2, -1])),)
    count = draw(st.none() | st.integers(1, 40)) if draw(st.integers(0, 3)) == 0 else None
    return replace(
        Rule(freq=freq, interval=interval, count=count, byday=byday),
        wkst=draw(st.sampled_from([0, 0, 6])),
        **parts,  # type: ignore[arg-type]
    )


anchors = st.datetimes(min_value=datetime(1995, 1, 1), max_value=datetime(2045, 1, 1)).map(
    lambda moment: moment.replace(microsecond=0)
)


def oracle(schedule: Schedule, rule: Rule, until: datetime) -> list[datetime]:
    """The rule expanded by dateutil from its own RRULE text, then mapped with fold=0: no fast
    path, no explicit defaults, no heap. Sorted and deduplicated instants up to `until` (local)."""
    zone = load_zone(schedule.zone)
    text = format_rule(rule)
    local = dr.rrulestr(text, dtstart=schedule.anchor)
    instants = set()
    for moment in local:
        if moment > until:
            break
        instants.add(moment.replace(tzinfo=zone).astimezone(UTC))
    return sorted(instants)


def schedule_for(rule: Rule, zone: str, anchor: datetime) -> Schedule | None:
    try:
        parse_rrule(format_rule(rule))  # only rules Tocsin accepts
        check_can_ring(rule, anchor)  # dateutil would walk to year 9999 looking for a ring
    except InvalidInput:
        return None
    return Schedule(zone=zone, anchor=anchor, rule=format_rule(rule))


@SETTINGS
@given(rule=rules(), zone=st.sampled_from(ZONES) | st.sampled_from(ODD), anchor=anchors,
       data=st.data())  # fmt: skip
def test_rings_match_plain_expansion(
    rule: Rule, zone: str, anchor: datetime, data: st.DataObject
) -> None:
    schedule = schedule_for(rule, zone, anchor)
    if schedule is None:
        return
    reach = timedelta(days=REACH[rule.freq])
    window_end = anchor + reach
    expected = oracle(schedule, rule, window_end)
    tz = load_zone(zone)  # the tzdata Tocsin ships, not the host's (they differ)
    start_local = data.draw(
        st.datetimes(min_value=anchor - timedelta(days=2), max_value=window_end)
    )
    start = start_local.replace(tzinfo=tz).astimezone(UTC)
    # Only the part of the window the oracle covers for sure: local end less a day of slack.
    horizon = (window_end - timedelta(days=2)).replace(tzinfo=tz).astimezone(UTC)
    fast = [at for at in rings(schedule, start, strict=False, cap=window_end) if at <= horizon]
    want = [at for at in expected if start <= at <= horizon]
    assert fast == want
    plain = [at for at in naive_rings(schedule, cap=window_end) if start <= at <= horizon]
    assert plain == want
    assert all(a < b for a, b in pairwise(fast))
    for at in fast[:20]:
        _check_local_fields(at, schedule, tz)
    for before, after in pairwise(fast[:21]):
        assert next(rings(schedule, before, strict=True), None) == after


def _check_local_fields(at: datetime, schedule: Schedule, tz: ZoneInfo) -> None:
    """The ring shows a wall time the rule names, or one the documented gap shift produced."""
    shown = at.astimezone(tz).replace(tzinfo=None)
    local = dr.rrulestr(str(schedule.rule), dtstart=schedule.anchor)
    if shown in _near(local, shown):
        return
    # Otherwise some occurrence before it fell in a gap and moved forward by the gap's size.
    for moment in _near(local, shown):
        moved = moment.replace(tzinfo=tz, fold=0).astimezone(UTC)
        if moved == at:
            assert moved.astimezone(tz).replace(tzinfo=None) != moment  # it was in a gap
            return
    raise AssertionError(f"{at} ({shown} local) is not an occurrence of {schedule}")


def _near(local: dr.rrule | dr.rruleset, shown: datetime) -> list[datetime]:
    return local.between(shown - timedelta(days=2), shown + timedelta(seconds=1), inc=True)


@SETTINGS
@given(zone=st.sampled_from(ODD + ZONES[::7]), anchor=anchors,
       freq=st.sampled_from(["MINUTELY", "HOURLY", "DAILY"]),
       interval=st.sampled_from([1, 15, 30, 45]),
       probes=st.lists(anchors, min_size=1, max_size=5))  # fmt: skip
def test_public_functions_agree(
    zone: str, anchor: datetime, freq: str, interval: int, probes: list[datetime]
) -> None:
    step = interval if freq == "MINUTELY" else 1
    schedule = Schedule(zone=zone, anchor=anchor, rule=format_rule(Rule(freq=freq, interval=step)))
    for probe in probes:
        instant = probe.replace(tzinfo=UTC)
        found = occurrences(schedule, instant, 6)
        assert all(o.at >= instant for o in found)
        assert all(a.at < b.at for a, b in pairwise(found))
        assert all(o.local == o.at.astimezone(load_zone(zone)) for o in found)
        for before, after in pairwise(found):
            assert next_after(schedule, before.at) == after.at


def test_weekday_names_are_rfc_order() -> None:
    assert WEEKDAYS == ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
    assert UntilKind.UTC.value == "utc"


@SETTINGS
@given(rule=rules(), zone=st.sampled_from(ODD + ZONES[::5]), anchor=anchors,
       alerts=st.sampled_from([(), (900,), (86400, 3600)]),
       nags=st.sampled_from([(0, 0), (300, 3)]),
       count=st.integers(1, 12), data=st.data())  # fmt: skip
def test_latest_rings_are_the_plain_expansions_last(
    rule: Rule,
    zone: str,
    anchor: datetime,
    alerts: tuple[int, ...],
    nags: tuple[int, int],
    count: int,
    data: st.DataObject,
) -> None:
    """A reader's look back from now (`latest_rings`) finds exactly the last rings the plain
    expansion from the anchor has up to then, alerts and nags included, however far back."""
    plain = schedule_for(rule, zone, anchor)
    if plain is None:
        return
    schedule = replace(plain, alerts=alerts, nag=nags[0], nags=nags[1])
    reach = timedelta(days=REACH[rule.freq])
    tz = load_zone(zone)
    horizon = (anchor + reach - timedelta(days=2)).replace(tzinfo=tz).astimezone(UTC)
    everything = list(rings(schedule, anchor.replace(tzinfo=tz) - timedelta(days=30),
                            strict=False, cap=anchor + reach))  # fmt: skip
    everything = [at for at in everything if at <= horizon]
    if not everything:
        return
    start = data.draw(st.sampled_from(everything[: max(1, len(everything) // 3)]))
    upto = data.draw(st.sampled_from(everything)) + timedelta(
        seconds=data.draw(st.sampled_from([0, 1, 59]))
    )
    want = [at for at in everything if start <= at <= upto][-count:][::-1]
    assert latest_rings(schedule, start, upto, count) == want
