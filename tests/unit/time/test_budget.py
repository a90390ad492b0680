"""The expansion budget: every walk of a rule stops at its budget, with one error type."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any
from unittest import mock

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
    work_time,
)

NOW = datetime(2026, 10, 21, 12, tzinfo=UTC)
# Matches on Monday 29 February at 23:59 only: once in 28 or 40 years, walked minute by minute
# (the rule: 23 s for 20 rings before the budget).
RARE = "FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO;BYHOUR=23;BYMINUTE=59"
# Matches nothing: there is no 30 February.
NEVER = "FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=30"
# A tick of the counting clock, what a check (_CHECK_EVERY candidate periods) is charged:
# ~1 ms, a power of two so that budgets add up to whole ticks exactly.
TICK = 2**-10


class Checks:
    """A budget clock that moves one TICK each time it is read, and counts the reads.

    A budget reads its clock when it opens and every _CHECK_EVERY candidate periods of a
    walk, so under this clock a budget of `seconds` stops a walk after seconds / TICK checks
    on any machine, however busy: what is bounded is the work, not the time it took.
    """

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.reads * TICK

    def most(self, seconds: float) -> int:
        """The reads of a budget of `seconds` opened at the first read, up to and including
        the check that finds it spent."""
        return int(seconds / TICK) + 2


# How dateutil's `_iter` gets the days of each candidate period (one call a period, by FREQ).
DAYSETS = ("ydayset", "mdayset", "wdayset", "ddayset")


@contextmanager
def unbudgeted_periods() -> Iterator[list[str]]:
    """The candidate periods dateutil walks outside any budget: plain `rrule`s use
    `_iterinfo` itself, whose day-set methods a `BudgetedRRule`'s helper overrides."""
    walked: list[str] = []
    counting: dict[str, Any] = {name: _counting(name, walked) for name in DAYSETS}
    with mock.patch.multiple(dr._iterinfo, **counting):
        yield walked


def _counting(name: str, walked: list[str]) -> Callable[..., object]:
    plain = getattr(dr._iterinfo, name)

    def counted(self: object, year: int, month: int, day: int) -> object:
        walked.append(name)
        return plain(self, year, month, day)

    return counted


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
def test_every_expansion_stops_at_its_budget(call: Callable[[Schedule], object]) -> None:
    # A saved row with the rare rule (as rows made before the budget may be): the claim path
    # gets the specific error, within the budget, instead of a 23 s stall.
    schedule = Schedule(zone="UTC", anchor=datetime(2026, 3, 1), rule=RARE)
    with expansion_budget(0.05), pytest.raises(ExpansionBudgetExceeded):
        call(schedule)

    checks = Checks()
    with expansion_budget(0.05, clock=checks), pytest.raises(ExpansionBudgetExceeded):
        call(schedule)
    # Stopped at the check that found the budget spent: ~50 * _CHECK_EVERY candidate periods
    # walked, not the 18 years to the first Monday 29 February.
    assert checks.reads == checks.most(0.05)


def test_next_after_has_a_default_budget_for_the_scheduler() -> None:
    # A saved rule that never rings (the API refuses it, an old or hand-written row may hold
    # it): its walk would run through the Februaries of nearly 8,000 years, so the budget is
    # what stops it on any machine.
    schedule = Schedule(zone="UTC", anchor=datetime(2026, 3, 1), rule=NEVER)
    after = datetime(2026, 3, 1, tzinfo=UTC)
    with pytest.raises(ExpansionBudgetExceeded) as caught:
        next_after(schedule, after)
    assert caught.value.seconds == DEFAULT_SECONDS

    checks = Checks()
    caller = expansion_budget(60, "the caller's", clock=checks)
    with caller, pytest.raises(ExpansionBudgetExceeded) as caught:
        next_after(schedule, after)
    assert caught.value.seconds == DEFAULT_SECONDS  # its own, tighter than the caller's
    assert checks.reads == checks.most(DEFAULT_SECONDS) + 1  # opened one read after it


def test_a_full_collection_inside_a_budget_does_not_spend_it() -> None:
    # A collection runs in whichever thread's allocation set it off and examines every object
    # of the process: a full one took 0.11-0.18 s of thread CPU in a test process holding the
    # collected suite, and would otherwise be charged to the rule it interrupted.
    heap = [{"n": [n]} for n in range(300_000)]
    with expansion_budget(DEFAULT_SECONDS):
        cpu, work = time.thread_time(), work_time()
        gc.collect()
        cpu, work = time.thread_time() - cpu, work_time() - work
    # What is left is calling the collector, not its walk over the heap.
    assert work < cpu / 100
    assert len(heap) == 300_000


def test_the_tighter_of_nested_budgets_applies_and_is_named() -> None:
    checks = Checks()
    with expansion_budget(0.05, "the batch", clock=checks) as outer:
        with expansion_budget(10, "one item") as inner:
            assert inner is outer
        with expansion_budget(0.01, "one item", clock=lambda: 0.0) as tighter:
            assert tighter.what == "one item"
            assert tighter.clock is checks  # counted on the outer budget's clock


def test_a_spent_budget_is_seen_before_any_work() -> None:
    with expansion_budget(0, clock=Checks()), pytest.raises(ExpansionBudgetExceeded):
        check_budget()  # one tick after it opened
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
    with unbudgeted_periods() as unbudgeted:
        list(islice(BudgetedRRule(dr.DAILY, dtstart=datetime(2026, 3, 1)), 3))
        assert unbudgeted == []
        list(islice(dr.rrule(dr.DAILY, dtstart=datetime(2026, 3, 1)), 3))
        assert unbudgeted  # what the random rules' test would see of a plain walk


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
@example(rule="FREQ=YEARLY;BYHOUR=3,15;BYMONTH=1,2,3,12", at=None, zone="Pacific/Apia")
@given(
    rule=hostile_rules(),
    at=st.none() | st.sampled_from(["2026-03-01T23:59", "2044-02-29T23:59", "5999-12-31T23:00"]),
    zone=st.sampled_from(["UTC", "America/New_York", "Pacific/Kiritimati", "Pacific/Apia"]),
)
def test_random_rules_stay_within_the_budget_and_fail_only_as_input(
    rule: str, at: str | None, zone: str
) -> None:
    checks = Checks()
    with unbudgeted_periods() as unbudgeted:
        try:
            with expansion_budget(0.02, clock=checks):
                schedule, due = plan_schedule(zone=zone, at=at, repeat=rule, now=NOW)
                occurrences(schedule, due, 5)
                next_after(schedule, due)
        except (InvalidInput, ExpansionBudgetExceeded):
            pass  # refused with a reason: the API names the field
    # Every other exception (OverflowError, IndexError from dateutil …) fails the test.
    # The walks stopped at the budget (nothing kept walking past its error), and every
    # candidate period was charged to it.
    assert checks.reads <= checks.most(0.02)
    assert unbudgeted == []
