"""Schedule work for requests: how much CPU a request may spend expanding rules, and where.

Checking a schedule walks its rule, and a rule that rings rarely can take seconds (see
`tocsin.time.budget`). The event loop serves every request and, in `tocsin serve`, every
ring, so it never runs more than a few milliseconds of that work: each schedule is tried on
the loop under INLINE_SECONDS first — nearly every schedule fits, and a thread hop costs about
a tenth of a create — and one that does not fit is worked out again in a small thread pool
under the request's full budget. A batch goes to the pool at once. Past its budget a rule is
refused with a 422 naming the field.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import TypeVar

from tocsin.api.problems import FieldError, Problem
from tocsin.errors import ExpansionBudgetExceeded
from tocsin.time.budget import expansion_budget

T = TypeVar("T")

# CPU time one request (or one batch item) may spend on its schedule: ~100 times what a
# schedule usually takes (a create checks one in well under a millisecond).
REQUEST_SECONDS = 0.25
# CPU time a whole batch may spend; items left when it is spent are refused unchecked.
BATCH_SECONDS = 5.0
INLINE_SECONDS = 0.005
# Threads for schedule work. They share the GIL with the loop, which still gets its turn
# every few milliseconds (sys.getswitchinterval); more threads would not add CPU.
POOL_SIZE = 2

# What a refusal suggests, by the field it names.
_HINTS = {
    "repeat": "the rule matches too rarely for how finely it repeats (e.g. FREQ=MINUTELY with "
    "day filters that match once in years); use a coarser FREQ",
    "count": "ask for fewer rings",
}


@cache  # one pool per process, made on first use
def _executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=POOL_SIZE, thread_name_prefix="tocsin-schedule")


async def off_loop(work: Callable[[], T], *, field: str, seconds: float = REQUEST_SECONDS) -> T:
    """`work()`, on the loop if it fits INLINE_SECONDS of expansion, else in the pool within
    `seconds`. Past that, a 422 naming `field`."""
    try:
        with expansion_budget(INLINE_SECONDS):
            return work()
    except ExpansionBudgetExceeded:
        pass  # a costly rule: start again off the loop, with the whole budget
    return await in_pool(work, field=field, seconds=seconds)


async def in_pool(
    work: Callable[[], T], *, field: str, seconds: float, what: str = "finding the rule's rings"
) -> T:
    """`work()` in the pool within `seconds` of expansion; past that, a 422 naming `field`
    (`what` says what ran out of time)."""
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(_executor(), _within, work, seconds, what)
    except ExpansionBudgetExceeded as error:
        raise too_costly(field, error) from None


def _within(work: Callable[[], T], seconds: float, what: str) -> T:
    with expansion_budget(seconds, what):
        return work()


def too_costly(field: str, error: ExpansionBudgetExceeded) -> Problem:
    """The 422 for a schedule that needs more work than its budget."""
    message = f"{error.what} needs more than {error.seconds:g} s of CPU time, the limit"
    hint = _HINTS.get(field.rsplit(".", 1)[-1])
    if hint:
        message += f": {hint}"
    return Problem(422, "schedule-too-costly", message, errors=[FieldError(field, message)])


def not_checked(field: str, error: ExpansionBudgetExceeded) -> Problem:
    """The 422 for a batch item left unchecked because the batch spent its budget."""
    message = (
        f"not checked: {error.what} took all its {error.seconds:g} s of CPU time before "
        "this item; send it again in another batch"
    )
    return Problem(422, "schedule-too-costly", message, errors=[FieldError(field, message)])
