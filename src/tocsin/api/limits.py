"""Rate limits: per API key, per owner token, and per client address for failed auth.

Token buckets kept in the process: each API process limits on its own, so N processes
behind a load balancer allow up to N times a limit (a shared limit would cost a round trip to
the database per request). A caller over its limit gets a 429 problem with `Retry-After`;
an address that keeps sending bad keys is refused before its keys are even looked up.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass

from tocsin.api.problems import Problem

MAX_TRACKED = 100_000  # callers remembered per limit; the least recently seen go first


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class TokenBuckets:
    """`rate` requests a second on average per caller, up to `burst` at once. A rate of 0
    turns the limit off."""

    def __init__(self, rate: float, burst: float, *, what: str) -> None:
        self.rate = rate
        self.burst = max(burst, 1.0)
        self.what = what
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def take(self, caller: str, now: float | None = None) -> float:
        """Spend one token of `caller`'s; return 0 when it had one, else the seconds until it
        will (the request is then refused and spends nothing)."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        bucket = self._buckets.pop(caller, None) or _Bucket(self.burst, now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.rate)
        bucket.at = now
        self._buckets[caller] = bucket
        if len(self._buckets) > MAX_TRACKED:
            self._buckets.popitem(last=False)
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return (1.0 - bucket.tokens) / self.rate

    def peek(self, caller: str, now: float | None = None) -> float:
        """The seconds until `caller` has a token again (0: it has one), spending nothing."""
        bucket = self._buckets.get(caller)
        if self.rate <= 0 or bucket is None:
            return 0.0
        now = time.monotonic() if now is None else now
        tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.rate)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate


@dataclass(frozen=True, kw_only=True, slots=True)
class RateLimits:
    """The three limits of one API process."""

    keys: TokenBuckets  # per API key (app)
    owners: TokenBuckets  # per owner token
    failures: TokenBuckets  # per client address, failed authentications only

    @classmethod
    def of(
        cls, *, key_per_second: float, owner_per_second: float, failures_per_minute: float
    ) -> RateLimits:
        return cls(
            keys=TokenBuckets(key_per_second, 2 * key_per_second, what="this API key"),
            owners=TokenBuckets(owner_per_second, 2 * owner_per_second, what="this owner token"),
            failures=TokenBuckets(
                failures_per_minute / 60, failures_per_minute / 2, what="failed authentications"
            ),
        )


def too_many(wait: float, what: str) -> Problem:
    seconds = max(1, math.ceil(wait))
    return Problem(
        429,
        "rate-limited",
        f"too many requests for {what}: try again in {seconds} s",
        headers={"Retry-After": str(seconds)},
    )
