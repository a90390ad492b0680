"""The retry policy: exponential backoff with full jitter, `Retry-After`, attempts, deadline."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tocsin.channels.base import DeliveryResult
from tocsin.domain import FiringState, Outcome


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
    peer's `Retry-After` — unless n is the last attempt (`failed`) or the retry would come
    after the deadline (`expired`: a stale ring is worse than none)."""

    max_attempts: int
    base_seconds: float = 1.0
    cap_seconds: float = 300.0
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def ceiling(self, attempt: int) -> float:
        """The longest wait after attempt number `attempt` (1-based)."""
        return min(self.cap_seconds, self.base_seconds * 2.0 ** (attempt - 1))

    def backoff(self, attempt: int) -> float:
        """A wait after attempt `attempt`, drawn with full jitter."""
        return self.rng.uniform(0.0, self.ceiling(attempt))

    def decide(
        self, result: DeliveryResult, *, attempt: int, now: datetime, deadline: datetime
    ) -> Decision:
        """The firing's next state after attempt number `attempt` came to `result`."""
        if result.outcome is Outcome.SENT:
            return SENT
        if result.outcome is Outcome.FAILED:
            return Decision(state=FiringState.FAILED, error=result.error)
        if attempt >= self.max_attempts:
            error = f"gave up after {attempt} attempts: {result.error}"
            return Decision(state=FiringState.FAILED, error=error)
        wait = result.retry_after if result.retry_after is not None else self.backoff(attempt)
        when = now + timedelta(seconds=wait)
        if when >= deadline:
            error = f"{result.error}; the next try would be after the deadline"
            return Decision(state=FiringState.EXPIRED, error=error)
        return Decision(state=FiringState.QUEUED, next_attempt_at=when, error=result.error)
