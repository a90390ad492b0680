"""The expansion budget: every walk of a rule stops within its CPU budget, with one error type."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from itertools import islice

import pytest
from dateutil import rrule as dr
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tocsin.domain import Schedule
from tocsin.errors import ExpansionBudgetExceeded, InvalidInput
from tocsin.time import first_due, next_after, occurrences, plan_schedule
from tocsin.time.budget import (
    _CHECK_EVERY,
    DEFAULT_SECONDS,
    BudgetedRRule,
    _dateutil_iter,
    check_budget,
    expansion_budget,
)

NOW = datetime(2026, 10, 21, 12, tzinfo=UTC)
# Matches on Monday 29 February at 23:59 only: once in 28 or 40 years, walked minute by minute
# (the rule: 23 s for 20 rings before the budget).
RARE = "FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO;BYHOUR=23;BYMINUTE=59"
# Matches nothing: there is no 30 February.
NEVER = "FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=30"
# What a budget may be overrun by: up to _CHECK_EVERY periods of ~150 µs, building rrules,
# mapping to UTC. Generous, as CPU time still varies with caches and the collector.
OVERRUN = 0.05


def cpu_seconds_of(call: object) -> float:
    assert callable(call)
    started = time.thread_time()
    with suppress(InvalidInput, ExpansionBudgetExceeded):
        call()
    return time.thread_time() - started


def test_a_rare_rule_is_refused_within_the_budget() -> None:
    with expansion_budget(0.1), pytest.raises(ExpansionBudgetExceeded) as caught:
        plan_schedule(zone="UTC", at=None, repeat=RARE, now=NOW)

    assert caught.value.seconds == 0.1
    assert "0.1 s of CPU time" in str(caught.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: first_due(s, NOW),
        lambda s: next_after(s, NOW),
        lambda s: occurrences(s, NOW, 20),
    ],
    ids=["first_due", "next_after", "occurrences"],
)
def test_every_expansion_stops_at_its_budget(call: object) -> None:
    # A saved row with the rare rule (as rows made before the budget may be): the claim path
    # gets the specific error, within the budget, instead of a 23 s stall.
    schedule = Schedule(zone="UTC", anchor=datetime(2026, 3, 1), rule=RARE)
    assert callable(call)

    with expansion_budget(0.05), pytest.raises(ExpansionBudgetExceeded):
        call(schedule)
    assert cpu_seconds_of(lambda: _within(0.05, lambda: call(schedule))) < 0.05 + OVERRUN


def _within(seconds: float, call: object) -> None:
    assert callable(call)
    with expansion_budget(seconds):
        call()


def test_next_after_has_a_default_budget_for_the_scheduler() -> None:
    # A saved rule that never rings (the API refuses it, an old or hand-written row may hold
    # it): its walk would run through the Februaries of nearly 8,000 years, so the budget is
    # what stops it on any machine. RARE's 28-year walk from 2044 to 2072 takes ~0.94 s on
    # a fast machine: too close to the budget to show it.
    schedule = Schedule(zone="UTC", anchor=datetime(2026, 3, 1), rule=NEVER)
    after = datetime(2026, 3, 1, tzinfo=UTC)

    spent = cpu_seconds_of(lambda: next_after(schedule, after))

    with pytest.raises(ExpansionBudgetExceeded):
        next_after(schedule, after)
    assert DEFAULT_SECONDS <= spent < DEFAULT_SECONDS + OVERRUN


def test_the_tighter_of_nested_budgets_applies_and_is_named() -> None:
    with expansion_budget(0.05, "the batch") as outer:
        with expansion_budget(10, "one item") as inner:
            assert inner is outer
        with expansion_budget(0.01, "one item") as tighter:
            assert tighter.what == "one item"


def test_a_spent_budget_is_seen_before_any_work() -> None:
    with expansion_budget(0) as budget:
        while time.thread_time() <= budget.deadline:  # spend it
            pass
        with pytest.raises(ExpansionBudgetExceeded):
            check_budget()
    check_budget()  # none open: nothing to spend


def test_a_budget_that_is_not_used_up_changes_nothing() -> None:
    with expansion_budget(5):
        planned = plan_schedule(zone="America/New_York", at=None, repeat="weekdays 9:00", now=NOW)

    assert planned == plan_schedule(
        zone="America/New_York", at=None, repeat="weekdays 9:00", now=NOW
    )


def test_budgeted_rrule_runs_dateutils_own_loop() -> None:
    # The budget rebinds `_iterinfo` in a copy of dateutil's `_iter`: a dateutil release that
    # renames it must fail here, not silently stop counting.
    assert "_iterinfo" in _dateutil_iter.__code__.co_names
    assert _CHECK_EVERY <= 64


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    freq=st.sampled_from([dr.YEARLY, dr.MONTHLY, dr.WEEKLY, dr.DAILY, dr.HOURLY, dr.MINUTELY]),
    interval=st.integers(1, 40),
    bymonth=st.none() | st.sets(st.integers(1, 12), min_size=1, max_size=3),
    bymonthday=st.none() | st.sets(st.integers(1, 28), min_size=1, max_size=3),
    byweekday=st.none() | st.sets(st.integers(0, 6), min_size=1, max_size=3),
    byhour=st.none() | st.sets(st.integers(0, 23), min_size=1, max_size=3),
    start=st.datetimes(datetime(1990, 1, 1), datetime(2040, 1, 1)),
)
def test_budgeted_rrule_yields_what_dateutil_yields(
    freq: int,
    interval: int,
    bymonth: set[int] | None,
    bymonthday: set[int] | None,
    byweekday: set[int] | None,
    byhour: set[int] | None,
    start: datetime,
) -> None:
    options = {
        "dtstart": start.replace(microsecond=0),
        "interval": interval,
        "bymonth": bymonth,
        "bymonthday": bymonthday,
        "byweekday": byweekday,
        "byhour": byhour,
        "until": start + timedelta(days=800),
    }
    with expansion_budget(60):
        budgeted = _first_50(lambda: BudgetedRRule(freq, **options))  # type: ignore[arg-type]
    assert budgeted == _first_50(lambda: dr.rrule(freq, **options))  # type: ignore[arg-type]


def _first_50(make: Callable[[], dr.rrule]) -> list[datetime] | str:
    try:
        return list(islice(make(), 50))
    except ValueError as error:  # dateutil refuses some combinations, either way alike
        return str(error)


PART_VALUES = {
    "FREQ": st.sampled_from(["YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY"]),
    "INTERVAL": st.sampled_from(["1", "2", "7", "13", "1440", "10000"]),
    "COUNT": st.sampled_from(["1", "3", "10000"]),
    "UNTIL": st.sampled_from(["20270101", "59991231T235959Z", "60000101", "99991231T235959Z"]),
    "BYMONTH": st.sampled_from(["2", "4,6", "1,2,3,12"]),
    "BYWEEKNO": st.sampled_from(["1", "53", "-1"]),
    "BYYEARDAY": st.sampled_from(["60", "366", "-1"]),
    "BYMONTHDAY": st.sampled_from(["29", "31", "-1", "1,15", "30"]),
    "BYDAY": st.sampled_from(["MO", "53MO", "-53FR", "5TU", "2WE,-1SU", "SA,SU"]),
    "BYHOUR": st.sampled_from(["0", "23", "3,15"]),
    "BYMINUTE": st.sampled_from(["0", "59", "7,31"]),
    "BYSECOND": st.sampled_from(["0", "30"]),
    "BYSETPOS": st.sampled_from(["1", "-1", "366", "3"]),
    "WKST": st.sampled_from(["MO", "SU"]),
}


@st.composite
def hostile_rules(draw: st.DrawFn) -> str:
    """RRULE texts built from parts that have stalled or broken the expansion before."""
    names = draw(st.sets(st.sampled_from(sorted(PART_VALUES.keys() - {"FREQ"})), max_size=5))
    parts = [f"FREQ={draw(PART_VALUES['FREQ'])}"]
    parts += [f"{name}={draw(PART_VALUES[name])}" for name in sorted(names)]
    return ";".join(parts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(rule="FREQ=YEARLY;BYMONTH=2;BYDAY=53MO", at=None, zone="UTC")
@example(rule="FREQ=DAILY;UNTIL=99991231T235959Z", at=None, zone="Pacific/Kiritimati")
@example(rule="FREQ=MINUTELY", at="5999-12-31T23:00", zone="Pacific/Apia")
@example(rule=RARE, at="2044-02-29T23:59", zone="UTC")
@given(
    rule=hostile_rules(),
    at=st.none() | st.sampled_from(["2026-03-01T23:59", "2044-02-29T23:59", "5999-12-31T23:00"]),
    zone=st.sampled_from(["UTC", "America/New_York", "Pacific/Kiritimati", "Pacific/Apia"]),
)
def test_random_rules_stay_within_the_budget_and_fail_only_as_input(
    rule: str, at: str | None, zone: str
) -> None:
    budget = 0.02
    started = time.thread_time()
    try:
        with expansion_budget(budget):
            schedule, due = plan_schedule(zone=zone, at=at, repeat=rule, now=NOW)
            occurrences(schedule, due, 5)
            next_after(schedule, due)
    except (InvalidInput, ExpansionBudgetExceeded):
        pass  # refused with a reason: the API names the field
    # Every other exception (OverflowError, IndexError from dateutil …) fails the test.
    assert time.thread_time() - started < budget + OVERRUN
