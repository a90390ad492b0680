"""Bounds on the work of expanding a rule: CPU time, checked while dateutil walks the series.

dateutil checks a rule's filters one candidate period at a time (for MINUTELY, a minute or a
filtered-out day at a time) and only returns when a candidate matches, so a rule that matches
rarely (`FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO;BYHOUR=23;BYMINUTE=59`: once in 28 or
40 years, 23 s for 20 rings) can hold a thread for as long as it likes. Every rrule Tocsin
expands is a `BudgetedRRule`, which checks the active budget as it moves from one candidate
period to the next and raises `ExpansionBudgetExceeded` once the budget is spent.

The budget is CPU time of the thread doing the work (`time.thread_time`), not wall-clock time:
a busy machine or another thread holding the GIL does not make a cheap rule look expensive,
so whether a rule fits depends on the rule (and the machine's speed), not on the moment. Nor
is the garbage collector's time counted (`work_time`): a full collection examines every object
of the process, whichever allocation set it off.
"""

from __future__ import annotations

import gc
import threading
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from dateutil import rrule as dr

from tocsin.errors import ExpansionBudgetExceeded

# What one call of `first_due`, `next_after` or `occurrences` may spend when its caller set no
# tighter budget: the scheduler's claim path. The API checks new rules with a tighter one
# (`tocsin.api.expansion`), so a rule it accepted steps on well within this.
DEFAULT_SECONDS = 1.0
# The clock is read every this many candidate periods: reading it costs ~0.6 µs, a period
# ~2 µs (DAILY) to ~150 µs (MINUTELY with day, hour and minute filters), so a budget is
# overrun by at most ~2.5 ms.
_CHECK_EVERY = 16


@dataclass(frozen=True, slots=True)
class Budget:
    """A deadline on a clock of this thread's work, and what to say when it passes."""

    deadline: float
    seconds: float
    what: str
    clock: Callable[[], float]

    def check(self) -> None:
        if self.clock() > self.deadline:
            raise ExpansionBudgetExceeded(self.seconds, self.what)


_ACTIVE: ContextVar[Budget | None] = ContextVar("tocsin_expansion_budget", default=None)


# Thread → the CPU time the garbage collector has spent in it, and when its collection under
# way started. Plain dicts of numbers: updating them allocates nothing the collector tracks,
# so no collection starts halfway through an update and sees it. A ContextVar would not do:
# its reset() builds the context's new mapping from tracked objects, and on CPython 3.11 a
# callback reading the variable meanwhile leaves it caching the value being removed, which
# later reads use after it is freed (a crash). Thread ids are reused as threads end, so there
# are about as many entries as threads at once; only differences within a thread mean anything.
_COLLECTED: dict[int, float] = {}
_STARTED: dict[int, float] = {}


def _on_collection(
    phase: str,
    info: dict[str, int],
    clock: Callable[[], float] = time.thread_time,
    thread: Callable[[], int] = threading.get_ident,
    collected: dict[int, float] = _COLLECTED,
    started: dict[int, float] = _STARTED,
) -> None:
    # Bound as defaults: the collector may still run while the interpreter tears this module
    # down.
    now, me = clock(), thread()
    if phase == "start":
        started[me] = now
    elif me in started:
        collected[me] = collected.get(me, 0.0) + now - started.pop(me)


gc.callbacks.append(_on_collection)


def work_time() -> float:
    """This thread's CPU time, less what the garbage collector spent in it.

    A collection runs in the thread whose allocation set it off and examines every object the
    process holds: a full one took 0.11-0.18 s of thread CPU in a test process that had
    collected the suite, 0.9 s in a server holding 10,000 feed connections (`tune_collector`
    in `tocsin.cli.serve`). Charged to the expansion it interrupted, it would refuse a cheap
    rule at random, or fail a reminder on the claim path. Timing a collection costs ~3.5 µs.
    """
    return time.thread_time() - _COLLECTED.get(threading.get_ident(), 0.0)


@contextmanager
def expansion_budget(
    seconds: float,
    what: str = "finding the rule's rings",
    *,
    clock: Callable[[], float] = work_time,
) -> Iterator[Budget]:
    """Bound every expansion inside to `seconds` of this thread's work, all together.

    The work is counted on `clock`, by default `work_time`; a budget nested inside another
    counts on the outer one's clock, and the one that ends first applies (its `what` is what
    the error names). The clock is read when a budget opens and every `_CHECK_EVERY`
    candidate periods of a walk. The budget belongs to the thread that opens it: open it in
    the thread that does the work.
    """
    outer = _ACTIVE.get()
    if outer is not None:
        clock = outer.clock
    mine = Budget(clock() + seconds, seconds, what, clock)
    budget = mine if outer is None or mine.deadline < outer.deadline else outer
    token = _ACTIVE.set(budget)
    try:
        yield budget
    finally:
        _ACTIVE.reset(token)


def check_budget() -> None:
    """Raise ExpansionBudgetExceeded when the active budget is spent (none open: never)."""
    active = _ACTIVE.get()
    if active is not None:
        active.check()


def _active() -> Budget:
    active = _ACTIVE.get()
    if active is None:  # an expansion outside any public function: still bounded
        return Budget(work_time() + DEFAULT_SECONDS, DEFAULT_SECONDS, "expanding a rule", work_time)
    return active


def _charging(name: str) -> Callable[..., Any]:
    plain = getattr(dr._iterinfo, name)

    def charged(self: _CheckedPeriods, year: int, month: int, day: int) -> Any:
        self._turn()
        return plain(self, year, month, day)

    return charged


class _CheckedPeriods(dr._iterinfo):
    """dateutil's per-iteration helper, charging the budget for each candidate period.

    `rrule._iter` asks its helper for the days of every candidate period (one of the four
    `…dayset` methods, once per turn of its loop), so this sees every turn, matching or not.
    """

    def __init__(self, rule: dr.rrule) -> None:
        super().__init__(rule)
        self._budget = _active()
        self._turns = 0

    def _turn(self) -> None:
        self._turns += 1
        if self._turns % _CHECK_EVERY == 0:
            self._budget.check()

    # The four ways `_iter` gets a period's days (by FREQ), each charged a turn first.
    ydayset = _charging("ydayset")
    mdayset = _charging("mdayset")
    wdayset = _charging("wdayset")
    ddayset = _charging("ddayset")


# dateutil's own `_iter`, run with the checking helper in place of `_iterinfo`. Rebinding its
# globals leaves dateutil itself untouched (other users of it, other threads), and keeps its
# exact semantics: the loop is the same code. It reads `_iterinfo` by name, which a test pins.
_dateutil_iter: types.FunctionType = vars(dr.rrule)["_iter"]  # not in dateutil's type stubs
_budgeted_iter = types.FunctionType(
    _dateutil_iter.__code__,
    {**vars(dr), "_iterinfo": _CheckedPeriods},
    "_iter",
    _dateutil_iter.__defaults__,
    _dateutil_iter.__closure__,
)


class BudgetedRRule(dr.rrule):
    """A dateutil rrule whose iteration spends the active expansion budget."""

    _iter = _budgeted_iter
