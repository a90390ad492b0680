"""The retry policy: retry until the firing's deadline, with exponential backoff, full jitter
and `Retry-After`; the attempt count is only a safety cap."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tocsin.channels.base import DeliveryResult
from tocsin.domain import FiringState, Outcome

# The last retry is planned this long before the deadline — a tenth of the firing's
# freshness when that is less, but never under LAST_TRY_MIN: time for its result to be
# written (≤ 50 ms), for a pickup to take it (≤ 0.1 s after its time, more when busy) and
# for it to be sent (an attempt needs 250 ms left, `attempt.MIN_TIME_LEFT`).
LAST_TRY_MARGIN = timedelta(seconds=5)
LAST_TRY_MIN = timedelta(seconds=1)
# A long freshness (up to 7 days) stretches the backoff cap to this share of it, so that a
# firing needs at most ~70 tries over its whole freshness whatever its length (simulated:
# the most in 5,000 outages each, for freshness from 10 min to 7 days) and the attempt cap
# stays a safety net that the deadline reaches first.
LONG_CAP_SHARE = 20
# Doubling stops mattering long before this (2⁶⁴ s); beyond it the power would overflow.
MAX_DOUBLINGS = 64


@dataclass(frozen=True, kw_only=True, slots=True)
class Decision:
    """What follows one attempt: the firing's new state, and when to retry when `queued`."""

    state: FiringState
    next_attempt_at: datetime | None = None
    error: str | None = None


SENT = Decision(state=FiringState.SENT)


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """After attempt n fails retryably, wait uniform(0, min(cap, base·2ⁿ⁻¹)) seconds — or the
    peer's `Retry-After` — and try again, for as long as the firing's deadline allows (the
    cap stretches for a long freshness: `cap`).

    A drawn wait that would end past the last-try instant (`last_try`, shortly before the
    deadline) is cut short to it: a receiver that comes back late in the freshness still
    gets one try before the deadline, rather than the firing giving up minutes early. After
    the try at that instant fails, the firing is `expired`. A `Retry-After` that ends past it
    is the peer saying it will not take the firing in time: `expired` at once. A send this
    worker held back (`DeliveryResult.not_tried`: a breaker open, no time left in the hold)
    never expires the firing: its wait is cut to the last try, which the breaker lets
    through, and the deadline check before every send is what ends it.
    `max_attempts` only guards against a runaway (a peer answering `Retry-After: 0` for
    ever) and counts only sends that went out: the deadline is what ends the retries.
    """

    max_attempts: int
    base_seconds: float = 1.0
    cap_seconds: float = 300.0
    last_try_margin: timedelta = LAST_TRY_MARGIN
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def cap(self, window: timedelta) -> float:
        """The longest wait for a firing fresh for `window`: `cap_seconds`, or a
        `LONG_CAP_SHARE`th of a freshness long enough for that to be more."""
        return max(self.cap_seconds, window.total_seconds() / LONG_CAP_SHARE)

    def ceiling(self, attempt: int, window: timedelta) -> float:
        """The longest wait after attempt number `attempt` (1-based)."""
        doublings = min(attempt - 1, MAX_DOUBLINGS)
        return min(self.cap(window), self.base_seconds * 2.0**doublings)

    def backoff(self, attempt: int, window: timedelta) -> float:
        """A wait after attempt `attempt`, drawn with full jitter."""
        return self.rng.uniform(0.0, self.ceiling(attempt, window))

    def last_try(self, *, due: datetime, deadline: datetime) -> datetime:
        """The latest instant a retry is planned for: shortly before the deadline."""
        margin = max((deadline - due) / 10, LAST_TRY_MIN)
        return deadline - min(self.last_try_margin, margin)

    def decide(
        self,
        result: DeliveryResult,
        *,
        attempt: int,
        now: datetime,
        due: datetime,
        deadline: datetime,
    ) -> Decision:
        """The firing's next state after attempt number `attempt` came to `result`."""
        if result.outcome is Outcome.SENT:
            return SENT
        if result.outcome is Outcome.FAILED:
            return Decision(state=FiringState.FAILED, error=result.error)
        if result.held:
            # Settled by the destination (a page that received it) or expired by pickup at
            # the deadline: no retry of ours could do more.
            return Decision(state=FiringState.QUEUED, next_attempt_at=deadline, error=result.error)
        last = self.last_try(due=due, deadline=deadline)
        if result.not_tried:  # nothing went out: no runaway to guard against
            when = min(now + timedelta(seconds=result.retry_after or 0.0), max(last, now))
            return Decision(state=FiringState.QUEUED, next_attempt_at=when, error=result.error)
        if attempt >= self.max_attempts:
            error = f"gave up after {attempt} attempts (the most allowed): {result.error}"
            return Decision(state=FiringState.FAILED, error=error)
        if result.retry_after is not None:
            return _after_retry_after(result.retry_after, result, attempt, now, last)
        if now >= last:
            error = f"expired: the last try before its deadline failed ({attempt} attempts)"
            return Decision(state=FiringState.EXPIRED, error=f"{error}: {result.error}")
        wait = self.backoff(attempt, deadline - due)
        when = min(now + timedelta(seconds=wait), last)
        return Decision(state=FiringState.QUEUED, next_attempt_at=when, error=result.error)


def _after_retry_after(
    wait: float, result: DeliveryResult, attempt: int, now: datetime, last: datetime
) -> Decision:
    """Honour the peer's `Retry-After`: retry then, or expire now when that is too late."""
    when = now + timedelta(seconds=wait)
    if when > last:
        error = (
            f"expired: the peer asked to wait {wait:g} s (Retry-After), "
            f"past its deadline ({attempt} attempts): {result.error}"
        )
        return Decision(state=FiringState.EXPIRED, error=error)
    return Decision(state=FiringState.QUEUED, next_attempt_at=when, error=result.error)
